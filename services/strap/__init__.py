"""STRaP: scenario-based test reduction and prioritization of driving recordings.

Pure core (no grpc, no carla): readers → align → vectorize → reduce →
prioritize → evaluate.  A servicer calls :mod:`services.strap.pipeline`.
"""

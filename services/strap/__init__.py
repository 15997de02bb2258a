"""STRaP: scenario-based test reduction and prioritization of driving recordings.

Pure core (no grpc, no carla): readers → align → vectorize → reduce →
prioritize → evaluate.  The servicer calls :class:`services.strap.core.StrapCore`
(the store and the pipeline of :mod:`services.strap.pipeline`).
"""

"""Pure domain core: spec types, catalogue, analytic verifier, seeded RNG, typed errors.

Nothing in this package imports grpc or carla; every algorithm is testable in-process.
"""

"""LAST-V2X: language-driven, causally verified testing of V2X safety applications.

``lastv2x.core`` is the pure domain core (no grpc, no carla); ``lastv2x.rpc`` holds the
generated stubs and the service runtime; ``lastv2x.cli`` is the user's command.
"""

__version__ = "0.1.0"

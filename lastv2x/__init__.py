"""LAST-V2X: language-driven, causally verified testing of V2X safety applications.

The shared package every service builds on: ``lastv2x.core`` is the pure domain core
(no grpc, no carla), ``lastv2x.v1`` the generated stubs, ``lastv2x.rpc`` the service
runtime. The user's command and the local stack live in ``lastv2x_app``.
"""

__version__ = "0.1.0"

"""Generated protobuf and gRPC stubs of ``protos/lastv2x/v1`` (regenerate with ``make protos``).

Generated into the product package so the proto package ``lastv2x.v1`` is the Python
package ``lastv2x.v1``; never edit these files by hand (CI fails when they drift).
"""

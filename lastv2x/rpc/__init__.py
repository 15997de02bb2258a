"""RPC runtime shared by every service: server factory, error mapping, conversions, clients.

Generated stubs live in ``lastv2x.v1`` (one place, built by ``make protos``).
"""

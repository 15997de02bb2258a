"""Watching runs: ``lastv2x execute --live`` (a Foxglove WebSocket server on loopback)."""

"""Run the simulator service: `python -m services.simulator` (config from LASTV2X_* variables)."""

from lastv2x.rpc.services import main

main("simulator")

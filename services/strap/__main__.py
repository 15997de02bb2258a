"""Run the strap service: `python -m services.strap` (config from LASTV2X_* variables)."""

from lastv2x.rpc.services import main

main("strap")

"""Run the grounding service: `python -m services.grounding` (config from LASTV2X_* variables)."""

from lastv2x.rpc.services import main

main("grounding")

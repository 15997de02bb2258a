"""Run the llm service: `python -m services.llm` (config from LASTV2X_* variables)."""

from lastv2x.rpc.services import main

main("llm")

"""Run the search service: `python -m services.search` (config from LASTV2X_* variables)."""

from lastv2x.rpc.services import main

main("search")

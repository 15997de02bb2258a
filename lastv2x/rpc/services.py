"""The five services: name -> how to register it and its default local port."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from lastv2x.rpc.server import Register


@dataclass(frozen=True)
class ServiceEntry:
    name: str
    module: str  # module with register(server) -> list[str]
    default_port: int  # local stack port on loopback

    def register(self) -> Register:
        return importlib.import_module(self.module).register  # type: ignore[no-any-return]


SERVICES: dict[str, ServiceEntry] = {e.name: e for e in (
    ServiceEntry("llm", "services.llm.servicer", 50051),
    ServiceEntry("grounding", "services.grounding.servicer", 50052),
    ServiceEntry("simulator", "services.simulator.servicer", 50053),
    ServiceEntry("search", "services.search.servicer", 50054),
    ServiceEntry("strap", "services.strap.servicer", 50055),
)}


def main(name: str) -> None:
    """Entry point of one service process: config from the environment, then serve."""
    from lastv2x.rpc.server import ServerConfig, serve

    entry = SERVICES[name]
    serve(ServerConfig.from_env(name, default_port=entry.default_port), entry.register())

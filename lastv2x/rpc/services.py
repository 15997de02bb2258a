"""The five services: name -> how to register it, its settings type and its default local port.

A service's settings are one frozen dataclass with ``from_env(env=None)`` (its
``LASTV2X_<SERVICE>_*`` variables), read once in ``main`` and handed to the servicer
module's ``register(server, settings)``; the runtime's own ``ServerConfig`` is read beside it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lastv2x.rpc.server import Register


@dataclass(frozen=True)
class ServiceEntry:
    name: str
    module: str  # module with register(server[, settings]) -> list[str] | Registered (lastv2x.rpc.server)
    default_port: int  # local stack port on loopback
    settings: str | None = None  # "module:Class" of the settings dataclass; None: register(server) alone

    def settings_type(self) -> Any:
        """The settings dataclass (None when the service has none)."""
        if self.settings is None:
            return None
        module, _, name = self.settings.partition(":")
        return getattr(importlib.import_module(module), name)

    def settings_from_env(self, env: Mapping[str, str] | None = None) -> Any:
        kind = self.settings_type()
        return None if kind is None else kind.from_env(env)

    def register(self, settings: Any = None) -> Register:
        """``register`` bound to ``settings`` (None: the settings type's defaults, for tests)."""
        add = importlib.import_module(self.module).register
        if self.settings is None:
            return add  # type: ignore[no-any-return]
        return lambda server: add(server, settings)  # type: ignore[no-any-return]


SERVICES: dict[str, ServiceEntry] = {e.name: e for e in (
    ServiceEntry("llm", "services.llm.servicer", 50051, "services.llm.config:LlmConfig"),
    ServiceEntry("grounding", "services.grounding.servicer", 50052, "services.grounding.core:GroundingConfig"),
    ServiceEntry("simulator", "services.simulator.servicer", 50053, "services.simulator.execute:SimulatorLimits"),
    ServiceEntry("search", "services.search.servicer", 50054, "services.search.settings:SearchSettings"),
    ServiceEntry("strap", "services.strap.servicer", 50055, "services.strap.store:StrapConfig"),
)}


def main(name: str) -> None:
    """Entry point of one service process: every setting read from the environment here, once."""
    from lastv2x.rpc.security import ClientSecurity, configure_clients
    from lastv2x.rpc.server import ServerConfig, serve

    entry = SERVICES[name]
    config = ServerConfig.from_env(name, default_port=entry.default_port)
    configure_clients(ClientSecurity.from_config(config))  # its calls to peers use the same TLS and token
    serve(config, entry.register(entry.settings_from_env()))

"""The six safety applications behind one registry (duplicates rejected).

``APPS[Application.RLVW].decide(info, ego, ctx, previous) -> Decision``; see
:mod:`services.simulator.apps.base` for the types, :mod:`.signal` (RLVW, GLOSA) and
:mod:`.conflict` (FCW, EEBL, IMA, LTA) for the rules and their fallbacks.
"""

from __future__ import annotations

from dataclasses import dataclass

from lastv2x.core.catalogue import APPLICATIONS, AppKind, Application, Registry
from services.simulator.apps import conflict, signal
from services.simulator.apps.base import Action, AppContext, DecideFn, Decision, EgoState


@dataclass(frozen=True)
class AppEntry:
    name: Application
    decide: DecideFn

    @property
    def kind(self) -> AppKind:
        return APPLICATIONS[self.name].kind

    @property
    def freshness_budget_s(self) -> float:
        return APPLICATIONS[self.name].freshness_budget_s


APPS: Registry[Application, AppEntry] = Registry("safety application")


def register(name: Application, decide: DecideFn) -> AppEntry:
    """Add an application; a second registration under the same name raises ValueError."""
    return APPS.register(name, AppEntry(name, decide))


register(Application.RLVW, signal.rlvw)
register(Application.GLOSA, signal.glosa)
register(Application.FCW, conflict.fcw)
register(Application.EEBL, conflict.eebl)
register(Application.IMA, conflict.ima)
register(Application.LTA, conflict.lta)

__all__ = ["APPS", "Action", "AppContext", "AppEntry", "Decision", "EgoState", "register"]

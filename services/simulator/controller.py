"""The driver between an application and the vehicle (issue 37 item 1: warnings act through the driver).

:class:`EgoController` turns each decision of an application (the ego's, or an agent's that runs one) into the
commands the traffic step takes: stop at the bar, a target speed, a braking demand. A warning (STOP, BRAKE,
YIELD) waits the driver's alerted reaction; ADVISE acts at once; anything else is :data:`NOMINAL`, the
driver's own car-following (``services.simulator.traffic``)."""

from __future__ import annotations

import math

from lastv2x.core.catalogue import REACTION_TIME_S
from services.simulator.apps import Action, Decision


class EgoController:
    """Maps a decision to a driver's commands (issue 37 item 1: warnings act through the driver). A STOP
    (RLVW), BRAKE (FCW, EEBL) or YIELD (IMA, LTA) is a warning: the driver acts on it once it has stood
    ``reaction_s`` (the vehicle's ``alerted_reaction_s``, by default the catalogue's REACTION_TIME_S, which
    the decision epoch assumes), and from then on while it stands; 0 = the application acts directly.
    ADVISE sets the speed target at once."""

    __slots__ = ("acted", "reaction_s", "warned_since", "warning")

    def __init__(self, reaction_s: float | None = None) -> None:
        self.reaction_s = REACTION_TIME_S if reaction_s is None else reaction_s
        self.warning: Action | None = None  # the warning standing, and since when
        self.warned_since = math.nan
        self.acted = True  # the driver acts on the standing warning (or none stands)

    @property
    def waiting(self) -> bool:
        """A warning stands that the driver has not acted on yet: the command changes with time alone."""
        return not self.acted

    def command(self, dec: Decision, t_s: float) -> tuple[bool, float, float]:
        action = dec.action
        if action not in WARNINGS:
            self.warning, self.acted = None, True
            if action is Action.ADVISE and dec.target_speed_mps is not None:
                return False, dec.target_speed_mps, 0.0
            return NOMINAL
        if action is not self.warning:
            self.warning, self.warned_since = action, dec.t_s
        self.acted = t_s >= self.warned_since + self.reaction_s - 1e-9
        if not self.acted:
            return NOMINAL  # the driver has not reacted yet
        if action is Action.BRAKE:
            return False, math.nan, dec.brake_mps2
        return True, math.nan, 0.0  # STOP / YIELD: hold at the bar


WARNINGS = frozenset((Action.STOP, Action.BRAKE, Action.YIELD))
NOMINAL = (False, math.nan, 0.0)  # (stop at the bar, target speed, braking): the nominal controller


__all__ = ["NOMINAL", "WARNINGS", "EgoController"]

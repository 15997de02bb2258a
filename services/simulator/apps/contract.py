"""The application-under-test contract, as paired execution calls it (no grpc here).

Teams test **their** V2X application, build after build; our six applications are the
reference implementations of the same interface. An :class:`ApplicationUnderTest` is driven
in sessions, one per rollout (a paired run opens two on the same object, so both egos talk
to the same build):

* ``open([(session_id, AppContext), ...])`` — the ego's static knowledge per rollout;
* ``step(k, t_s, [StepRow(session_id, info, ego), ...])`` once per simulation step with
  *every* running row of the batch, answering one :class:`Decision` or :class:`AppFault`
  per row, in order (a batch stays batched when the app is remote);
* ``close([session_id, ...])`` at the end (always, also after an error).

What the app sees is what it would see on a vehicle: its own kinematic state
(:class:`~services.simulator.apps.base.EgoState`) and the V2X stack's reconstruction
(:class:`~services.simulator.info.EgoInformation`: signal beliefs, neighbour tracks, EEBL
events, each with its age; the MAP association). An app whose ``input_mode`` is
:data:`INPUT_RAW` (raw-message mode) gets instead the messages themselves as they arrived
(``StepRow.messages``: CAM / DENM in ETSI UPER, SPaT / MAP in our encoding, with arrival times;
:mod:`services.simulator.v2x.wire`) and an empty belief. Its previous decision is its own state to
keep; the reference apps keep it per session.

A row whose step raises, times out, answers an :class:`AppFault` or a decision outside the
contract (:func:`decision_problem`: unknown action, non-finite or negative speed, ADVISE
without a speed) ends that rollout as an **application error**: the paired outcome says so
(``PairedOutcome.app_error``, naming the app, the rollout and the step) and is neither a
pass nor an admitted failure.

Plugging in (``services.simulator.apps.plugin.resolve_app``): ``"reference"`` (or empty),
``grpc://host:port`` (``services.simulator.apps.remote``, the ``lastv2x.v1.
ApplicationUnderTestService`` contract, any language) or the name of an entry point in the
``lastv2x.apps`` group (a factory returning an :class:`ApplicationUnderTest`, in-process).
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from lastv2x.core.catalogue import Application
from services.simulator.apps import APPS
from services.simulator.apps.base import (
    Action,
    AppContext,
    DecideFn,
    Decision,
    EgoState,
    future_stamped,
)
from services.simulator.info import EgoInformation
from services.simulator.v2x.wire import RawMessage

REFERENCE_TARGET = "reference"  # how the reference build is plugged in (``plugin.resolve_app``)
FRESHNESS_OPTION = "freshness"  # its plausibility option: "reference:freshness=0.3" (s)
APPEARANCE_OPTION = "appearance"  # its other plausibility option: "reference:appearance=60" (m)
# the run's first second: senders first heard in it are the scene as it starts, not newcomers
APPEARANCE_GRACE_S = 1.0
CONTRACT_VERSION = "1"  # lastv2x.v1.ApplicationUnderTestService; Describe must answer the same
MAX_BRAKE_MPS2 = 15.0  # a BRAKE beyond this deceleration is outside the contract (1.5 g)
INPUT_BELIEF = "belief"  # StepRow.info: the V2X stack's reconstruction (the default)
INPUT_RAW = "raw"  # StepRow.messages: the messages as they arrived (raw-message mode)


def input_mode(app: object) -> str:
    """What ``app`` asks to be given each step: its ``input_mode`` attribute, else :data:`INPUT_BELIEF`."""
    return INPUT_RAW if getattr(app, "input_mode", INPUT_BELIEF) == INPUT_RAW else INPUT_BELIEF


@dataclass(frozen=True)
class AppBuild:
    """Which build of which application ran: recorded with outcomes and witnesses."""

    name: str
    version: str = ""
    digest: str = ""  # e.g. "sha256:...", as the build's owner computes it
    target: str = ""  # how it was plugged in: "reference", "grpc://host:port", an entry-point name

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "digest": self.digest, "target": self.target}

    def label(self) -> str:
        return f"{self.name} {self.version}".strip() + (f" ({self.target})" if self.target else "")


@dataclass(frozen=True, slots=True)
class StepRow:
    """One running rollout at one step: its session and what its ego sees."""

    session_id: str
    info: EgoInformation  # empty in raw-message mode
    ego: EgoState
    messages: tuple[RawMessage, ...] = ()  # raw-message mode: arrivals since the previous step


@dataclass(frozen=True, slots=True)
class AppFault:
    """The app failed on one row (its own error text, a timeout, a transport error)."""

    message: str


@runtime_checkable
class ApplicationUnderTest(Protocol):
    """A V2X application driven in sessions (see the module docstring)."""

    @property
    def build(self) -> AppBuild: ...

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None: ...

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> Sequence[Decision | AppFault]: ...

    def close(self, session_ids: Sequence[str]) -> None: ...


MAX_APP_TEXT_CHARS = 1024  # of a reason, error or build name an application hands back, as outcomes carry it
TRUNCATED = "…(truncated)"


def bounded_text(text: str, max_chars: int = MAX_APP_TEXT_CHARS) -> str:
    """``text`` as an outcome carries it: at most ``max_chars`` of it, then ``…(truncated)`` when cut
    (an application's 3 MB reason per decision would otherwise make every reply too big to send)."""
    return text if len(text) <= max_chars else text[:max_chars] + TRUNCATED


def decision_problem(dec: Any) -> str | None:
    """Why ``dec`` is outside the contract, or None when it is a valid decision."""
    if not isinstance(dec, Decision):
        return f"answered {type(dec).__name__}, not a decision"
    if not isinstance(dec.action, Action):
        return f"unknown action {dec.action!r}"
    v = dec.target_speed_mps
    if v is not None and not (isinstance(v, int | float) and math.isfinite(v) and v >= 0.0):
        return f"target_speed_mps {v!r} is not a finite speed >= 0"
    if dec.action is Action.ADVISE and v is None:
        return "ADVISE without target_speed_mps"
    b = dec.brake_mps2
    if not (isinstance(b, int | float) and math.isfinite(b) and 0.0 <= b <= MAX_BRAKE_MPS2):
        return f"brake_mps2 {b!r} is outside [0, {MAX_BRAKE_MPS2:g}]"
    if dec.aoi_s is not None and not (isinstance(dec.aoi_s, int | float) and math.isfinite(dec.aoi_s)):
        return f"aoi_s {dec.aoi_s!r} is not finite"
    if not isinstance(dec.reason, str):
        return "reason is not text"
    return None


def _reference_digest() -> str:
    h = hashlib.sha256()
    here = Path(__file__).resolve().parent
    for name in ("base.py", "signal.py", "conflict.py"):
        h.update((here / name).read_bytes())
    return "sha256:" + h.hexdigest()


class DecideFnApp:
    """Pure ``decide(info, ego, ctx, previous) -> Decision`` functions per application behind the
    contract: the fastest way in (paired execution calls the functions row by row, as for the
    reference apps; through :meth:`step` they give the same decisions). A build of a Python
    application, a mutant of a reference app (STRaP's mutation tool), the reference apps themselves."""

    def __init__(self, build: AppBuild, decide: Mapping[Application, DecideFn]):
        self._build = build
        self._decide = dict(decide)
        self._sessions: dict[str, tuple[AppContext, Decision | None]] = {}

    @property
    def build(self) -> AppBuild:
        return self._build

    def decide_for(self, application: Application) -> DecideFn | None:
        """The function deciding ``application`` (None: this build does not implement it)."""
        return self._decide.get(application)

    def open(self, sessions: Sequence[tuple[str, AppContext]]) -> None:
        missing = sorted({c.application.value for _, c in sessions if c.application not in self._decide})
        if missing:
            raise ValueError(f"{self._build.label()} does not implement {', '.join(missing)}")
        for sid, ctx in sessions:
            self._sessions[sid] = (ctx, None)

    def step(self, k: int, t_s: float, rows: Sequence[StepRow]) -> list[Decision | AppFault]:
        out: list[Decision | AppFault] = []
        for r in rows:
            ctx, prev = self._sessions[r.session_id]
            dec = self._decide[ctx.application](r.info, r.ego, ctx, prev)
            self._sessions[r.session_id] = (ctx, dec)
            out.append(dec)
        return out

    def close(self, session_ids: Sequence[str]) -> None:
        for sid in session_ids:
            self._sessions.pop(sid, None)


def _with_plausibility(decide: DecideFn, bound_s: float) -> DecideFn:
    """``decide`` on a context with the plausibility option on (``AppContext.plausible_age_s = bound_s``): the
    context paired execution hands in gets its checked twin once (kept beside it, by identity). Per run it also
    remembers the signal groups whose SPaT, or whose lane's MAP, it once saw stamped in the future
    (``base.future_stamped``: a forged roadside unit): their SPaT reads as stamped in the future for the rest of
    the run, so the forger is not trusted again once its stamp, a period ahead, ages past zero. When no such
    stamp was seen the information passes unchanged, so the decisions are the freshness check's alone."""
    twins: weakref.WeakKeyDictionary[AppContext, tuple[AppContext, set[str]]] = weakref.WeakKeyDictionary()

    def checked(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
        held = twins.get(ctx)
        if held is None:
            twin = ctx if ctx.plausible_age_s == bound_s else replace(ctx, plausible_age_s=bound_s)
            held = twins[ctx] = (twin, set())
        twin, forged = held
        forged.update(g for g, sig in info.signals.items() if future_stamped(sig.aoi_s))
        if info.ego_group_id is not None and future_stamped(info.map_aoi_s):
            forged.add(info.ego_group_id)
        if forged and not forged.isdisjoint(info.signals):
            info = replace(info, signals={g: replace(sig, aoi_s=-math.inf) if g in forged else sig
                                          for g, sig in info.signals.items()})
        return decide(info, ego, twin, prev)

    return checked


def _with_appearance_check(decide: DecideFn, bound_m: float) -> DecideFn:
    """``decide`` given only the tracks of senders it finds plausible: a sender first heard within ``bound_m`` of
    the ego, after the run's first :data:`APPEARANCE_GRACE_S`, is not trusted for the rest of the run. A vehicle
    that really drives up is heard from afar (the radio reaches past any braking distance); a forged one
    (``ghost_sender``) appears where the attacker puts it. Per run (the context paired execution hands in, by
    identity): the run's first time and each sender's verdict at first hearing. When every track is trusted the
    information passes unchanged, so the decisions are the reference's."""
    runs: weakref.WeakKeyDictionary[AppContext, tuple[float, dict[str, bool]]] = weakref.WeakKeyDictionary()

    def checked(info: EgoInformation, ego: EgoState, ctx: AppContext, prev: Decision | None) -> Decision:
        run = runs.get(ctx)
        if run is None:
            run = runs[ctx] = (info.t_s, {})
        t0, trusted = run
        for vid, track in info.tracks.items():
            if vid not in trusted:
                gap = math.hypot(track.xy_m[0] - ego.xy_m[0], track.xy_m[1] - ego.xy_m[1])
                trusted[vid] = info.t_s - t0 <= APPEARANCE_GRACE_S or gap > bound_m
        if all(trusted[vid] for vid in info.tracks):
            return decide(info, ego, ctx, prev)
        kept = {vid: t for vid, t in info.tracks.items() if trusted[vid]}
        return decide(replace(info, tracks=kept), ego, ctx, prev)

    return checked


class ReferenceApp(DecideFnApp):
    """The six built-in applications (``services.simulator.apps.APPS``): the reference
    implementations of the contract; the golden outcome hashes pin their decisions.

    Two plausibility options, both off by default (the reference apps as they always were), plugged in as
    ``reference:freshness=<s>``, ``reference:appearance=<m>`` or both, comma-separated
    (``plugin.resolve_app``):

    * ``plausible_age_s`` (freshness; ``AppContext.plausible_age_s``): information older than this by its own
      timestamps is not trusted (a replayed or back-dated message);
    * ``appearance_m``: a sender first heard within this distance of the ego after the run's first second is not
      trusted (:func:`_with_appearance_check`: a forged vehicle)."""

    def __init__(self, plausible_age_s: float | None = None, appearance_m: float | None = None) -> None:
        decide = {a: APPS[a].decide for a in APPS}
        name, target, options = "lastv2x-reference", "reference", []
        if plausible_age_s is not None:
            decide = {a: _with_plausibility(fn, plausible_age_s) for a, fn in decide.items()}
            options.append(f"{FRESHNESS_OPTION}={plausible_age_s:g}")
            name += f"+freshness-{plausible_age_s:g}s"
        if appearance_m is not None:
            decide = {a: _with_appearance_check(fn, appearance_m) for a, fn in decide.items()}
            options.append(f"{APPEARANCE_OPTION}={appearance_m:g}")
            name += f"+appearance-{appearance_m:g}m"
        if options:
            target = f"{REFERENCE_TARGET}:{','.join(options)}"
        super().__init__(AppBuild(name, CONTRACT_VERSION, "", target), decide)
        self.plausible_age_s = plausible_age_s
        self.appearance_m = appearance_m

    @property
    def build(self) -> AppBuild:
        if not self._build.digest:  # the digest of the apps' source, read on first use
            self._build = AppBuild(self._build.name, self._build.version, _reference_digest(), self._build.target)
        return self._build


REFERENCE = ReferenceApp()  # stateless between runs but for its open sessions (ids are unique per run)

__all__ = ["APPEARANCE_OPTION", "CONTRACT_VERSION", "FRESHNESS_OPTION", "REFERENCE_TARGET", "INPUT_BELIEF", "INPUT_RAW", "MAX_BRAKE_MPS2", "RawMessage", "input_mode", "REFERENCE", "AppBuild", "AppFault",
           "ApplicationUnderTest", "DecideFnApp", "ReferenceApp", "StepRow", "decision_problem"]

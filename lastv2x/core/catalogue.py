"""The domain catalogue: message streams, the six safety applications, fault operators.

Everything the verifier, the simulator and the LLM roles need to know about *what*
the platform tests lives here as data, registered once. Registries reject duplicate
names so two modules can never silently disagree about an operator.

Figures (rates, budgets, ranges) follow SAE J2735 message semantics and the LAST-V2X
paper (Appendices C and D, Tables 5 and 6). Freshness budgets are the age of
information (AoI) beyond which an application must treat its input as stale; the
paper does not list them, so they are chosen from the message rates (10 Hz
BSM/SPaT) and the applications' reaction horizons and documented here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, TypeVar

E = TypeVar("E", bound=StrEnum)


def extension_member(cls: type[E], value: str) -> E:
    """A member of a closed enum for a name registered in the catalogue after the enum was written (an
    application or fault operator added as a plug-in): made once, then found by value as any other member
    (``cls(value)``, pydantic validation). It is not listed by ``iter(cls)``: the catalogue's registries are
    the list of what exists."""
    found = cls._value2member_map_.get(value)
    if found is not None:
        return found  # type: ignore[return-value]
    member = str.__new__(cls, value)
    member._name_ = value.upper()
    member._value_ = value
    cls._value2member_map_[value] = member
    return member


class Application(StrEnum):
    RLVW = "RLVW"  # red-light violation warning
    GLOSA = "GLOSA"  # green light optimal speed advisory
    FCW = "FCW"  # forward collision warning
    EEBL = "EEBL"  # emergency electronic brake lights
    IMA = "IMA"  # intersection movement assist
    LTA = "LTA"  # left turn assist

    @classmethod
    def _missing_(cls, value: object) -> Application | None:
        """An application registered in :data:`APPLICATIONS` under a name of its own (a plug-in)."""
        return extension_member(cls, value) if isinstance(value, str) and value in _EXTENSION_APPS else None


class Stream(StrEnum):
    BSM = "BSM"
    SPAT = "SPAT"
    MAP = "MAP"
    EEBL = "EEBL"


class AppKind(StrEnum):
    SIGNAL = "signal"  # decides at the stop bar from SPaT/MAP
    CONFLICT = "conflict"  # decides from neighbour tracks (BSM)


class FailureClass(StrEnum):
    STALE_BUT_DETECTABLE = "stale_but_detectable"
    FRESH_BUT_WRONG = "fresh_but_wrong"
    SILENT_BY_ABSENCE = "silent_by_absence"


class FaultKind(StrEnum):
    TEMPORAL = "temporal"  # changes when/whether information arrives
    SEMANTIC = "semantic"  # changes what the information says


@dataclass(frozen=True)
class StreamInfo:
    name: Stream
    period_s: float  # nominal transmission period
    sender: str  # "vehicle" or "rsu"
    fields: tuple[str, ...]
    description: str


ROUTE_LATERAL_BAND_M = 2.5  # conflicts ignore traffic farther than this from the ego route (LAST-V2X Appendix D) [m]


@dataclass(frozen=True)
class ApplicationInfo:
    """Everything the platform knows about one application: the parser, verifier, adjudicator, monitor,
    reflector and map choice read it from here (one decide function in ``services/simulator/apps`` is
    the rest of an application)."""

    name: Application
    title: str
    kind: AppKind
    consumes: dict[Stream, tuple[str, ...]]  # stream -> fields the decision reads
    freshness_budget_s: float  # AoI above which the input is stale
    required_roles: tuple[str, ...]  # agent roles the scenario must contain
    ego_maneuvers: tuple[str, ...]  # admissible ego manoeuvres
    decision_rule: str
    violation: str
    synonyms: tuple[str, ...] = ()  # wording cues: names and phrases that select it in an intent
    # conflicts (collisions, failure margin, monitor) count only vehicles ahead on the ego route, the ego striking
    ahead_only: bool = False
    # conflicts ignore traffic farther than this from the ego route [m]; the adjudicator implements one band
    # for every application, so registration refuses another value
    lateral_band_m: float = ROUTE_LATERAL_BAND_M
    # the junction a town must offer when the intent leaves the town open (a spec JunctionKind value)
    junction_kind: str = "signalized_4way"
    # the junction control it needs when the intent says nothing (None: either): IMA's cross traffic only
    # meets the ego where no signal separates them
    junction_signalized: bool | None = None
    # the decision rule's constants, the unit in each name (FCW: ttc_s, release_ttc_s, ...)
    thresholds: dict[str, float] = field(default_factory=dict)

    @property
    def follows_lead(self) -> bool:
        """The scene is the ego behind a lead vehicle (the lead must close on the ego: FCW, EEBL)."""
        return "lead" in self.required_roles

    def threshold(self, name: str) -> float:
        try:
            return self.thresholds[name]
        except KeyError:
            raise KeyError(f"{self.name.value} has no threshold {name!r}; known: {sorted(self.thresholds)}") from None


UNIT_QUANTITY = {"s": "time", "m": "dist", "m/s": "speed"}  # magnitude unit -> the parser's quantity kind
TOLERANCE_KINDS = ("latency", "age", "countdown", "position", "speed", "burst")  # lastv2x.core.tolerance
# the families of words a person uses for a degraded message (FaultOperatorInfo.cue_families)
CUE_FAMILIES = {"loss": "lost, dropped, missing, out of range", "late": "late, lagging, delayed",
                "stale": "stale, old, outdated", "frozen": "frozen, stuck, not updating",
                "wrong": "wrong, off by, corrupted, misreported"}


@dataclass(frozen=True)
class StrengthKnob:
    """One spec field of a fault that says how hard it pushes: *weaker* = a smaller ``|value|`` (the sign of a
    signed field is kept). The shrinker halves and bisects it, its total order reads it."""

    field: str  # the Fault field: "magnitude", "probability", "burst_count"
    weakest: float  # the smallest |value| worth sending (a shrink stops there)
    strongest: float  # the |value| that counts as full strength (fault strength = |value| / strongest)
    integer: bool = False  # the field takes whole numbers
    clamp: bool = True  # strength capped at 1
    # weaker = a *larger* |value| (a ghost farther away): strength = strongest / |value|; the shrinker moves it
    # out (doubled, up to ``weakest``, the far end) instead of halving it
    inverse: bool = False


@dataclass(frozen=True)
class FaultOperatorInfo:
    name: str
    kind: FaultKind
    failure_class: FailureClass
    streams: tuple[Stream, ...]  # streams it may target
    default_field: str  # field it acts on when the spec names none
    magnitude_unit: str  # "" when the operator takes no magnitude
    magnitude_range: tuple[float, float] | None  # inclusive, None = no magnitude
    requires_sender: bool
    description: str
    # what "weaker" means, in the order they are read (the first field the fault sets counts); empty = the
    # magnitude, when the operator takes one (see ``knobs``); an operator with no knob is weakened only by
    # removing it or shortening its window
    strength: tuple[StrengthKnob, ...] = ()
    # wording cues (regular expressions over the parser's normalized intent, see services/llm/intent_text):
    # words that make a signed magnitude negative ("3 s early", "under-reports its speed")
    negative_words: str = ""
    # words that say the positive direction ("5 m/s too fast", "4 m behind where it is"): with neither these nor
    # ``negative_words`` in its sentence a magnitude's direction is open ("its position is off by 4 m"), and the
    # parse-repair loop may choose it while it keeps the stated size (services/llm/roles.SIGN_OPEN)
    positive_words: str = ""
    # phrases that name the operator; the built-in ten keep theirs in the offline grammar's ordered table
    # (services/llm/lexicon.FAULT_CUES, where the order settles overlapping cues), an added operator brings its own
    cues: tuple[str, ...] = ()
    # the magnitude the parser writes when the intent gives none, for an added operator (the built-in ones derive
    # theirs from the application's tolerance); None: the lower end of the range
    default_magnitude: float | None = None
    # the families of degradation words a person uses for what it does (CUE_FAMILIES): the parser's no-silent-drop
    # guard (services/llm/fault_cues) accepts this operator for a clause that says e.g. "lost" (loss) or "2 s old"
    # (stale); empty: no clause wording counts as this operator's (only the fallback match covers it)
    cue_families: tuple[str, ...] = ()
    # how far its magnitude (drop: messages lost in a row) must go before an application notices
    # (TOLERANCE_KINDS, rules in lastv2x.core.tolerance): the verifier and the reflector read the limit from there;
    # "": no magnitude rule
    tolerance: str = ""

    @property
    def magnitude_quantity(self) -> str | None:
        """The kind of quantity the magnitude is ("time", "dist", "speed"), from its unit; None: no magnitude."""
        return UNIT_QUANTITY[self.magnitude_unit] if self.magnitude_unit else None

    @property
    def signed(self) -> bool:
        """The magnitude may be negative (its range goes below 0)."""
        return self.magnitude_range is not None and self.magnitude_range[0] < 0.0

    @property
    def knobs(self) -> tuple[StrengthKnob, ...]:
        """The strength knobs: ``strength`` as given, else the magnitude over ``magnitude_range`` (weakest: the
        range's lower end when positive, else 0.05 of the unit; strongest: the largest |bound|)."""
        if self.strength or self.magnitude_range is None:
            return self.strength
        lo, hi = self.magnitude_range
        return (StrengthKnob("magnitude", lo if lo > 0 else 0.05, max(abs(lo), abs(hi))),)


K = TypeVar("K")
V = TypeVar("V")


class Registry(Generic[K, V]):
    """A name -> entry map that refuses duplicates (Waymax's metric factory habit)."""

    def __init__(self, what: str):
        self._what = what
        self._items: dict[K, V] = {}

    def register(self, key: K, item: V) -> V:
        if key in self._items:
            raise ValueError(f"duplicate {self._what} {key!r}")
        self._items[key] = item
        return item

    def __getitem__(self, key: K) -> V:
        try:
            return self._items[key]
        except KeyError:
            raise KeyError(f"unknown {self._what} {key!r}; known: {sorted(map(str, self._items))}") from None

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def values(self) -> list[V]:
        return list(self._items.values())


STREAMS: Registry[Stream, StreamInfo] = Registry("stream")
APPLICATIONS: Registry[Application, ApplicationInfo] = Registry("application")
FAULT_OPERATORS: Registry[str, FaultOperatorInfo] = Registry("fault operator")
_EXTENSION_APPS: set[str] = set()  # application names registered beyond the enum's own members


def register_application(info: ApplicationInfo) -> ApplicationInfo:
    """Add an application (duplicates refused). Its name may be a new one, made with
    ``extension_member(Application, "NAME")``: ``Application("NAME")`` and spec validation then resolve it."""
    if info.lateral_band_m != ROUTE_LATERAL_BAND_M:
        raise ValueError(f"{info.name}: lateral band {info.lateral_band_m} m; the adjudicator implements "
                         f"{ROUTE_LATERAL_BAND_M} m for every application")
    if info.name not in list(Application):
        _EXTENSION_APPS.add(info.name.value)
    return APPLICATIONS.register(info.name, info)


def register_fault_operator(info: FaultOperatorInfo) -> FaultOperatorInfo:
    """Add a fault operator (duplicates refused); the spec's ``FaultOperator`` resolves its name from here."""
    unknown = set(info.cue_families) - set(CUE_FAMILIES)
    if unknown:
        raise ValueError(f"{info.name}: unknown cue families {sorted(unknown)}; known: {sorted(CUE_FAMILIES)}")
    if info.tolerance and info.tolerance not in TOLERANCE_KINDS:
        raise ValueError(f"{info.name}: unknown tolerance {info.tolerance!r}; known: {list(TOLERANCE_KINDS)}")
    return FAULT_OPERATORS.register(info.name, info)


def operators_in_family(family: str) -> frozenset[str]:
    """The registered operators whose ``cue_families`` hold ``family`` (read when asked: plug-ins count)."""
    return frozenset(o.name for o in FAULT_OPERATORS.values() if family in o.cue_families)

for _s in (
    StreamInfo(Stream.BSM, 0.1, "vehicle",
               ("position", "speed", "heading", "acceleration", "brake_flag", "event_flags", "msg_count", "timestamp"),
               "J2735 Basic Safety Message, 10 Hz from every equipped vehicle"),
    StreamInfo(Stream.SPAT, 0.1, "rsu",
               ("phase", "min_end_time", "max_end_time", "timestamp"),
               "J2735 Signal Phase and Timing, 10 Hz per RSU: per signal group phase and end times"),
    StreamInfo(Stream.MAP, 1.0, "rsu",
               ("lane_signal_group", "stop_bar", "timestamp"),
               "J2735 MapData, 1 Hz: lanes, stop bars and lane -> signal group association"),
    StreamInfo(Stream.EEBL, 0.1, "vehicle",
               ("event_flag", "position", "deceleration", "timestamp"),
               "EEBL hard-braking event carried as a BSM event flag; V2V relays may rebroadcast it"),
):
    STREAMS.register(_s.name, _s)

for _a in (
    ApplicationInfo(
        Application.RLVW, "Red-light violation warning", AppKind.SIGNAL,
        {Stream.SPAT: ("phase", "min_end_time", "max_end_time", "timestamp"),
         Stream.MAP: ("lane_signal_group", "stop_bar", "timestamp")},
        1.0, (), ("straight", "left", "right"),
        "At the decision epoch d <= v*t_r + v^2/(2a) (a = 3.5 m/s^2, t_r = 1.0 s): stop if the "
        "believed phase is red, or amber and the stop bar cannot be cleared before the believed end; else proceed.",
        "Red entry: crossing the stop bar under the ego group's true red.",
        ("red light violation warning", "red-light warning", "red light", "signal violation", "rlvw"),
    ),
    ApplicationInfo(
        Application.GLOSA, "Green light optimal speed advisory", AppKind.SIGNAL,
        {Stream.SPAT: ("phase", "min_end_time", "max_end_time", "timestamp"),
         Stream.MAP: ("lane_signal_group", "stop_bar", "timestamp")},
        2.0, (), ("straight", "left", "right"),
        "Advise the speed in [v_min, v_limit] that arrives at the stop bar during the believed next "
        "green; at the decision epoch apply the RLVW stop rule; count stops.",
        "Red entry as RLVW; stops and travel time are recorded as efficiency outcomes.",
        ("green light optimal speed", "speed advisory", "glosa", "green wave", "eco-approach"),
    ),
    ApplicationInfo(
        Application.FCW, "Forward collision warning", AppKind.CONFLICT,
        {Stream.BSM: ("position", "speed", "acceleration", "timestamp")},
        0.5, ("lead",), ("straight",),
        "Warn the driver to brake when the time to collision with the lead track, TTC = gap / closing speed, "
        "falls below 2.5 s, or when a driver reacting in 1 s would need more than 4 m/s^2 to stop behind the "
        "lead (its own braking included).",
        "Collision with a vehicle ahead moving > 0.5 m/s, the ego striking; or a vehicle behind striking the ego "
        "within 3 s of its braking on the application's warning (a phantom or false warning's rear-end).",
        ("forward collision", "rear-end", "rear end", "fcw", "collision warning"),
        ahead_only=True, junction_kind="any",
        # services.simulator.apps.conflict: brake below ttc_s, hold while TTC < release_ttc_s; the verifier's
        # epochs start caring when TTC falls to release_ttc_s
        thresholds={"ttc_s": 2.5, "release_ttc_s": 4.0, "brake_mps2": 6.0, "range_m": 150.0},
    ),
    ApplicationInfo(
        Application.EEBL, "Emergency electronic brake lights", AppKind.CONFLICT,
        {Stream.EEBL: ("event_flag", "position", "deceleration", "timestamp")},
        0.5, ("lead",), ("straight",),
        "Brake when a hard-braking event (own reception or relayed) is reported ahead on the ego "
        "route within 300 m.",
        "Collision with a vehicle ahead moving > 0.5 m/s, the ego striking; or a vehicle behind striking the ego "
        "within 3 s of its braking on the application's warning (a phantom or false warning's rear-end).",
        ("emergency brake", "electronic brake light", "hard braking", "eebl", "brake lights"),
        ahead_only=True, junction_kind="any",
        thresholds={"range_m": 300.0, "brake_mps2": 5.0, "hold_s": 1.0},
    ),
    ApplicationInfo(
        Application.IMA, "Intersection movement assist", AppKind.CONFLICT,
        {Stream.BSM: ("position", "speed", "heading", "timestamp"),
         Stream.MAP: ("stop_bar", "timestamp")},
        0.5, ("cross",), ("straight", "left", "right"),
        "Yield at the stop bar when a cross-traffic track is predicted to occupy the conflict point "
        "within the 8 s arrival-overlap window of the ego.",
        "Collision with a crossing vehicle moving > 0.5 m/s within 2.5 m of the ego route.",
        ("intersection movement", "cross traffic", "crossing traffic", "ima", "intersection assist"),
        junction_signalized=False,
    ),
    ApplicationInfo(
        Application.LTA, "Left turn assist", AppKind.CONFLICT,
        {Stream.BSM: ("position", "speed", "heading", "timestamp"),
         Stream.MAP: ("stop_bar", "timestamp")},
        0.5, ("opposing",), ("left",),
        "Before turning left, wait while an opposing track is predicted at the conflict point within "
        "the gap-acceptance time (4 s) of the ego.",
        "Collision with opposing traffic moving > 0.5 m/s within 2.5 m of the ego route.",
        ("left turn", "left-turn", "lta", "turning left", "unprotected left"),
        thresholds={"gap_s": 4.0},
    ),
):
    register_application(_a)

ALL = tuple(Stream)
for _o in (
    FaultOperatorInfo("drop", FaultKind.TEMPORAL, FailureClass.STALE_BUT_DETECTABLE, ALL, "*", "",
                      None, False, "Drop messages: with `probability` per message, or `burst_count` consecutive ones.",
                      strength=(StrengthKnob("probability", 0.01, 1.0),
                                StrengthKnob("burst_count", 1.0, 10000.0, integer=True, clamp=False)),
                      cue_families=("loss",), tolerance="burst"),
    FaultOperatorInfo("delay", FaultKind.TEMPORAL, FailureClass.STALE_BUT_DETECTABLE, ALL, "*", "s",
                      (0.02, 10.0), False, "Add `magnitude` seconds of latency to each delivered message.",
                      cue_families=("late", "stale"), tolerance="latency"),
    FaultOperatorInfo("freeze", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, ALL, "*", "",
                      None, False, "Keep sending the payload captured when the window opens, with fresh timestamps.",
                      cue_families=("stale", "frozen")),
    FaultOperatorInfo("timestamp_offset", FaultKind.TEMPORAL, FailureClass.STALE_BUT_DETECTABLE, ALL, "timestamp",
                      "s", (0.05, 30.0), False, "Stamp messages `magnitude` seconds in the past (stale).",
                      cue_families=("late", "stale", "frozen", "wrong"), tolerance="age"),
    FaultOperatorInfo("spat_phase_corrupt", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.SPAT,),
                      "phase", "", None, False, "Report `target_phase` instead of the true phase.",
                      cue_families=("wrong",)),
    FaultOperatorInfo("spat_countdown_offset", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.SPAT,),
                      "min_end_time", "s", (-60.0, 60.0), False, "Shift min/max end times by `magnitude` seconds.",
                      negative_words=r"\b(early|earlier|short|shorter|less|fewer|sooner|too soon|under-?\w+|minus"
                                     r"|cut|cuts|reduced?|reduces|trimmed|shortened|lowered|decreased?|decreases)\b",
                      positive_words=r"\b(late|later|long|longer|more|extra|plus|over\w*|delay\w*|behind|after"
                                     r"|raised|increased?|increases|extended|lengthened|padded)\b",
                      cue_families=("late", "wrong"), tolerance="countdown"),
    FaultOperatorInfo("bsm_position_offset", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG,
                      (Stream.BSM, Stream.EEBL), "position", "m", (-100.0, 100.0), False,
                      "Displace the reported position `magnitude` metres backwards along the heading "
                      "(negative: forwards, ahead of where the sender is).",
                      # "6 m further ahead than in reality", "ahead of where it is": reported forwards
                      negative_words=r"\b(further|farther|more) (ahead|forward)\b|\b(ahead|forward|in front) of "
                                     r"(where|its|their|the (true|real|actual)|the truth|reality|truth|true|actual)\b",
                      # (and any word of a relative direction: "10 m farther away than actual", "closer than it
                      # is" state one, whichever sign the parser gives it)
                      positive_words=r"\b(behind|back\w*|lag\w*|trail\w*|short of|farther|further|closer|nearer"
                                     r"|away)\b",
                      cue_families=("wrong",), tolerance="position"),
    FaultOperatorInfo("bsm_speed_offset", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.BSM,),
                      "speed", "m/s", (-40.0, 40.0), False, "Add `magnitude` m/s to the reported speed.",
                      negative_words=r"\b(under-?\w+|lower|slower|less|below|minus|low|subtract\w*)\b|\btak(e|es|ing) \S+ (\S+ )?off\b",
                      positive_words=r"\b(over-?\w*|inflat\w*|exaggerat\w*|higher|faster|more|above|plus|high|fast)\b",
                      cue_families=("wrong",), tolerance="speed"),
    FaultOperatorInfo("map_misassociation", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.MAP,),
                      "lane_signal_group", "", None, False,
                      "Associate the ego lane with another signal group (`target_group`, default the cross group).",
                      cue_families=("wrong",)),
    FaultOperatorInfo("suppress_sender", FaultKind.TEMPORAL, FailureClass.SILENT_BY_ABSENCE, ALL, "*", "",
                      None, True, "The named sender transmits nothing on the stream (silent by absence).",
                      cue_families=("loss",)),
    # a captured message re-sent later: the receiver gets, in place of each message, the one the sender sent
    # `magnitude` s earlier with its original generation timestamp, so its age tells (unlike freeze, which
    # re-stamps); the AoI it keeps is that of a delay of the same lag (lag + T + L at the peak): "latency". Range:
    # one BSM/SPaT period (a shorter lag re-sends the previous message, the same as a lag of one period; on MAP
    # the verifier asks for its 1 s period) to 30 s (the longest timestamp_offset); the parser's default is the
    # latency kind's (the application's budget B: past the tolerated B - T - L)
    FaultOperatorInfo("replay", FaultKind.TEMPORAL, FailureClass.STALE_BUT_DETECTABLE, ALL, "*", "s",
                      (0.1, 30.0), False,
                      "Re-send, in place of each message, the sender's message from `magnitude` seconds earlier, "
                      "content and original timestamps kept (stale, and a freshness check can tell).",
                      cue_families=("stale", "late"), tolerance="latency"),
    # a forged vehicle: a BSM stream (10 Hz) from a sender id no vehicle or RSU of the scenario has, during the
    # window, placed `magnitude` m ahead of the ego along its route when the window opens (negative: behind) and
    # moving along it at `ghost_speed_mps` (unset: stopped in the lane); with `ghost_route: cross` (IMA, LTA: the only
    # applications that watch crossing traffic, and never the ego's own stream) on the crossing agent's route,
    # `magnitude` m before the conflict point when the window opens. Farther is weaker (an inverse knob: the
    # shrinker moves it out, to the 300 m end); strongest at 10 m. No tolerance kind: a ghost is not a degree of
    # an error but a vehicle the receiver cannot tell from a real one (only a plausibility check can). On EEBL the
    # forged vehicle brakes hard: its BSMs carry the hard-braking flag and a hop-0 EEBL record (a forged emergency
    # brake, services/simulator/v2x/forged.GHOST_BRAKE_MPS2)
    FaultOperatorInfo("ghost_sender", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.BSM, Stream.EEBL),
                      "*", "m", (-300.0, 300.0), False,
                      "Transmit BSMs from a vehicle that does not exist (`sender`, default 'ghost'), `magnitude` m "
                      "ahead of the ego on its route when the window opens, at `ghost_speed_mps` (unset: stopped); "
                      "with `ghost_route: cross` (IMA, LTA) on the crossing route, `magnitude` m before the conflict "
                      "point, heading for it; on EEBL they announce a hard-braking event.",
                      strength=(StrengthKnob("magnitude", 300.0, 10.0, inverse=True),),
                      # "20 m behind us": a ghost behind the ego (negative)
                      negative_words=r"\bbehind (the |our )?(ego|us|we|our (car|vehicle))\b",
                      positive_words=r"\b(ahead|in front|forward)\b",
                      cue_families=("wrong",), default_magnitude=40.0),
    # a forged roadside unit: during the window a transmitter that is not the junction's RSU (`sender`, default
    # 'rsu_spoof', an id nobody has) sends SPaT for the junction at the nominal 10 Hz, from beside the junction's RSU
    # site, showing `target_phase` (default green) for `target_group` (default the ego's), held to the window's end.
    # The real RSU keeps sending: the receiver keeps the newest-stamped SPaT per group, and the forger stamps its
    # messages one SPaT period ahead so that each real SPaT (stamped no later) never replaces it. No magnitude, no
    # strength knob: weakened only by a shorter (or later) window, or by removing it. No tolerance kind: a forged
    # transmitter is not a degree of an error (only a check of the sender against the MAP's RSU can tell). On MAP the
    # forger sends, once a MAP period (1 Hz), the junction's MAP rows of the ego's approach lanes tied to
    # `target_group` (default the cross group: what map_misassociation does to the real MAP), stamped one MAP period
    # ahead for the same newest-stamp rule
    FaultOperatorInfo("spoofed_rsu", FaultKind.SEMANTIC, FailureClass.FRESH_BUT_WRONG, (Stream.SPAT, Stream.MAP), "*",
                      "", None, False,
                      "Send SPaT for the junction from a roadside unit that is not the junction's (`sender`, default "
                      "'rsu_spoof'), showing `target_phase` (default green) for `target_group` (default the ego's) "
                      "until the window ends; on MAP, a MAP tying the ego's lanes to `target_group` (default the "
                      "cross group).",
                      cue_families=("wrong",)),
):
    register_fault_operator(_o)

# Decision-epoch constants (LAST-V2X Appendix D).
COMFORT_DECEL_MPS2 = 3.5
# The driver's reaction to an in-vehicle warning (issue 37 item 1), s: how long a STOP (RLVW), BRAKE (FCW,
# EEBL) or YIELD (IMA, LTA) stands before the driver acts on it; the decision epoch assumes it (ds(v) below).
# Green (2000), "How long does it take to stop?", Transportation Human Factors 2(3): 0.7-0.75 s when the driver
# fully expects the signal, ~1.25 s for an unexpected but common one (brake lights); an in-vehicle warning
# alerts the driver without foretelling the event, so between the two. Per vehicle: ProgramVehicle.
# alerted_reaction_s (0 = the application acts directly), drawn per world by variation.alerted_reaction_s.
REACTION_TIME_S = 1.0
LARGE_MARGIN = 1.0e6  # failure margin when no qualifying episode or conflict occurred (proto: 1e6 = none)
NO_MARGIN_TEXT = "none (no qualifying episode)"  # what people read for LARGE_MARGIN (margin_text)
CONFLICT_WINDOW_S = 8.0  # arrival-overlap window for conflict timing
PENETRATION_WARNING_BELOW = 0.2
COUNTDOWN_DIVERGENCE_S = 1.0  # monitor: countdown error threshold
STALE_TRACK_TIMEOUT_S = 2.0  # monitor: track for a vanished vehicle
POSITION_BUDGET_BASE_M = 1.5  # monitor: track position budget at zero age
POSITION_BUDGET_PER_S_M = 3.0  # monitor: budget growth per second of age
NOMINAL_LATENCY_S = 0.01  # channel latency above the RSSI knee
# Drivers without V2X (lastv2x.core.perception, which gives the sources)
SIGNAL_SIGHT_DISTANCE_M = 100.0  # MUTCD 2009 Table 4D-2: 99 m at 35 mph
LEADER_RANGE_M = 150.0  # assumption: > AASHTO 2011 Table 3-1 stopping sight distance at 80 km/h (130 m)
# RSU-to-RSU backhaul (spec v2x.backhaul): assumption, a wired (fibre/Ethernet) hop between signal cabinets is
# milliseconds; 10 ms is a tenth of the SPaT period
BACKHAUL_LATENCY_S = 0.01


ADMITTED_MARGIN_TEXT = "crossed (the failure happened)"  # an admitted run's margin: never "none"


def margin_text(margin: float, fmt: str = "g", *, admitted: bool = False) -> str:
    """A failure margin (signal apps: s; conflict apps: m) as people read it: an admitted run's is
    :data:`ADMITTED_MARGIN_TEXT`, the ``LARGE_MARGIN`` sentinel :data:`NO_MARGIN_TEXT`, any other value
    ``format(margin, fmt)``."""
    if admitted:
        return ADMITTED_MARGIN_TEXT
    return NO_MARGIN_TEXT if margin >= LARGE_MARGIN else format(margin, fmt)


def canonical_map_name(name: str) -> str:
    """'town 3' / 'town03' / 'Town10' -> 'Town03' / 'Town10HD'; other names unchanged (stripped)."""
    m = re.fullmatch(r"\s*town\s*0*(\d{1,2})\s*(hd)?\s*", name, flags=re.IGNORECASE)
    if not m:
        return name.strip()
    num = int(m.group(1))
    return "Town10HD" if num == 10 else f"Town{num:02d}"


def stopping_distance_m(speed_mps: float) -> float:
    """ds(v) = v*t_r + v^2 / (2a): the decision distance of signal applications."""
    return speed_mps * REACTION_TIME_S + speed_mps * speed_mps / (2.0 * COMFORT_DECEL_MPS2)

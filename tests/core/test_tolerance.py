"""One home for what an application tolerates (issue 39): the verifier and the reflector read the same limits."""

from __future__ import annotations

import pytest

from lastv2x.core import catalogue as cat
from lastv2x.core import tolerance
from lastv2x.core.catalogue import APPLICATIONS, FAULT_OPERATORS, Application, Stream


def test_the_builtin_operators_name_their_kinds() -> None:
    kinds = {o.name: o.tolerance for o in FAULT_OPERATORS.values() if o.tolerance}
    assert kinds == {"drop": "burst", "delay": "latency", "timestamp_offset": "age",
                     "spat_countdown_offset": "countdown", "bsm_position_offset": "position",
                     "bsm_speed_offset": "speed", "replay": "latency"}


@pytest.mark.parametrize(("kind", "app", "stream", "expected"), [
    ("latency", Application.RLVW, Stream.SPAT, 1.0 - 0.1 - 0.01),  # B - T - L
    ("age", Application.FCW, Stream.BSM, 0.5 - 0.01),  # B - L
    ("latency", Application.RLVW, Stream.MAP, 10.0 - 1.0 - 0.01),  # MAP: ten periods whatever the application
    ("countdown", Application.GLOSA, Stream.SPAT, 1.0),
    ("position", Application.IMA, Stream.BSM, 1.5 + 3.0 * 0.1),
    ("speed", Application.FCW, Stream.BSM, 1.0),
    ("burst", Application.RLVW, Stream.SPAT, 8.0),  # n* = floor((1.0 - 0.01) / 0.1) = 9 drops breach
])
def test_limits(kind: str, app: Application, stream: Stream, expected: float) -> None:
    assert tolerance.limit(kind, APPLICATIONS[app], stream) == pytest.approx(expected)


def test_tolerated_is_inclusive_except_for_speed() -> None:
    fcw = APPLICATIONS[Application.FCW]
    assert tolerance.tolerated("position", fcw, Stream.BSM, 1.8) and not tolerance.tolerated("position", fcw,
                                                                                             Stream.BSM, 1.81)
    assert tolerance.tolerated("speed", fcw, Stream.BSM, -0.99) and not tolerance.tolerated("speed", fcw,
                                                                                            Stream.BSM, -1.0)
    assert tolerance.tolerated("burst", APPLICATIONS[Application.RLVW], Stream.SPAT, 8)
    assert not tolerance.tolerated("burst", APPLICATIONS[Application.RLVW], Stream.SPAT, 9)


def test_an_unknown_kind_is_refused_at_registration() -> None:
    info = cat.FaultOperatorInfo("zz_bad", cat.FaultKind.TEMPORAL, cat.FailureClass.STALE_BUT_DETECTABLE,
                                 (Stream.SPAT,), "*", "s", (0.1, 1.0), False, "x", tolerance="vibes")
    with pytest.raises(ValueError, match="unknown tolerance 'vibes'"):
        cat.register_fault_operator(info)
    assert "zz_bad" not in FAULT_OPERATORS


def test_the_parsers_default_magnitudes_come_from_the_kind() -> None:
    rlvw, fcw = APPLICATIONS[Application.RLVW], APPLICATIONS[Application.FCW]
    assert tolerance.default_magnitude("latency", rlvw, Stream.SPAT) == 1.0  # the whole budget
    assert tolerance.default_magnitude("age", fcw, Stream.BSM) == 1.0  # twice it
    assert tolerance.default_magnitude("speed", fcw, Stream.BSM) == -3.0
    assert tolerance.default_magnitude("burst", rlvw, Stream.SPAT) is None
    for kind in ("latency", "age", "countdown", "position", "speed"):  # each default is past its own limit
        value = tolerance.default_magnitude(kind, rlvw, Stream.SPAT)
        assert value is not None and not tolerance.tolerated(kind, rlvw, Stream.SPAT, value)

"""fast_init gives the frozen dataclasses an __init__ that builds the same objects, cheaper."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from lastv2x.core.catalogue import Application
from services.simulator.apps.base import Action, Decision, EgoState
from services.simulator.fastinit import fast_init
from services.simulator.info import BelievedSignal, EEBLEvent, EgoInformation, Track


def _generated(cls: type) -> type:
    """The same dataclass with the generated __init__ (for comparison)."""
    return dataclasses.dataclass(frozen=True, slots="__slots__" in cls.__dict__)(
        type(cls.__name__, (), {"__annotations__": {f.name: f.type for f in dataclasses.fields(cls)},
                                **{f.name: (f.default if f.default is not dataclasses.MISSING else
                                            dataclasses.field(default_factory=f.default_factory))
                                   for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING
                                   or f.default_factory is not dataclasses.MISSING}}))


CASES = [
    (Decision, (Application.FCW, Action.BRAKE, 1.5, "r"), {"brake_mps2": 6.0, "epoch": True}),
    (EgoState, (0.1, 2.0, 3.0, -1.0, (1.0, 2.0), 0.5, 30.0, None), {}),
    (Track, ("v1", (1.0, 2.0), 3.0, 0.1, -0.5, 0.2), {"relayed": True}),
    (BelievedSignal, (0, 2.5, 0.1), {}),
    (EEBLEvent, ("lead", (3.0, 4.0), 6.0, 0.05), {"hops": 2}),
    (EgoInformation, (1.0, {}, None, {}), {"map_aoi_s": 0.3}),
]


@pytest.mark.parametrize("cls, args, kwargs", CASES)
def test_fast_init_builds_the_same_object(cls, args, kwargs) -> None:  # noqa: ANN001
    obj = cls(*args, **kwargs)
    ref = _generated(cls)(*args, **kwargs)
    assert {f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)} == \
        {f.name: getattr(ref, f.name) for f in dataclasses.fields(cls)}
    assert inspect.signature(cls) == inspect.signature(_generated(cls))
    assert pickle.loads(pickle.dumps(obj)) == obj
    assert dataclasses.replace(obj) == obj
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(obj, dataclasses.fields(cls)[0].name, None)
    with pytest.raises(TypeError):
        cls()


def test_fast_init_refuses_what_it_cannot_reproduce() -> None:
    @dataclasses.dataclass(frozen=True)
    class Post:
        x: int

        def __post_init__(self) -> None:
            pass

    @dataclasses.dataclass
    class Mutable:
        x: int

    @dataclasses.dataclass(frozen=True)
    class KwOnly:
        x: int = dataclasses.field(kw_only=True)

    for cls in (Post, Mutable, KwOnly):
        with pytest.raises(TypeError):
            fast_init(cls)


def test_fast_init_default_factory_gives_a_fresh_default() -> None:
    @fast_init
    @dataclasses.dataclass(frozen=True)
    class Holder:
        items: list = dataclasses.field(default_factory=list)

    a, b = Holder(), Holder()
    assert a.items == [] and a.items is not b.items and Holder([1]).items == [1]

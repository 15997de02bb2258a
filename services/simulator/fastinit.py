"""A cheaper, equivalent ``__init__`` for the small frozen dataclasses built every step.

A frozen dataclass's generated ``__init__`` assigns each field with ``object.__setattr__(self,
name, value)`` (a global lookup, an attribute lookup and a call per field). :func:`fast_init`
replaces it with one that, for ``slots=True`` classes, turns the new instance into a plain twin class
with the same slot layout, stores the fields with ordinary attribute assignments (CPython's fast slot
path) and turns it back into the frozen class; ``__dict__`` classes get their items assigned directly.
Same signature, same defaults, same resulting object (still frozen), about 40 % of the generated cost.
Paired execution builds several of these per rollout and step (decisions, ego states, tracks,
signals, beliefs).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

T = TypeVar("T")


_FACTORY = object()  # default of a default_factory parameter (as dataclasses' own sentinel)


def fast_init(cls: type[T]) -> type[T]:
    """Install the cheaper ``__init__`` on a frozen dataclass (decorator, applied above ``@dataclass``):
    slots are set through their descriptors, ``__dict__`` fields by item assignment. Refuses classes
    where that would not be equivalent (``__post_init__``, ``init=False`` or keyword-only fields)."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or hasattr(cls, "__post_init__"):
        raise TypeError(f"fast_init needs a frozen dataclass without __post_init__: {cls!r}")
    slots = "__slots__" in cls.__dict__
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    env: dict[str, Any] = {"_FACTORY": _FACTORY, "_cls": cls}
    args, body = [], []
    builder = _builder(cls) if slots else None
    if builder is not None:  # plain stores on a layout twin, then the instance becomes ``cls``
        env.update(_builder=builder, _set_class=object.__setattr__)
        body.append("    _set_class(self, '__class__', _builder)")
    elif not slots:
        body.append("    _d = self.__dict__")
    for i, f in enumerate(fields):
        if not f.init or f.kw_only:
            raise TypeError(f"fast_init: field {f.name!r} of {cls.__name__} is not a plain positional field")
        if f.default_factory is not dataclasses.MISSING:
            env[f"_factory{i}"] = f.default_factory
            args.append(f"{f.name}=_FACTORY")
            body.append(f"    if {f.name} is _FACTORY:\n        {f.name} = _factory{i}()")
        elif f.default is not dataclasses.MISSING:
            env[f"_default{i}"] = f.default
            args.append(f"{f.name}=_default{i}")
        else:
            args.append(f.name)
        if builder is not None:
            body.append(f"    self.{f.name} = {f.name}")
        elif slots:
            env[f"_set{i}"] = cls.__dict__[f.name].__set__
            body.append(f"    _set{i}(self, {f.name})")
        else:
            body.append(f"    _d[{f.name!r}] = {f.name}")
    if builder is not None:
        body.append("    self.__class__ = _cls")
    src = f"def __init__(self, {', '.join(args)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    exec(src, env)  # noqa: S102 -- generated from the field names only, as dataclasses itself does
    init = env["__init__"]
    original = cls.__init__
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = dict(getattr(original, "__annotations__", {}))
    init.__signature__ = inspect.signature(original)
    init.__doc__ = original.__doc__
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


def _builder(cls: type) -> type | None:
    """A plain class with ``cls``'s slot layout (no ``__setattr__``: attribute stores take CPython's fast
    slot path), or None where an instance cannot switch between the two (other bases, other slots)."""
    if cls.__bases__ != (object,):
        return None
    twin = type(f"_{cls.__name__}Builder", (), {"__slots__": tuple(cls.__dict__["__slots__"])})
    probe = object.__new__(cls)
    try:
        object.__setattr__(probe, "__class__", twin)
        probe.__class__ = cls
    except TypeError:
        return None
    return twin


__all__ = ["fast_init"]

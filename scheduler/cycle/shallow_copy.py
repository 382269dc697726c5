"""``copy.copy`` for the values a batching hit replays into each pod's CycleState, made cheap.

A hit hands every pod a shallow copy of what PreFilter and PreScore wrote for the first pod of its
signature (``scheduler.cycle.batching.PreState``). ``copy.copy`` of a slotted object goes through
``__reduce_ex__``, ``copyreg.__newobj__`` and a dictionary of slot values: several microseconds per
value, three values per pod. For a class whose every level declares ``__slots__`` and that does not
customise copying or pickling, the same copy is a new instance with each set slot assigned; the
copier for such a class is built once. Anything else goes through ``copy.copy`` itself.
"""

from __future__ import annotations

import copy
import copyreg
import keyword
from collections.abc import Callable
from typing import Any

# Values no phase can change: shared as they are. So is an instance of a class declaring
# ``replay_shared = True``: its attributes are never assigned once it is written to a CycleState.
_IMMUTABLE = (tuple, frozenset, str, bytes, int, float, bool, type(None))

_copiers: dict[type, Callable[[Any], Any]] = {}


def shallow_copy(value: Any) -> Any:
    """What ``copy.copy(value)`` returns (an immutable value itself: nothing can change it)."""
    kind = type(value)
    copier = _copiers.get(kind)
    if copier is None:
        copier = _copiers[kind] = _copier_for(kind)
    return copier(value)


def _same(value: Any) -> Any:
    return value


def _copier_for(kind: type) -> Callable[[Any], Any]:
    if issubclass(kind, _IMMUTABLE) or getattr(kind, "replay_shared", False) is True:
        return _same
    slots = _plain_slots(kind)
    if slots is None:
        return copy.copy
    new = kind.__new__
    absent = object()

    def copy_some(value: Any) -> Any:
        other = new(kind)
        for name in slots:
            # A slot never assigned stays unassigned, as copy.copy leaves it.
            item = getattr(value, name, absent)
            if item is not absent:
                object.__setattr__(other, name, item)
        return other

    if not all(name.isidentifier() and not keyword.iskeyword(name) for name in slots):
        return copy_some
    # Every slot set (the usual case): one generated function of plain attribute copies, about a
    # third of the loop's cost for a state of ten slots. Plain assignment is what object.__setattr__
    # does here: _plain_slots refused classes that customise __setattr__.
    lines = [f"    other.{name} = value.{name}" for name in slots]
    source = (
        "def copy_slots(value):\n    other = new(kind)\n    try:\n"
        + "\n".join("    " + line for line in lines)
        + "\n    except AttributeError:\n        return copy_some(value)\n    return other\n"
    )
    namespace: dict[str, Any] = {"new": new, "kind": kind, "copy_some": copy_some}
    # The names are the class's own slot identifiers (checked above), nothing from outside.
    exec(source, namespace)
    copier: Callable[[Any], Any] = namespace["copy_slots"]
    return copier


def _plain_slots(kind: type) -> tuple[str, ...] | None:
    """The slot names of ``kind`` (mangled as stored) when ``copy.copy`` of an instance is a new
    instance with the same set slots; None when the class has a ``__dict__`` or customises copying,
    pickling or attribute assignment (a frozen dataclass's ``__setattr__``, for one)."""
    if kind in copyreg.dispatch_table:
        return None
    for hook in ("__reduce_ex__", "__reduce__", "__getstate__", "__setattr__", "__new__"):
        if getattr(kind, hook, None) is not getattr(object, hook):
            return None
    if hasattr(kind, "__copy__") or hasattr(kind, "__setstate__"):
        return None
    names: list[str] = []
    for level in kind.__mro__[:-1]:
        declared = level.__dict__.get("__slots__")
        if declared is None:
            # A level without __slots__ gives instances a __dict__.
            return None
        for name in (declared,) if isinstance(declared, str) else declared:
            if name == "__dict__":
                return None
            if name != "__weakref__":
                names.append(_stored_name(level, name))
    return tuple(names)


def _stored_name(level: type, name: str) -> str:
    """A private slot's attribute name as Python mangles it (``__x`` of ``_C`` is ``_C__x``)."""
    stripped = level.__name__.lstrip("_")
    if name.startswith("__") and not name.endswith("__") and stripped:
        return f"_{stripped}{name}"
    return name

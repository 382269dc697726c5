"""shallow_copy returns what copy.copy does: a new instance with the same slot values (the values
themselves shared), unassigned slots left unassigned, and copy.copy itself for classes that customise
copying or keep a __dict__."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest

from scheduler.cycle.shallow_copy import _plain_slots, shallow_copy
from scheduler.plugins.dynamicresources.plugin import _State as DraState
from scheduler.plugins.noderesources.fit import FitRequest
from scheduler.plugins.volumebinding.plugin import StateData


class _Base:
    __slots__ = ("__hidden", "shared")

    def __init__(self) -> None:
        self.__hidden = ["base"]
        self.shared = {"a": 1}


class _Derived(_Base):
    __slots__ = "extra"  # noqa: PLC0205 - a string __slots__ is one slot, which the copier must read so
    extra: tuple[str, ...]


class _Unassigned:
    __slots__ = ("set_one", "unset_one")

    def __init__(self) -> None:
        self.set_one = [1]


@dataclasses.dataclass(frozen=True, slots=True)
class _Frozen:
    items: list[int]


class _WithDict:
    def __init__(self) -> None:
        self.items = [1, 2]


class _CustomCopy:
    __slots__ = ("copied",)

    def __init__(self) -> None:
        self.copied = False

    def __copy__(self) -> _CustomCopy:
        other = _CustomCopy()
        other.copied = True
        return other


def _slot_values(value: Any) -> dict[str, Any]:
    names = _plain_slots(type(value))
    assert names is not None
    return {name: getattr(value, name) for name in names if hasattr(value, name)}


def _same_shallow_copy(original: Any) -> None:
    mine, theirs = shallow_copy(original), copy.copy(original)
    assert mine is not original
    assert type(mine) is type(theirs) is type(original)
    mine_values, their_values = _slot_values(mine), _slot_values(theirs)
    assert mine_values.keys() == their_values.keys() == _slot_values(original).keys()
    for name, value in mine_values.items():
        # Shallow: the very objects the original holds.
        assert value is their_values[name] is getattr(original, name)


def test_plugin_states_copy_as_copy_copy_does() -> None:
    derived = _Derived()
    derived.extra = ("x",)
    for original in (
        StateData(all_bound=True, pod_volumes_by_node={"n1": object()}, node_labels={"zone": "a"}),  # type: ignore[dict-item]
        DraState(claims=[{"metadata": {"name": "c"}}], available_on=[None]),
        derived,
        _Unassigned(),
    ):
        _same_shallow_copy(original)


def test_fit_request_is_shared() -> None:
    """FitRequest declares replay_shared: never assigned after PreFilter builds it."""
    original = FitRequest.__new__(FitRequest)
    for name in _plain_slots(FitRequest) or ():
        object.__setattr__(original, name, [name])
    assert shallow_copy(original) is original


class _KeywordSlot:
    __slots__ = ("class", "plain")
    plain: list[int]


def test_slots_that_are_keywords_and_partly_assigned_slots() -> None:
    """The generated copier takes plain identifiers; a keyword slot goes through the loop."""
    original = _KeywordSlot()
    setattr(original, "class", [1])
    original.plain = [2]
    _same_shallow_copy(original)
    partial = _KeywordSlot()
    partial.plain = [3]
    _same_shallow_copy(partial)
    assert not hasattr(shallow_copy(partial), "class")
    # A state whose first slot is unset (the generated copy stops there) falls back to the loop.
    later = _Unassigned.__new__(_Unassigned)
    later.unset_one = [4]  # type: ignore[attr-defined]
    _same_shallow_copy(later)
    assert not hasattr(shallow_copy(later), "set_one")


def test_private_slots_and_unassigned_slots() -> None:
    derived = _Derived()
    copied = shallow_copy(derived)
    assert copied._Base__hidden is derived._Base__hidden  # type: ignore[attr-defined]
    assert not hasattr(copied, "extra")
    unassigned = shallow_copy(_Unassigned())
    assert not hasattr(unassigned, "unset_one")


@pytest.mark.parametrize("kind", [_Frozen, _WithDict, _CustomCopy, list, dict, set])
def test_classes_that_customise_copying_or_keep_a_dict_go_through_copy_copy(kind: type) -> None:
    assert _plain_slots(kind) is None
    original: Any = _Frozen([1]) if kind is _Frozen else kind()
    copied = shallow_copy(original)
    assert copied is not original
    assert copied == copy.copy(original) or kind in (_WithDict, _CustomCopy)
    if kind is _CustomCopy:
        assert copied.copied
    if kind is _WithDict:
        assert copied.items is original.items


@pytest.mark.parametrize("value", [(1, [2]), frozenset({1}), "s", b"b", 3, 2.5, True, None])
def test_immutable_values_are_shared(value: Any) -> None:
    assert shallow_copy(value) is value

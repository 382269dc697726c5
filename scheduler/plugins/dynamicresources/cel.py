"""CEL device selectors (``k8s.io/dynamic-resource-allocation/cel/compile.go``).

Expressions see one variable, ``device``, with ``driver``, ``allowMultipleAllocations``, ``attributes`` and
``capacity``. Attributes and capacities are maps of maps keyed by domain, then by name: an unqualified name
in a ResourceSlice belongs to the driver's domain. Looking up an unknown domain yields an empty map (so
``device.attributes["other.com"].x`` fails with "no such key" exactly as upstream), and attribute values
are ints, bools, strings or semantic versions; capacities are quantities.

The Kubernetes CEL libraries the selectors use are provided as functions: ``semver``/``isSemver`` with
``major``/``minor``/``patch``/``compareTo``/``isGreaterThan``/``isLessThan``, ``quantity``/``isQuantity``
with ``compareTo``/``isGreaterThan``/``isLessThan``/``add``/``sub``/``sign``/``isInteger``/``asInteger``/
``asApproximateFloat``, and a few string helpers (``lowerAscii``, ``upperAscii``, ``trim``, ``split``,
``join``, ``replace``, ``indexOf``).

The interpreter is cel-python (``celpy``), pure Python. It parses but does not type-check, so a type error
shows at evaluation as a runtime error, not at compile time. ``cel.bind`` is not supported by celpy: such an
expression fails to compile, and the claim gets upstream's "CEL compile error" reason rather than being
matched wrongly.

Evaluation costs about a millisecond, so results are cached per (expression, device version): a device's
match against a selector does not depend on the node or on other pods.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import celpy
from celpy import celtypes
from celpy.evaluation import CELEvalError

from scheduler.framework.quantity import QuantityError, parse_quantity

_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


_CEL_BIND = re.compile(r"\bcel\s*\.\s*bind\s*\(")


class CelError(Exception):
    """A compile or runtime failure, with upstream's wording added by the caller."""


class Semver:
    """A semantic version as the Kubernetes semver CEL library sees it (blang/semver, strict)."""

    __slots__ = ("major", "minor", "patch", "pre", "text")

    def __init__(self, text: str) -> None:
        match = _SEMVER.match(text)
        if match is None:
            raise CelError(f"invalid semver: {text}")
        self.text = text
        self.major, self.minor, self.patch = int(match[1]), int(match[2]), int(match[3])
        self.pre: tuple[str, ...] = tuple(match[4].split(".")) if match[4] else ()

    def compare(self, other: Semver) -> int:
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return -1 if mine < theirs else 1
        if self.pre == other.pre:
            return 0
        # A version without pre-release identifiers ranks higher than one with them.
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for a, b in zip(self.pre, other.pre, strict=False):
            if a == b:
                continue
            if a.isdigit() and b.isdigit():
                return -1 if int(a) < int(b) else 1
            if a.isdigit() != b.isdigit():
                return -1 if a.isdigit() else 1
            return -1 if a < b else 1
        return -1 if len(self.pre) < len(other.pre) else (1 if len(self.pre) > len(other.pre) else 0)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))

    def __repr__(self) -> str:
        return f"semver({self.text!r})"


class Quantity:
    """A resource quantity (the Kubernetes quantity CEL library), exact as a Fraction."""

    __slots__ = ("text", "value")

    def __init__(self, text: str, value: Fraction | None = None) -> None:
        self.text = text
        if value is None:
            try:
                value = parse_quantity(text)
            except (QuantityError, ValueError) as err:
                raise CelError(f"invalid quantity: {text}") from err
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Quantity) and self.value == other.value

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"quantity({self.text!r})"


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a.compare(b)
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return -1 if a.value < b.value else (1 if a.value > b.value else 0)
    raise CelError(f"no such overload: {type(a).__name__}.compareTo({type(b).__name__})")


def _semver(text: Any) -> Semver:
    return Semver(str(text))


def _is_semver(text: Any) -> celtypes.BoolType:
    return celtypes.BoolType(_SEMVER.match(str(text)) is not None)


def _quantity(text: Any) -> Quantity:
    return Quantity(str(text))


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        parse_quantity(str(text))
    except (QuantityError, ValueError):
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _quantity_arg(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    if isinstance(value, int):
        return Quantity(str(int(value)), Fraction(int(value)))
    raise CelError(f"no such overload for quantity arithmetic: {type(value).__name__}")


def _as_integer(q: Quantity) -> celtypes.IntType:
    if q.value.denominator != 1 or not -(2**63) <= q.value.numerator < 2**63:
        raise CelError("cannot convert value to integer")
    return celtypes.IntType(q.value.numerator)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "semver": _semver,
    "isSemver": _is_semver,
    "major": lambda v: celtypes.IntType(v.major),
    "minor": lambda v: celtypes.IntType(v.minor),
    "patch": lambda v: celtypes.IntType(v.patch),
    "compareTo": lambda a, b: celtypes.IntType(_cmp(a, b)),
    "isGreaterThan": lambda a, b: celtypes.BoolType(_cmp(a, b) > 0),
    "isLessThan": lambda a, b: celtypes.BoolType(_cmp(a, b) < 0),
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "isInteger": lambda q: celtypes.BoolType(q.value.denominator == 1),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: celtypes.DoubleType(float(q.value)),
    "sign": lambda q: celtypes.IntType((q.value > 0) - (q.value < 0)),
    "add": lambda q, o: Quantity("", q.value + _quantity_arg(o).value),
    "sub": lambda q, o: Quantity("", q.value - _quantity_arg(o).value),
    "lowerAscii": lambda s: celtypes.StringType(str(s).lower()),
    "upperAscii": lambda s: celtypes.StringType(str(s).upper()),
    "trim": lambda s: celtypes.StringType(str(s).strip()),
    "split": lambda s, sep: celtypes.ListType([celtypes.StringType(p) for p in str(s).split(str(sep))]),
    "join": lambda items, sep="": celtypes.StringType(str(sep).join(str(i) for i in items)),
    "replace": lambda s, old, new: celtypes.StringType(str(s).replace(str(old), str(new))),
    "indexOf": lambda s, sub: celtypes.IntType(str(s).find(str(sub))),
}


class _DomainMap(celtypes.MapType):
    """The outer attributes/capacity map: an unknown domain is an empty map (upstream's mapper)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return super().__getitem__(key)
        except KeyError:
            return celtypes.MapType({})


def _attribute_value(attr: Mapping[str, Any]) -> Any:
    if "int" in attr:
        return celtypes.IntType(int(attr["int"]))
    if "bool" in attr:
        return celtypes.BoolType(bool(attr["bool"]))
    if "string" in attr:
        return celtypes.StringType(attr["string"])
    if "version" in attr:
        try:
            return Semver(str(attr["version"]))
        except CelError as err:
            raise CelError(f"parse semantic version: {err}") from err
    raise CelError("unsupported attribute value")


def split_qualified_name(name: str, default_domain: str) -> tuple[str, str]:
    """``domain/id`` -> (domain, id); an unqualified name gets ``default_domain`` (parseQualifiedName)."""
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


def device_activation(driver: str, device: Mapping[str, Any]) -> dict[str, Any]:
    """The ``device`` variable for one device of a ResourceSlice (raw JSON)."""
    attributes: dict[Any, Any] = {}
    for name, attr in (device.get("attributes") or {}).items():
        try:
            value = _attribute_value(attr or {})
        except CelError as err:
            raise CelError(f"attribute {name}: {err}") from err
        domain, ident = split_qualified_name(name, driver)
        attributes.setdefault(celtypes.StringType(domain), celtypes.MapType({}))[
            celtypes.StringType(ident)
        ] = value
    capacity: dict[Any, Any] = {}
    for name, cap in (device.get("capacity") or {}).items():
        domain, ident = split_qualified_name(name, driver)
        text = str((cap or {}).get("value", "0"))
        capacity.setdefault(celtypes.StringType(domain), celtypes.MapType({}))[celtypes.StringType(ident)] = (
            Quantity(text)
        )
    return {
        "device": celtypes.MapType(
            {
                celtypes.StringType("driver"): celtypes.StringType(driver),
                celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                    bool(device.get("allowMultipleAllocations"))
                ),
                celtypes.StringType("attributes"): _DomainMap(attributes),
                celtypes.StringType("capacity"): _DomainMap(capacity),
            }
        )
    }


# ``device.driver == "name"``: the selector of most DeviceClasses (one per driver), upstream's
# scheduler_perf class included. Judged natively: the same answer as the interpreter (driver is always
# a string), without its ~1 ms per device. Names are restricted to characters that need no escaping.
_DRIVER_EQUALS = re.compile(
    r"""^\s*device\s*\.\s*driver\s*==\s*(?:"([A-Za-z0-9._/-]*)"|'([A-Za-z0-9._/-]*)')\s*$"""
)


def driver_equality(expression: str) -> str | None:
    """The driver name of a plain ``device.driver == "name"`` selector, else None."""
    match = _DRIVER_EQUALS.match(expression)
    if match is None:
        return None
    return match.group(1) if match.group(1) is not None else match.group(2)


@dataclass(frozen=True, slots=True)
class CompiledExpression:
    expression: str
    program: Any = None
    error: str = ""
    # Set for ``device.driver == "name"``: such a selector matches exactly the devices of that driver.
    driver_equals: str | None = None

    def matches(self, activation: Mapping[str, Any]) -> bool:
        """Raises CelError on a runtime error or a non-bool result."""
        if self.program is None:
            raise CelError(self.error)
        try:
            result = self.program.evaluate(activation)
        except CelError:
            raise
        except Exception as err:  # celpy raises CELEvalError and, on odd input, plain Python errors
            raise CelError(_eval_message(err)) from err
        if isinstance(result, CELEvalError):
            raise CelError(_eval_message(result))
        # celpy's BoolType subclasses int, not bool: an int attribute must not pass as a boolean.
        if not isinstance(result, celtypes.BoolType):
            raise CelError(f"CEL result of type {type(result).__name__} could not be converted to bool")
        return bool(result)


def _eval_message(err: BaseException) -> str:
    args = err.args
    if args and isinstance(args[0], str):
        text = args[0]
        if text.startswith("no such member in mapping: "):
            # cel-go's wording for a missing map key.
            return "no such key: " + text.removeprefix("no such member in mapping: ").strip("'")
        # celpy appends a dump of the whole activation to "undeclared reference" errors.
        return text.split(" (in activation", 1)[0]
    return str(err)[:300]


class CelCache:
    """Compiled expressions by text (upstream's cel.Cache), shared by every allocation; thread-safe."""

    def __init__(self, max_size: int = 1024) -> None:
        # Built at the first compile: celpy's Environment builds its lark grammar (~0.2 s of CPU, more on
        # a loaded machine), which start-up need not pay when no DeviceClass or claim uses CEL.
        self._env: celpy.Environment | None = None
        self._compiled: dict[str, CompiledExpression] = {}
        self._max_size = max_size
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompiledExpression:
        found = self._compiled.get(expression)
        if found is not None:
            return found
        try:
            if _CEL_BIND.search(expression):
                raise CelError("cel.bind is not supported by py-scheduler's CEL interpreter")
            env = self._environment()
            ast = env.compile(expression)
            compiled = CompiledExpression(
                expression,
                env.program(ast, functions=FUNCTIONS),
                driver_equals=driver_equality(expression),
            )
        except Exception as err:  # celpy's parse errors carry no common base besides Exception
            compiled = CompiledExpression(expression, None, f"compilation failed: {err}")
        with self._lock:
            if len(self._compiled) >= self._max_size:
                self._compiled.pop(next(iter(self._compiled)))
            self._compiled[expression] = compiled
        return compiled

    def _environment(self) -> celpy.Environment:
        if self._env is None:
            with self._lock:
                if self._env is None:
                    self._env = celpy.Environment()
        return self._env

"""Does a plugin's code match the protocols? Checked when a plugin is loaded, before start-up ends.

The framework finds a plugin's extension points by method name (``interface.py``), so a misspelt
method (``scroe``) is silently never called, a wrong arity fails on the first pod, and a coroutine
(``async def filter``) returns a coroutine object that reads as a verdict. ``plugin_problems`` finds
all three, one line each, naming the method:

* every method named like a protocol method must accept the arguments the framework passes and be a
  plain function, except the documented coroutine hooks (``ASYNC_METHODS``), which must be coroutines;
* a public method whose name is a near miss of a protocol method the plugin lacks (difflib) is a typo.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scheduler.framework import interface

# The protocol methods that are awaited on the event loop; every other one is called synchronously.
ASYNC_METHODS = frozenset({"post_filter_with_extenders"})

# How close a name must be to an extension-point method to count as its typo (difflib ratio).
NEAR_MISS_CUTOFF = 0.8


@dataclass(frozen=True)
class MethodSpec:
    name: str
    protocol: str
    params: tuple[str, ...]  # without self
    is_async: bool


def _protocol_methods() -> dict[str, MethodSpec]:
    specs: dict[str, MethodSpec] = {}
    for proto_name, proto in sorted(vars(interface).items()):
        if not (inspect.isclass(proto) and getattr(proto, "_is_protocol", False)):
            continue
        if proto.__module__ != interface.__name__:
            continue
        for name, member in vars(proto).items():
            if name.startswith("_") or not inspect.isfunction(member):
                continue
            params = tuple(inspect.signature(member).parameters)[1:]
            specs.setdefault(name, MethodSpec(name, proto_name, params, inspect.iscoroutinefunction(member)))
    return specs


PROTOCOL_METHODS: dict[str, MethodSpec] = _protocol_methods()


def _is_async(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn)


def _method(owner: Any, name: str) -> tuple[Callable[..., Any] | None, bool]:
    """The callable as the framework will call it, and whether ``self`` is still in its signature (a
    plain function looked up on a class)."""
    value = getattr(owner, name, None)
    if not callable(value):
        return None, False
    if inspect.isclass(owner):
        raw = inspect.getattr_static(owner, name, None)
        if isinstance(raw, staticmethod | classmethod):
            return value, False
        return value, inspect.isfunction(value)
    return value, False


def _shown(fn: Callable[..., Any], unbound: bool) -> str:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return "(...)"
    if not unbound and inspect.ismethod(fn):
        params = ["self", *params]
    return f"({', '.join(params)})"


def _arity_problem(name: str, fn: Callable[..., Any], unbound: bool, spec: MethodSpec) -> str:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return ""  # a builtin or C callable: nothing to check
    if unbound:
        sig = sig.replace(parameters=list(sig.parameters.values())[1:])
    try:
        sig.bind(*spec.params)
    except TypeError:
        takes = sum(
            1
            for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        )
        wanted = len(spec.params)
        return (
            f"method {name}{_shown(fn, unbound)} takes {takes} argument(s) but {spec.protocol}.{name} is "
            f"called with {wanted} ({', '.join(spec.params)})"
        )
    return ""


def plugin_problems(plugin: Any) -> list[str]:
    """What is wrong with a plugin class or instance against the protocols, one line each (empty when
    nothing)."""
    problems: list[str] = []
    for name, spec in PROTOCOL_METHODS.items():
        if not hasattr(plugin, name):
            continue
        fn, unbound = _method(plugin, name)
        if fn is None:
            problems.append(f"{name} is not a method ({spec.protocol}.{name} must be one)")
            continue
        if spec.name in ASYNC_METHODS and not _is_async(fn):
            problems.append(f"method {name} must be a coroutine (async def): the scheduler awaits it")
            continue
        if spec.name not in ASYNC_METHODS and _is_async(fn):
            problems.append(
                f"method {name} is a coroutine (async def), but {spec.protocol}.{name} is called "
                "synchronously on the scheduler's event loop; make it a plain def"
            )
            continue
        problem = _arity_problem(name, fn, unbound, spec)
        if problem:
            problems.append(problem)
    for name in sorted(dir(plugin)):
        if name.startswith("_") or name in PROTOCOL_METHODS or not callable(getattr(plugin, name, None)):
            continue
        if inspect.isclass(getattr(plugin, name, None)):
            continue
        close = [
            m
            for m in difflib.get_close_matches(name, PROTOCOL_METHODS, n=3, cutoff=NEAR_MISS_CUTOFF)
            if not hasattr(plugin, m)
        ]
        if close:
            problems.append(f"method {name} is not an extension point; did you mean {close[0]}?")
    return problems


class PluginCheckError(ValueError):
    """A plugin does not match the protocols; ``str()`` is one line naming the plugin and the method."""


def check_plugin(plugin: Any, label: str) -> None:
    """Raises PluginCheckError naming ``label`` and every problem of ``plugin``."""
    problems = plugin_problems(plugin)
    if problems:
        raise PluginCheckError(f'plugin "{label}": {"; ".join(problems)}')

"""Out-of-tree plugins: Python classes named in the config by import path, or installed entry points.

A plugin named in the config that is not registered and contains ``:`` or ``.`` is imported:
``pkg.module:ClassName`` (preferred, unambiguous) or ``pkg.module.ClassName``. It stays registered
under that path string, exactly as written, because the config refers to it by that string in every
extension point and in ``pluginConfig``. The class must still declare ``name = "..."``: that is the
name the framework shows in statuses, events and metrics.

Every entry point of group ``py_scheduler.plugins`` is registered under its entry-point name. One
that fails to load only stops start-up when the config uses it; otherwise it is logged and skipped.

Writing one takes a few lines::

    class PreferLabel:
        name = "PreferLabel"

        def __init__(self, args, handle):
            self.label = args.get("label", "fast")

        def score(self, state, pod, node):
            return (100 if self.label in node.labels else 0), None

A class is checked against the protocols when it is loaded (``scheduler.framework.conformance``): a
misspelt extension-point method, a wrong arity or a coroutine where the loop needs a plain function
stops start-up with one line naming the plugin and the method.

A class becomes a factory ``(args, handle) -> plugin``: a classmethod/staticmethod ``new(args, handle)``
is used when present; otherwise the class is called with ``(args, handle)``, ``(args)`` or ``()``
depending on how many positional parameters its ``__init__`` takes. A non-class callable (a factory
function) is used as the factory as it is.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from scheduler.config.errors import ConfigError
from scheduler.framework.conformance import plugin_problems
from scheduler.framework.handle import Handle
from scheduler.framework.interface import Plugin, PluginFactory

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "py_scheduler.plugins"


class PluginLoadError(Exception):
    """Why one out-of-tree plugin could not be loaded."""


def is_import_path(name: str) -> bool:
    return ":" in name or "." in name


@dataclass(frozen=True)
class ClassFactory:
    """Adapts a plugin class to ``PluginFactory``; ``arity`` is how many of (args, handle) it takes."""

    cls: type
    arity: int
    use_new: bool = False

    def __call__(self, args: Mapping[str, Any], handle: Handle) -> Plugin:
        if self.use_new:
            plugin: Plugin = self.cls.new(args, handle)  # type: ignore[attr-defined]
        elif self.arity >= 2:
            plugin = self.cls(args, handle)
        elif self.arity == 1:
            plugin = self.cls(args)
        else:
            plugin = self.cls()
        return plugin


def _positional_arity(cls: type) -> int:
    try:
        sig = inspect.signature(cls)
    except (TypeError, ValueError):
        return 2
    count = 0
    for param in sig.parameters.values():
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return 2
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return min(count, 2)


def factory_for(obj: Any, label: str) -> PluginFactory:
    """A ``PluginFactory`` for a plugin class or factory function. ``label`` names it in errors."""
    if inspect.isclass(obj):
        declared = getattr(obj, "name", None)
        if not isinstance(declared, str) or not declared:
            raise PluginLoadError(
                f'plugin class {obj.__module__}.{obj.__qualname__} ("{label}") must declare a class '
                'attribute `name` (a non-empty str), e.g. name = "MyPlugin"'
            )
        problems = plugin_problems(obj)
        if problems:
            # The protocols' names and signatures (docs/plugins.md#compatibility): one line, every problem.
            raise PluginLoadError(f"{obj.__module__}.{obj.__qualname__}: {'; '.join(problems)}")
        if isinstance(inspect.getattr_static(obj, "new", None), classmethod | staticmethod):
            return ClassFactory(obj, 2, use_new=True)
        return ClassFactory(obj, _positional_arity(obj))
    if callable(obj):
        factory: PluginFactory = obj
        return factory
    raise PluginLoadError(f'"{label}" is a {type(obj).__name__}, not a plugin class or factory')


def import_object(path: str) -> Any:
    """``pkg.mod:Attr.Sub`` or ``pkg.mod.Attr``. Raises PluginLoadError naming what failed."""
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
        candidates = [(module_name, attr_path)]
    else:
        # Without a colon the split is ambiguous; the longest importable module wins.
        parts = path.split(".")
        candidates = [(".".join(parts[:i]), ".".join(parts[i:])) for i in range(len(parts) - 1, 0, -1)]
    if not candidates or not all(
        part.isidentifier() for m, a in candidates for part in (*m.split("."), *a.split("."))
    ):
        raise PluginLoadError(f'"{path}" is not an import path like "package.module:ClassName"')
    last_error: BaseException | None = None
    for module_name, attr_path in candidates:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            # Only "this very module is missing" means try a shorter prefix; a missing dependency
            # inside an existing module is the real error.
            if exc.name is not None and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                last_error = exc
                continue
            raise PluginLoadError(f'cannot import module "{module_name}": {exc}') from exc
        except Exception as exc:
            raise PluginLoadError(
                f'cannot import module "{module_name}": {type(exc).__name__}: {exc}'
            ) from exc
        obj: Any = module
        for attr in attr_path.split("."):
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                raise PluginLoadError(f'module "{module_name}" has no attribute "{attr_path}"') from None
        return obj
    raise PluginLoadError(f'cannot import "{path}": {last_error}')


def load_path_plugin(path: str) -> PluginFactory:
    return factory_for(import_object(path), path)


def load_entry_points(group: str = ENTRY_POINT_GROUP) -> tuple[dict[str, PluginFactory], dict[str, str]]:
    """Factories of every entry point in ``group``, and the load error of each one that failed."""
    factories: dict[str, PluginFactory] = {}
    errors: dict[str, str] = {}
    values: dict[str, str] = {}
    for ep in importlib.metadata.entry_points(group=group):
        if ep.name in values:
            # The same distribution seen twice on sys.path is harmless; two different ones are not.
            if values[ep.name] != ep.value:
                errors[ep.name] = (
                    f'entry point "{ep.name}" is defined twice ({values[ep.name]} and {ep.value})'
                )
                factories.pop(ep.name, None)
            continue
        values[ep.name] = ep.value
        try:
            factories[ep.name] = factory_for(ep.load(), ep.name)
        except PluginLoadError as exc:
            errors[ep.name] = f'entry point "{ep.name}" ({ep.value}): {exc}'
        except Exception as exc:
            errors[ep.name] = (
                f'entry point "{ep.name}" ({ep.value}) failed to load: {type(exc).__name__}: {exc}'
            )
    return factories, errors


@dataclass
class OutOfTreeResult:
    factories: dict[str, PluginFactory]
    errors: dict[str, str]  # by plugin name, for names the config uses
    conflicts: list[str]  # entry points that collide with registered plugins


def collect_out_of_tree(
    names: Iterable[str], registry: Mapping[str, PluginFactory] | None = None
) -> OutOfTreeResult:
    """Load what ``names`` need beyond ``registry``; report failures instead of raising."""
    registry = registry or {}
    wanted = set(names)
    entry_factories, entry_errors = load_entry_points()
    result = OutOfTreeResult(factories={}, errors={}, conflicts=[])
    for name, factory in entry_factories.items():
        if name in registry:
            # Upstream Registry.Merge refuses to replace a plugin; silently shadowing one is worse.
            result.conflicts.append(f'entry point "{name}": a plugin named "{name}" already exists')
        else:
            result.factories[name] = factory
    for name, message in entry_errors.items():
        if name in wanted:
            result.errors[name] = message
        else:
            log.warning("skipping out-of-tree plugin: %s", message)
    for name in sorted(wanted):
        if name in registry or name in result.factories or name in result.errors or not is_import_path(name):
            continue
        try:
            result.factories[name] = load_path_plugin(name)
        except PluginLoadError as exc:
            result.errors[name] = str(exc)
    return result


def load_out_of_tree(
    names: Iterable[str], registry: Mapping[str, PluginFactory] | None = None
) -> dict[str, PluginFactory]:
    """Factories for the import-path names in ``names`` not in ``registry``, plus all entry points.

    Raises ConfigError naming every plugin that failed to load.
    """
    result = collect_out_of_tree(names, registry)
    problems = [*result.conflicts, *(f'plugin "{n}": {msg}' for n, msg in sorted(result.errors.items()))]
    if problems:
        raise ConfigError(problems)
    return result.factories


def merge_registries(*registries: Mapping[str, PluginFactory]) -> dict[str, PluginFactory]:
    """Union of registries; a name registered twice is an error (upstream ``Registry.Merge``)."""
    merged: dict[str, PluginFactory] = {}
    problems = []
    for registry in registries:
        for name, factory in registry.items():
            if name in merged and merged[name] is not factory:
                problems.append(f'a plugin named "{name}" already exists')
            merged[name] = factory
    if problems:
        raise ConfigError(problems)
    return merged

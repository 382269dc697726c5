"""From a profile's ``plugins`` to the ordered plugin list of every extension point.

Two upstream steps, kept apart as upstream keeps them:

1. ``mergePlugins`` (``apis/config/v1/default_plugins.go``): the default plugins (all given as
   multiPoint) are merged with the profile's sets. A custom entry naming a default plugin replaces it
   in place (that is how weights are overridden); ``disabled`` drops defaults, ``"*"`` drops them all;
   other custom entries are appended.
2. ``expandMultiPointPlugins`` (``framework/runtime/framework.go``): each multiPoint plugin joins every
   point it implements, unless that point disables it or ``"*"``. A plugin also enabled explicitly at a
   point keeps the explicit entry. Order at a point: explicit entries that overrode a multiPoint
   plugin, then multiPoint plugins, then the other explicit entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scheduler.config.errors import ConfigError, ErrorList, FieldPath
from scheduler.config.types import (
    DISABLE_ALL,
    EXTENSION_POINTS,
    MULTI_POINT,
    PLUGIN_SET_NAMES,
    PluginRef,
    PluginSet,
    SchedulerConfig,
    SchedulerProfile,
)
from scheduler.framework.conformance import PluginCheckError
from scheduler.framework.interface import PluginFactory

DEFAULT_SCORE_WEIGHT = 1

# implements(plugin_name) -> the camelCase extension points the plugin implements.
Implements = Callable[[str], Iterable[str]]
DefaultPlugins = Sequence[tuple[str, int | None]]


@dataclass(frozen=True, eq=True)
class ResolvedProfile:
    scheduler_name: str
    percentage_of_nodes_to_score: int | None
    plugins: dict[str, list[str]]  # every point of EXTENSION_POINTS, in run order
    score_weights: dict[str, int]  # for each plugin of plugins["score"]
    plugin_args: dict[str, dict[str, Any]] = field(default_factory=dict)  # for every plugin needed

    @property
    def plugin_names(self) -> list[str]:
        """Every plugin to instantiate, each once, in first-use order."""
        seen: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            for name in self.plugins[point]:
                seen.setdefault(name, None)
        for name in self.plugin_args:
            seen.setdefault(name, None)
        return list(seen)

    @property
    def queue_sort(self) -> str:
        return self.plugins["queueSort"][0]


def merge_plugin_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """Upstream ``mergePluginSet``."""
    disabled = (*custom.disabled, *default.disabled)
    disabled_set = set(disabled)
    custom_index = {ref.name: i for i, ref in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if DISABLE_ALL not in disabled_set:
        for ref in default.enabled:
            if ref.name in disabled_set:
                continue
            i = custom_index.get(ref.name)
            if i is None:
                enabled.append(ref)
            else:
                # Re-configured default plugin: the custom entry takes its place (and order).
                enabled.append(custom.enabled[i])
                replaced.add(i)
    enabled.extend(ref for i, ref in enumerate(custom.enabled) if i not in replaced)
    return PluginSet(enabled=tuple(enabled), disabled=disabled)


def merged_plugin_sets(profile: SchedulerProfile, default_multipoint: DefaultPlugins) -> dict[str, PluginSet]:
    defaults = {name: PluginSet() for name in PLUGIN_SET_NAMES}
    defaults[MULTI_POINT] = PluginSet(enabled=tuple(PluginRef(n, w) for n, w in default_multipoint))
    return {name: merge_plugin_set(defaults[name], profile.plugins[name]) for name in PLUGIN_SET_NAMES}


class _PointsOf:
    """Memoised ``implements``; a plugin that fails to build becomes one error, reported once."""

    def __init__(self, implements: Implements, errs: ErrorList, path: FieldPath) -> None:
        self._implements = implements
        self._errs = errs
        self._path = path
        self._cache: dict[str, frozenset[str] | None] = {}

    def __call__(self, name: str) -> frozenset[str] | None:
        if name not in self._cache:
            try:
                self._cache[name] = frozenset(self._implements(name))
            except PluginCheckError as exc:
                # Already one line naming the plugin and its method (docs/plugins.md#compatibility).
                self._errs.other(f"{self._path}: {exc}")
                self._cache[name] = None
            except Exception as exc:
                self._errs.other(f'{self._path}: initializing plugin "{name}": {type(exc).__name__}: {exc}')
                self._cache[name] = None
        return self._cache[name]


def resolve_profile(
    profile: SchedulerProfile,
    registry: Mapping[str, PluginFactory],
    default_multipoint: DefaultPlugins,
    implements: Implements,
    *,
    path: str = "",
) -> ResolvedProfile:
    """The plugins of every point for ``profile``. Raises ConfigError listing every problem.

    ``path`` prefixes error messages (``profiles[0]``); by default the profile's name is used.
    """
    errs = ErrorList()
    base = FieldPath(path or f"profiles[{profile.scheduler_name}]")
    plugins_path = base.child("plugins")
    points_of = _PointsOf(implements, errs, base)
    merged = merged_plugin_sets(profile, default_multipoint)

    def usable(name: str, where: FieldPath, what: str = "plugin") -> bool:
        if name not in registry:
            errs.invalid(where, name, f"{what} does not exist")
            return False
        return points_of(name) is not None

    # Paths point at the user's entry; a default plugin has none, so it gets the set's path.
    user_multi = {ref.name: j for j, ref in enumerate(profile.plugins[MULTI_POINT].enabled)}
    multi_ok = [
        ref
        for ref in merged[MULTI_POINT].enabled
        if (
            usable(ref.name, _entry(plugins_path, MULTI_POINT, user_multi[ref.name]))
            if ref.name in user_multi
            else usable(ref.name, plugins_path.child(MULTI_POINT), "default plugin")
        )
    ]

    result: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        ps = merged[point]
        explicit: list[str] = []
        for j, ref in enumerate(ps.enabled):
            where = _entry(plugins_path, point, j)
            if not usable(ref.name, where):
                continue
            if point not in (points_of(ref.name) or ()):
                errs.invalid(where, ref.name, f"plugin does not implement the {point} extension point")
            elif ref.name in explicit:
                errs.duplicate(where, ref.name)
            else:
                explicit.append(ref.name)
        result[point] = _expand(
            point,
            explicit=explicit,
            ps=ps,
            multi=multi_ok,
            points_of=points_of,
            errs=errs,
            plugins_path=plugins_path,
        )

    # Checked only on an otherwise clean profile: a bad plugin above would make these misleading.
    if not errs:
        _check_required_points(result, plugins_path, errs)
    errs.raise_if_any()

    needed = dict.fromkeys(name for point in EXTENSION_POINTS for name in result[point])
    needed.update(dict.fromkeys(ref.name for ref in multi_ok))
    return ResolvedProfile(
        scheduler_name=profile.scheduler_name,
        percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
        plugins=result,
        score_weights=_score_weights(result["score"], merged),
        plugin_args={name: dict(profile.args_for(name) or {}) for name in needed},
    )


def _check_required_points(result: Mapping[str, list[str]], plugins_path: FieldPath, errs: ErrorList) -> None:
    """Exactly one QueueSort and at least one Bind plugin, as upstream's profile validation."""
    if len(result["queueSort"]) != 1:
        errs.invalid(
            plugins_path.child("queueSort"),
            result["queueSort"],
            f"exactly one queue sort plugin is required, got {len(result['queueSort'])}",
        )
    if not result["bind"]:
        errs.required(plugins_path.child("bind"), "at least one bind plugin is needed")


def _entry(plugins_path: FieldPath, set_name: str, j: int) -> FieldPath:
    return plugins_path.child(set_name, "enabled").index(j)


def _expand(
    point: str,
    *,
    explicit: list[str],
    ps: PluginSet,
    multi: list[PluginRef],
    points_of: _PointsOf,
    errs: ErrorList,
    plugins_path: FieldPath,
) -> list[str]:
    if DISABLE_ALL in ps.disabled:
        return explicit
    disabled = set(ps.disabled)
    overrides: set[str] = set()
    from_multi: list[str] = []
    for ref in multi:
        if point not in (points_of(ref.name) or ()) or ref.name in disabled:
            continue
        if ref.name in explicit:
            overrides.add(ref.name)
        elif ref.name in from_multi:
            errs.invalid(plugins_path.child(MULTI_POINT), ref.name, f"plugin already registered at {point}")
        else:
            from_multi.append(ref.name)
    first = [n for n in explicit if n in overrides]
    rest = [n for n in explicit if n not in overrides]
    return [*first, *from_multi, *rest]


def _score_weights(score_plugins: list[str], merged: Mapping[str, PluginSet]) -> dict[str, int]:
    """Upstream ``getScoreWeights``: an explicit score entry wins over multiPoint; unset weight is 1."""
    wanted = set(score_plugins)
    weights: dict[str, int] = {}
    for ref in (*merged["score"].enabled, *merged[MULTI_POINT].enabled):
        if ref.name in wanted and ref.name not in weights:
            weights[ref.name] = ref.weight or DEFAULT_SCORE_WEIGHT
    return weights


def resolve_profiles(
    cfg: SchedulerConfig,
    default_multipoint: DefaultPlugins,
    implements: Implements,
    registry: Mapping[str, PluginFactory],
) -> list[ResolvedProfile]:
    """Resolve every profile against ``registry``, then check they share one
    queue sort plugin with the same args, as upstream's profile map does. Errors of all profiles are
    reported together."""
    resolved: list[ResolvedProfile] = []
    problems: list[str] = []
    for i, profile in enumerate(cfg.profiles):
        try:
            resolved.append(
                resolve_profile(profile, registry, default_multipoint, implements, path=f"profiles[{i}]")
            )
        except ConfigError as exc:
            problems.extend(exc.errors)
    if not problems and resolved:
        first = resolved[0]
        for i, rp in enumerate(resolved[1:], start=1):
            if rp.queue_sort != first.queue_sort:
                problems.append(
                    f'profiles[{i}].plugins.queueSort: Invalid value: "{rp.queue_sort}": different queue '
                    f'sort plugin than profiles[0] ("{first.queue_sort}"); all profiles share one queue'
                )
            elif rp.plugin_args.get(rp.queue_sort, {}) != first.plugin_args.get(first.queue_sort, {}):
                problems.append(
                    f"profiles[{i}].pluginConfig: different queue sort plugin args for profile "
                    f"{rp.scheduler_name!r}"
                )
    if problems:
        raise ConfigError(problems)
    return resolved

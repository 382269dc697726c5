"""Args of the Trimaran plugins: ``TargetLoadPackingArgs``, ``LoadVariationRiskBalancingArgs`` and
``LowRiskOverCommitmentArgs`` (scheduler-plugins v0.34.7 ``apis/config/v1/types.go``; defaults from
``apis/config/v1/defaults.go``; the checks upstream makes when it builds the plugin in
``pkg/trimaran/collector.go`` ``checkSpecs`` and ``targetloadpacking.go`` ``New``).

Upstream has no validation function for these args: out-of-range numbers fall back to the defaults
(``targetUtilization`` <= 0, a negative margin or sensitivity, ``smoothingWindowSize`` <= 0, a risk weight
outside [0, 1]). What stops start-up: a ``metricProvider.type`` other than the three it knows, and a
``defaultRequestsMultiplier`` that is not a number. py-scheduler reads load from Prometheus or from a
load-watcher service only, so ``KubernetesMetricsServer`` (the default type when neither is given) and
``SignalFx`` are refused too, with the field named.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduler.framework.load_metrics import (
    KUBERNETES_METRICS_SERVER,
    PROMETHEUS,
    SIGNAL_FX,
    MetricProviderSpec,
    TrimaranSpec,
)
from scheduler.framework.quantity import QuantityError, milli_value
from scheduler.plugins.errors import PluginArgsError
from scheduler.plugins.helper.args import ArgsReader

DEFAULT_REQUESTS_MILLI_CORES = 1000
DEFAULT_REQUESTS_MULTIPLIER = "1.5"
DEFAULT_TARGET_UTILIZATION_PERCENT = 40
DEFAULT_SAFE_VARIANCE_MARGIN = 1.0
DEFAULT_SAFE_VARIANCE_SENSITIVITY = 1.0
DEFAULT_SMOOTHING_WINDOW_SIZE = 5
DEFAULT_RISK_LIMIT_WEIGHT = 0.5
DEFAULT_METRIC_PROVIDER_TYPE = KUBERNETES_METRICS_SERVER
DEFAULT_INSECURE_SKIP_VERIFY = True

KNOWN_PROVIDER_TYPES = (KUBERNETES_METRICS_SERVER, PROMETHEUS, SIGNAL_FX)
SUPPORTED_PROVIDER_TYPES = (PROMETHEUS,)
SPEC_FIELDS = ("metricProvider", "watcherAddress")
PROVIDER_FIELDS = ("type", "address", "token", "insecureSkipVerify")

# Go's strconv.ParseFloat accepts what Python's float() does, except surrounding blanks and
# underscores between decimal digits; hexadecimal floats need float.fromhex.
_GO_HEX_FLOAT = re.compile(r"[+-]?0[xX]([0-9a-fA-F_]*\.?[0-9a-fA-F_]*)[pP][+-]?[0-9_]+")


@dataclass(frozen=True, slots=True)
class TargetLoadPackingArgs:
    spec: TrimaranSpec = field(default_factory=TrimaranSpec)
    # defaultRequests' cpu, in millicores (what upstream keeps of the list).
    default_requests_milli_cpu: int = DEFAULT_REQUESTS_MILLI_CORES
    default_requests_multiplier: float = 1.5
    target_utilization: int = DEFAULT_TARGET_UTILIZATION_PERCENT


@dataclass(frozen=True, slots=True)
class LoadVariationRiskBalancingArgs:
    spec: TrimaranSpec = field(default_factory=TrimaranSpec)
    safe_variance_margin: float = DEFAULT_SAFE_VARIANCE_MARGIN
    safe_variance_sensitivity: float = DEFAULT_SAFE_VARIANCE_SENSITIVITY


@dataclass(frozen=True, slots=True)
class LowRiskOverCommitmentArgs:
    spec: TrimaranSpec = field(default_factory=TrimaranSpec)
    smoothing_window_size: int = DEFAULT_SMOOTHING_WINDOW_SIZE
    # resource name -> weight of the risk due to limits, cpu and memory always present.
    risk_limit_weights: tuple[tuple[str, float], ...] = (
        ("cpu", DEFAULT_RISK_LIMIT_WEIGHT),
        ("memory", DEFAULT_RISK_LIMIT_WEIGHT),
    )

    def risk_limit_weight(self, resource: str) -> float:
        return dict(self.risk_limit_weights).get(resource, 0.0)


def _number(reader: ArgsReader, value: Any, path: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise reader.error(path, f"Invalid value: {value!r}: must be a number")
    return float(value)


def _boolean(reader: ArgsReader, value: Any, path: str) -> bool | None:
    if value is None:
        return None
    if not isinstance(value, bool):
        raise reader.error(path, f"Invalid value: {value!r}: must be a boolean")
    return value


def parse_spec(reader: ArgsReader, args: Mapping[str, Any]) -> TrimaranSpec:
    """``SetDefaultTrimaranSpec`` then upstream's ``checkSpecs``, and the sources py-scheduler reads."""
    provider = reader.mapping(args.get("metricProvider"), "metricProvider", fields=PROVIDER_FIELDS)
    watcher_address = args.get("watcherAddress")
    has_watcher = watcher_address is not None
    watcher = reader.string(watcher_address, "watcherAddress") if has_watcher else ""
    kind = provider.get("type")
    kind = "" if kind is None else reader.string(kind, "metricProvider.type")
    address = provider.get("address")
    token = provider.get("token")
    insecure = _boolean(reader, provider.get("insecureSkipVerify"), "metricProvider.insecureSkipVerify")
    if not has_watcher and kind == "":
        kind = DEFAULT_METRIC_PROVIDER_TYPE
    if kind == PROMETHEUS and insecure is None:
        insecure = DEFAULT_INSECURE_SKIP_VERIFY
    spec = TrimaranSpec(
        MetricProviderSpec(
            kind,
            "" if address is None else reader.string(address, "metricProvider.address"),
            "" if token is None else reader.string(token, "metricProvider.token"),
            bool(insecure),
        ),
        watcher,
    )
    if spec.watcher_address:
        return spec
    if kind not in KNOWN_PROVIDER_TYPES:
        raise reader.error("metricProvider.type", f"invalid MetricProvider.Type, got {kind}")
    if kind not in SUPPORTED_PROVIDER_TYPES:
        raise reader.error(
            "metricProvider.type",
            f'Unsupported value: "{kind}": py-scheduler reads load from Prometheus '
            "(metricProvider.type: Prometheus) or from a load-watcher service (watcherAddress)",
        )
    return spec


def parse_go_float(text: str) -> float:
    """Go's ``strconv.ParseFloat(text, 64)``; ValueError in Go's words when it would fail."""
    if text != text.strip() or ("_" in text and not _GO_HEX_FLOAT.fullmatch(text)):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    if _GO_HEX_FLOAT.fullmatch(text):
        return float.fromhex(text.replace("_", ""))
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax') from None
    if math.isinf(number) and text.lower().lstrip("+-") not in ("inf", "infinity"):
        raise ValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return number


def parse_target_load_packing(raw: Mapping[str, Any] | None, plugin: str) -> TargetLoadPackingArgs:
    reader = ArgsReader(plugin)
    args = reader.top(
        raw,
        "TargetLoadPackingArgs",
        (*SPEC_FIELDS, "defaultRequests", "defaultRequestsMultiplier", "targetUtilization"),
    )
    spec = parse_spec(reader, args)
    requests = args.get("defaultRequests")
    milli_cpu = DEFAULT_REQUESTS_MILLI_CORES
    if requests is not None:
        requests = reader.mapping(requests, "defaultRequests")
        cpu = requests.get("cpu")
        # Every quantity of the list must decode, as upstream's strict decoding demands.
        for name, quantity in requests.items():
            try:
                milli_value(quantity)
            except QuantityError as err:
                raise reader.error(f"defaultRequests.{name}", f"Invalid value: {err}") from None
        # Upstream keeps only the list's cpu (``DefaultRequests.Cpu()``): none is zero.
        milli_cpu = 0 if cpu is None else milli_value(cpu)
    multiplier_text = args.get("defaultRequestsMultiplier")
    if multiplier_text is None:
        multiplier_text = DEFAULT_REQUESTS_MULTIPLIER
    multiplier_text = reader.string(multiplier_text, "defaultRequestsMultiplier")
    try:
        multiplier = parse_go_float(multiplier_text)
    except ValueError as err:
        raise reader.error(
            "defaultRequestsMultiplier", f"unable to parse DefaultRequestsMultiplier: {err}"
        ) from None
    target = reader.integer(args.get("targetUtilization"), "targetUtilization")
    if target <= 0:
        target = DEFAULT_TARGET_UTILIZATION_PERCENT
    return TargetLoadPackingArgs(spec, milli_cpu, multiplier, target)


def parse_load_variation_risk_balancing(
    raw: Mapping[str, Any] | None, plugin: str
) -> LoadVariationRiskBalancingArgs:
    reader = ArgsReader(plugin)
    args = reader.top(
        raw, "LoadVariationRiskBalancingArgs", (*SPEC_FIELDS, "safeVarianceMargin", "safeVarianceSensitivity")
    )
    spec = parse_spec(reader, args)
    margin = _number(reader, args.get("safeVarianceMargin"), "safeVarianceMargin")
    sensitivity = _number(reader, args.get("safeVarianceSensitivity"), "safeVarianceSensitivity")
    if margin is None or margin < 0:
        margin = DEFAULT_SAFE_VARIANCE_MARGIN
    if sensitivity is None or sensitivity < 0:
        sensitivity = DEFAULT_SAFE_VARIANCE_SENSITIVITY
    return LoadVariationRiskBalancingArgs(spec, margin, sensitivity)


def parse_low_risk_over_commitment(raw: Mapping[str, Any] | None, plugin: str) -> LowRiskOverCommitmentArgs:
    reader = ArgsReader(plugin)
    args = reader.top(
        raw, "LowRiskOverCommitmentArgs", (*SPEC_FIELDS, "smoothingWindowSize", "riskLimitWeights")
    )
    spec = parse_spec(reader, args)
    window = reader.integer(args.get("smoothingWindowSize"), "smoothingWindowSize")
    if window <= 0:
        window = DEFAULT_SMOOTHING_WINDOW_SIZE
    weights = {"cpu": DEFAULT_RISK_LIMIT_WEIGHT, "memory": DEFAULT_RISK_LIMIT_WEIGHT}
    given = reader.mapping(args.get("riskLimitWeights"), "riskLimitWeights")
    for name, weight in given.items():
        w = _number(reader, weight, f"riskLimitWeights.{name}")
        # Out of [0, 1]: the default weight, as SetDefaults_LowRiskOverCommitmentArgs does.
        weights[str(name)] = DEFAULT_RISK_LIMIT_WEIGHT if w is None or w < 0 or w > 1 else w
    return LowRiskOverCommitmentArgs(spec, window, tuple(weights.items()))


__all__ = [
    "LoadVariationRiskBalancingArgs",
    "LowRiskOverCommitmentArgs",
    "PluginArgsError",
    "TargetLoadPackingArgs",
    "parse_go_float",
    "parse_load_variation_risk_balancing",
    "parse_low_risk_over_commitment",
    "parse_target_load_packing",
]

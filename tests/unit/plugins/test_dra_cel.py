"""CEL selectors against device fixtures (``dynamic-resource-allocation/cel/compile_test.go`` cases)."""

from __future__ import annotations

import pytest

from scheduler.plugins.dynamicresources.cel import CelCache, CelError, device_activation

DEVICE = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "index": {"int": 3},
        "healthy": {"bool": True},
        "driverVersion": {"version": "1.2.3-rc.1"},
        "other.example.com/zone": {"string": "z1"},
    },
    "capacity": {"memory": {"value": "40Gi"}},
}
ACT = device_activation("gpu.example.com", DEVICE)
CACHE = CelCache()


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "a100"', True),
        ('device.attributes["gpu.example.com"].index > 2', True),
        ('device.attributes["gpu.example.com"].healthy', True),
        ('device.attributes["other.example.com"].zone == "z1"', True),
        ('"model" in device.attributes["gpu.example.com"]', True),
        ('"model" in device.attributes["unknown.example.com"]', False),
        ('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))', True),
        ('device.attributes["gpu.example.com"].driverVersion.major() == 1', True),
        ('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3-rc.1")', True),
        (
            'isSemver("1.0") || device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("32Gi"))',
            True,
        ),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("40960Mi")) == 0', True),
        ('device.attributes["gpu.example.com"].model.startsWith("a1")', True),
        ('device.attributes["gpu.example.com"].model.matches("^a[0-9]+$")', True),
        ("device.allowMultipleAllocations", False),
    ],
)
def test_expressions(expression: str, expected: bool) -> None:
    assert CACHE.get_or_compile(expression).matches(ACT) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ('device.attributes["gpu.example.com"].missing == 1', "no such key: missing"),
        ('device.attributes["gpu.example.com"].index', "could not be converted to bool"),
        ("device.driver ==", "compilation failed"),
        ('cel.bind(x, device.driver, x == "a")', "cel.bind is not supported"),
        ('quantity("nonsense") == quantity("1")', "invalid quantity"),
    ],
)
def test_errors(expression: str, message: str) -> None:
    with pytest.raises(CelError, match=message):
        CACHE.get_or_compile(expression).matches(ACT)

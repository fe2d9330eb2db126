"""benchmarks/bench_work_units.py: every operation is measured in the same run as the unit it is
divided by, and the table names each in words (no timing is asserted: speed is the benchmark's)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_work_units", ROOT / "benchmarks" / "bench_work_units.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_operation_is_a_ratio_to_a_value_of_the_same_round(bench):
    result = bench.measure(dim=3, rows=8, particles=4, repeats=1)
    assert set(result["ratio_to_value"]) == set(bench.OPERATIONS)
    assert result["ratio_to_value"]["value"] == [1.0, 1.0]
    for name in bench.OPERATIONS:
        seconds, ratio = result["seconds_per_item"][name], result["ratio_to_value"][name]
        assert all(s > 0 for s in seconds) and ratio == [s / v for s, v in zip(seconds, result["seconds_per_item"]["value"])]
    text = bench.table({**result, "cpus": 2, "load_average": 0.5})
    assert all(f"| {bench.WORDS[name]} |" in text for name in bench.OPERATIONS) and "d = 3, B = 8 rows, m = 4" in text

"""``benchmarks/bench_time_to_accuracy.py``'s time to accuracy (also ``bench_growing_n.py``'s): the
clock where the error meets the threshold and keeps it to the run's end, the rule of the workflow's
cost tables (``reports/cost.py``), not the first evaluation that meets it."""

from __future__ import annotations

import math

from bench_helpers import load_benchmark

bench = load_benchmark("bench_time_to_accuracy")


def test_time_to_accuracy_is_where_the_threshold_is_reached_and_kept():
    """The default PMD's curve at N = 10⁶ (docs/findings.md 2026-11-27, rounded): below 0.5 at 4/5
    of pass 1 (0.46, mid-pass), 0.03 at the pass end, above 0.5 again mid-pass 2, then below for
    good. The first reading (35 s) would count the mid-pass point; reached and kept is the first
    evaluation after which it never leaves again (52.8 s, 4/5 of pass 2)."""
    curve = {"mean_error": [147.1, 1.95, 1.38, 0.86, 0.46, 0.033, 0.36, 0.47, 0.55, 0.26, 0.046, 0.19],
             "wall_time": [3.9, 18.1, 23.9, 24.4, 35.0, 51.2, 51.6, 52.1, 52.4, 52.8, 69.2, 69.5]}
    reached, best, final = bench.summarise(curve, 0.5)
    assert reached == 52.8 and best == 0.033 and final == 0.19
    assert bench.summarise(curve, 0.03)[0] is None  # 0.033 is the best: never met
    assert bench.summarise({**curve, "mean_error": [0.1] * 12}, 0.5)[0] == 3.9  # met from the start
    nan_end = {**curve, "mean_error": curve["mean_error"][:-1] + [math.nan]}
    assert bench.summarise(nan_end, 0.5)[0] is None  # a run that ends on a failed score did not keep it
    assert bench.summarise({"error": "diverged"}, 0.5)[0] is None
    assert bench.first_kept({"mean_error": [0.6, 0.4, 0.7, 0.3]}, 0.5) == 3


def test_time_to_accuracy_without_compilation_subtracts_the_compilation_spent_by_then():
    """The clock less the compilation spent up to the kept evaluation, not the run's whole compilation
    (a program compiled later, after the threshold was reached, does not count there); a curve that
    did not time its compilation has no such time."""
    curve = {"mean_error": [2.0, 0.4, 0.3, 0.2], "wall_time": [1.0, 9.0, 9.5, 16.0],
             "compile_time": [0.0, 7.0, 7.0, 13.0]}
    assert bench.summarise(curve, 0.5)[0] == 9.0
    assert bench.summarise(curve, 0.5, compilation=False)[0] == 2.0
    untimed = {k: v for k, v in curve.items() if k != "compile_time"}
    assert math.isnan(bench.summarise(untimed, 0.5, compilation=False)[0])
    table = bench.table({"p": {"pmd": curve, "nuts": untimed}}, 0.5)
    assert "| pmd | 9.0 |" in table and "| pmd | 2.0 |" in table and "| nuts | not timed |" in table


def test_growing_n_table_gives_both_times_and_marks_reports_without_the_second(monkeypatch):
    """``bench_growing_n.py``'s table: with compilation, then without; a report written before the
    runner timed compilation says "not timed" there instead of passing for a run that never reached."""
    from bench_helpers import BENCHMARKS
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    growing = load_benchmark("bench_growing_n")
    cell = {"seconds": 17.0, "best": 0.03, "without_compilation": 2.5}
    report = {"ns": [10, 100], "dim": 3, "threshold": 0.5, "device": "cpu (cpu)", "nuts_grad_ms": [0.1, 0.2],
              "times": {"pmd": [cell, {**cell, "seconds": 20.0, "without_compilation": 3.0}],
                        "old": [{"seconds": 5.0, "best": 0.1}, {"seconds": None, "best": 0.7}]}}
    text = growing.table(report)
    assert "| pmd | 17.0 | 20.0 |" in text and "| pmd | 2.5 | 3.0 |" in text
    assert "| old | 5.0 | [0.7] |" in text and "| old | not timed | [0.7] |" in text
    assert "| pmd | - | - |" in text  # no error recorded where reached: a dash, not a number


def test_growing_n_states_the_error_where_each_method_reached_and_adds_particle_counts(monkeypatch):
    """The third table gives each method's error at the evaluation where it reached the threshold
    and kept it (the times compare at stated accuracies); ``--pmd-particles`` adds ``pmd_m<m>`` rows
    right after ``pmd``, the config's entry with ``num_particles: m``."""
    from bench_helpers import BENCHMARKS
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    growing = load_benchmark("bench_growing_n")
    curve = {"mean_error": [2.0, 0.46, 0.6, 0.099, 0.3], "wall_time": [1, 2, 3, 4, 5]}
    assert bench.error_there(curve, 0.5) == 0.099
    assert bench.error_there({**curve, "mean_error": [2.0] * 5}, 0.5) is None
    assert bench.error_there({"error": "diverged"}, 0.5) is None
    assert "| pmd | 0.099 |" in bench.table({"logistic": {"pmd": curve}}, 0.5)
    cell = {"seconds": 4.0, "best": 0.099, "without_compilation": 1.0, "error_there": 0.099}
    report = {"ns": [10], "dim": 3, "threshold": 0.5, "device": "cpu (cpu)", "nuts_grad_ms": [0.1],
              "times": {"pmd": [cell], "nuts": [{"seconds": 9.0, "best": math.nan, "without_compilation": 9.0,
                                                 "extrapolated": True}]}}
    text = growing.table(report)
    assert "| pmd | 0.099 |" in text and "| nuts | - |" in text
    # NUTS above the largest timed N: its stepping time there scaled by the gradient's time ratio
    assert abs(growing.extrapolated_seconds(11.5, 4.87, 43.37) - 11.5 * 43.37 / 4.87) < 1e-9
    section = {"methods": {"pmd": {"num_particles": 1000, "rejuvenate": "auto"}, "svi": {}}}
    labels = bench.with_particle_counts(section, ["pmd", "svi"], [250, 500])
    assert labels == ["pmd", "pmd_m250", "pmd_m500", "svi"]
    assert section["methods"]["pmd_m250"] == {"num_particles": 250, "rejuvenate": "auto", "method": "pmd"}

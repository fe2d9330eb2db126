"""``benchmarks/bench_time_to_accuracy.py``'s time to accuracy (also ``bench_growing_n.py``'s): the
clock where the moment criterion (``reports.cost.MOMENTS``) is met and kept to the run's end, the
rule of the workflow's cost tables (``reports/cost.py``), not the first evaluation that meets it;
the tables over seeds. The criterion's identity and NUTS's ladder: ``test_bench_criterion.py``."""

from __future__ import annotations

import math

from bench_helpers import load_benchmark, moment_curve

bench = load_benchmark("bench_time_to_accuracy")


def test_time_to_accuracy_is_where_the_criterion_is_reached_and_kept():
    """A curve whose score meets the criterion mid-pass (0.92), leaves it (1.1), then meets it for
    good: the first reading (35 s) would count the mid-pass point; reached and kept is the first
    evaluation after which it never leaves again (52.8 s)."""
    scores = [294.0, 3.9, 2.76, 1.72, 0.92, 0.066, 0.72, 0.94, 1.1, 0.52, 0.092, 0.38]
    wall = [3.9, 18.1, 23.9, 24.4, 35.0, 51.2, 51.6, 52.1, 52.4, 52.8, 69.2, 69.5]
    curve = moment_curve(scores, wall)
    reached, best, final = bench.summarise(curve)
    assert reached == 52.8 and math.isclose(best, 0.066) and math.isclose(final, 0.38)
    assert bench.summarise(moment_curve([0.2] * 12, wall))[0] == 3.9  # met from the start
    assert bench.summarise(moment_curve(scores[:-1] + [math.nan], wall))[0] is None  # ends on a failed score
    assert bench.summarise(moment_curve([1.5] * 12, wall))[0] is None  # never met
    assert bench.summarise({"error": "diverged"})[0] is None
    assert bench.first_kept(moment_curve([1.2, 0.8, 1.4, 0.6])) == 3
    assert bench.first_kept(moment_curve([0.5, 1.0, 0.9])) == 0  # exactly at the threshold counts as met


def test_time_to_accuracy_without_compilation_subtracts_the_compilation_spent_by_then():
    """The clock less the compilation spent up to the kept evaluation, not the run's whole compilation
    (a program compiled later, after the criterion was met, does not count there); a curve that did
    not time its compilation has no such time."""
    curve = {**moment_curve([4.0, 0.8, 0.6, 0.4], [1.0, 9.0, 9.5, 16.0]), "compile_time": [0.0, 7.0, 7.0, 13.0]}
    assert bench.summarise(curve)[0] == 9.0
    assert bench.summarise(curve, compilation=False)[0] == 2.0
    untimed = {k: v for k, v in curve.items() if k != "compile_time"}
    assert math.isnan(bench.summarise(untimed, compilation=False)[0])
    table = bench.table({"p": {"pmd": [curve], "nuts": [untimed]}})
    assert "| pmd | 9.0 (reached 1/1) |" in table and "| pmd | 2.0 (reached 1/1) |" in table
    assert "| nuts | not timed (reached 1/1) |" in table


def test_time_to_accuracy_table_reports_the_median_over_the_seeds_that_reached_and_how_many():
    """Three seeds: the median seconds over the two that reached, "reached 2/3"; none reached: the best
    score of any seed in brackets; every seed failed: "failed". The caption names the one criterion;
    the score where reached is the median over the seeds that reached."""
    wall = [1.0, 2.0, 3.0]
    seeds = [moment_curve([3.0, 0.5, 0.4], wall), moment_curve([3.0, 2.0, 0.9], wall),
             moment_curve([3.0, 2.0, 1.5], wall)]
    never = [moment_curve([3.0, 2.0, 1.7], wall), moment_curve([2.5, 1.2, 1.3], wall)]
    text = bench.table({"p": {"pmd": seeds, "sgld": never, "svi": [{"error": "x"}] * 2}})
    assert "| pmd | 2.5 (reached 2/3) |" in text
    assert "| sgld | [1.2] (reached 0/2) |" in text
    assert "| svi | failed |" in text
    assert bench.cost.MOMENTS.wording in text and bench.cost.MOMENTS.label() in text
    assert "| pmd | 0.700 |" in text and "| sgld | - |" in text  # median of 0.5 and 0.9


def test_growing_n_table_gives_both_times_over_seeds_and_extrapolates_nuts_seed_by_seed(monkeypatch):
    """``bench_growing_n.py``: per N and method the seeds' times (with and without compilation), the
    table's median over the seeds that reached and "reached k/n"; NUTS above the largest timed N
    carried seed by seed by the gradient's time ratio from the rung where that seed reached, its
    compilation there added in the table with compilation."""
    from bench_helpers import BENCHMARKS
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    growing = load_benchmark("bench_growing_n")
    wall, compile_time = [2.0, 4.0, 8.0], [1.0, 1.0, 1.0]
    pmd = [{**moment_curve(s, wall), "compile_time": compile_time}
           for s in ([2.0, 0.5, 0.6], [2.0, 1.5, 0.9], [2.0, 1.5, 1.2])]
    nuts = [{**moment_curve(s, wall, visited=[100, 300, 900]), "compile_time": compile_time, "ladder": [[1, 1]] * 3}
            for s in ([3.0, 0.8, 0.9], [3.0, 0.8, 1.2], [3.0, 1.1, 0.7])]
    curves = {10: {"pmd": pmd, "nuts": nuts}, 100: {"pmd": pmd}}
    times = growing.times_by_method([10, 100], curves, [1.0, 4.0], ["pmd"])
    assert times["pmd"][0]["seconds"] == [4.0, 8.0, None]
    assert times["nuts"][0]["seconds"] == [4.0, None, 8.0]  # seed 1: its longest rung misses
    assert times["nuts"][1]["without_compilation"] == [12.0, None, 28.0]  # (seconds - compilation) × 4
    assert times["nuts"][1]["seconds"] == [13.0, None, 29.0]  # and the compilation paid at the timed N
    assert times["nuts"][1]["gradients"] == [30.0, None, 90.0] and times["nuts"][1]["extrapolated"]
    report = {"ns": [10, 100], "dim": 3, "seeds": 3, "nuts_ladder": [1], "device": "cpu (cpu)",
              "nuts_grad_ms": [1.0, 4.0], "times": times}
    text = growing.table(report)
    assert "| pmd | 6.0 (reached 2/3) | 6.0 (reached 2/3) | 0.00 |" in text
    assert "| nuts | 6.0 (reached 2/3) | 21.0* (reached 2/3) |" in text
    assert "| nuts | 5.0 (reached 2/3) | 20.0* (reached 2/3) |" in text  # without compilation
    assert "| pmd | 0.700 | 0.700 |" in text and "| nuts | 0.750 | - |" in text
    # no timed N below: nothing to carry
    first = growing.times_by_method([10], {10: {"pmd": pmd}}, [1.0], ["pmd"])["nuts"][0]
    assert first["seconds"] == [None] * 3 and "- (reached 0/3)" in growing.cell_text(first["seconds"], first["best"], True)


def test_particle_counts_add_rows_after_pmd(monkeypatch):
    """``--pmd-particles`` adds ``pmd_m<m>`` rows right after ``pmd``, the config's entry with
    ``num_particles: m``; the growing-N extrapolation scales by the gradient's time ratio."""
    from bench_helpers import BENCHMARKS
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    growing = load_benchmark("bench_growing_n")
    assert abs(growing.extrapolated_seconds(11.5, 4.87, 43.37) - 11.5 * 43.37 / 4.87) < 1e-9
    section = {"methods": {"pmd": {"num_particles": 1000, "rejuvenate": "auto"}, "svi": {}}}
    labels = bench.with_particle_counts(section, ["pmd", "svi"], [250, 500])
    assert labels == ["pmd", "pmd_m250", "pmd_m500", "svi"]
    assert section["methods"]["pmd_m250"] == {"num_particles": 250, "rejuvenate": "auto", "method": "pmd"}

"""The benchmarks write their reports as JSON plus a Markdown table (the README's cost blocks):
the scripts' reports and the renderers agree on their fields (two scripts run end to end at tiny
sizes), and a report is written whole or not at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pmd_bench.reports import benchmarks as bench_report

ROOT = Path(__file__).resolve().parent.parent


def run_script(name: str, out: Path, *args: str) -> tuple[dict, str]:
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), "--out", str(out), *args],
                   check=True, cwd=ROOT, capture_output=True, timeout=600)
    return json.loads(out.read_text()), out.with_suffix(".md").read_text()


@pytest.mark.workflow
def test_pmd_step_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_pmd_step.py", tmp_path / "pmd_step.json",
                               "--particles", "64", "--dim", "4", "--batch", "8", "--repeats", "3")
    assert set(report["strategies"]) == {"particles", "kde"}
    for strategy, row in report["strategies"].items():
        assert row["step_ms"] > 0 and row["core_ms"] > 0
        assert f"| {strategy} |" in table
        assert f"**{row['step_over_core']:.2f}**" in table  # the ratio in the table is the report's


def test_block_rows_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_block_rows.py", tmp_path / "block_rows.json", "--rows", "300",
                               "--features", "2", "--particles", "8", "--chunks", "50", "--repeats", "1",
                               "--rounds", "2")
    entry = report["particles"]["8"]
    assert entry["default_rows"] == 4096 and set(entry["sizes"]) == {"50", "4096"}  # the default's block is added
    default = entry["sizes"]["4096"]["value_and_grad"]
    assert len(default["rounds_s"]) == 2 and default["over_default"] == 1.0
    assert "| 8 | 4,096 (default) |" in table and "| 8 | 50 |" in table
    assert f"**{entry['sizes']['50']['value']['over_default']:.2f}**" in table


def test_sgld_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_sgld_vs_blackjax.py", tmp_path / "sgld.json",
                               "--chains", "8", "--steps", "20", "--repeats", "2", "--num-data", "200", "--dim", "3",
                               "--batch", "10")
    assert report["ratio_fastest"] > 0
    assert f"**{report['ratio_fastest']:.2f}**" in table


@pytest.mark.workflow
def test_batched_logistic_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_batched_logistic.py", tmp_path / "batched_logistic.json",
                               "--methods", "smc", "--seeds", "2", "--rows", "400", "--passes", "1")
    row = report["methods"]["smc"]
    assert row["steps"] == 4 and row["sequential_s"] > 0 and row["batched_s"] > 0
    assert row["extrapolated_s"]["batched"] >= row["batched"]["compile_s"]
    assert f"**{row['speedup']:.2f}×**" in table and "synthetic logistic data, 400 rows" in table



@pytest.mark.workflow
def test_batched_logistic_benchmark_times_a_method_with_a_burn_in(tmp_path):
    # paper.yaml's SGLD keeps draws after burn_in=1000 steps: the 2-step compile-time run must still
    # keep one (the runner refuses a run that retains none; this failed before the benchmark set it to 1)
    report, _ = run_script("bench_batched_logistic.py", tmp_path / "batched_logistic.json",
                           "--methods", "sgld", "--seeds", "2", "--rows", "400", "--passes", "260")
    row = report["methods"]["sgld"]
    assert row["steps"] == 1040 and row["sequential"]["ms_per_step"] > 0


@pytest.mark.workflow
def test_sparse_gp_cost_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_sparse_gp_cost.py", tmp_path / "sparse_gp_cost.json",
                               "--rows", "600", "--dim", "3", "--inducing", "8", "--batch", "16", "--steps", "2",
                               "--rounds", "1")
    assert report["methods"]["sod"]["ms_per_step"] > 0 and report["cholesky_ms"]["median"] > 0
    for label, row in report["methods"].items():
        assert f"| {label} |" in table and f"{row['x_cholesky']:.2f}" in table
    assert f"**{report['svi_over_gpjax']:.2f}×**" in table


@pytest.mark.workflow
def test_inducing_moves_benchmark_writes_its_table(tmp_path):
    report, table = run_script("bench_inducing_moves.py", tmp_path / "inducing_moves.json",
                               "--rows", "700", "--dim", "3", "--inducing", "16", "--block", "2", "--chunk-rows", "256",
                               "--rounds", "1")
    assert report["fresh_ms"] > 0 and report["update_ms"] > 0
    assert report["max_abs_diff"] < 1e-8 * abs(report["log_evidence"])  # the same evidence both ways
    assert f"**{report['update_over_fresh']:.3f}×**" in table and "700 rows, d = 3, M = 16" in table


@pytest.mark.workflow
def test_pmd_profile_writes_its_table(tmp_path):
    # the script broke when the default moves gained the independence sweeps (their kernel= was missing)
    # --xla-flags reach XLA before JAX starts its backend: the dump of one small program appears
    flags = f"--xla_dump_to={tmp_path / 'dump'} --xla_dump_hlo_module_re=.*initial_state.*"
    report, table = run_script("profile_pmd_default.py", tmp_path / "profile.json",
                               "--rows", "1000", "--features", "3", "--particles", "32", "--batch", "100",
                               f"--xla-flags={flags}", "--parts")
    assert any((tmp_path / "dump").iterdir()) and report["xla_flags"] == flags
    assert report["move_steps"] and report["full_round_s"] > 0 and report["rows_read"] > 2 * 1000
    assert report["moves_s"] == pytest.approx(report["run_s"] - report["streaming_s"])
    assert f"| compile the run's scan (streaming steps and moves) | {report['compile_s']:.3g} |" in table
    assert f"of which the moves ({len(report['move_steps'])} rounds)" in table and "N = 1,000, d = 4" in table
    # every piece left out makes a smaller program than the default's, and the moves are more than half of it
    parts = report["parts"]
    assert set(parts) == {"without the independence sweeps", "with one global (Silverman) kernel"}
    assert all(0 < report["streaming_kernels"] < part["kernels"] < report["kernels"] for part in parts.values())
    assert report["streaming_kernels"] < report["kernels"] / 2
    assert (f"| the run (the default) | {report['kernels']:,} | {report['compile_s']:.3g} | "
            f"{1e3 * report['compile_s'] / report['kernels']:.2f} |") in table

@pytest.mark.parametrize("render, report, expected", [
    (bench_report.logistic_cost,
     {"backend": "cpu", "cpus": 2, "batch": 100, "dim": 51, "N": 1000, "passes": 5, "steps_timed": 3,
      "reference_ms_per_step": 0.5,
      "methods": {"pmd": {"us_per_point": 40.0, "ms_per_step": 4.0, "x_likelihood": 8.0, "full_run_hours": 0.1},
                  "smc": {"us_per_point": 5.0, "ms_per_step": 0.5, "x_likelihood": 1.0, "full_run_hours": 0.01}},
      "gibbs": {"1000": {"us_per_row": 0.9, "seconds_per_sweep": 0.0009}}, "gibbs_full_run_hours": 0.4},
     ["| pmd | 8.00 | 40 | 6 min |", "| smc | 1.00 | 5 | 36 s (one pass) |", "0.9 µs (1,000 rows)", "24 min"]),
    (bench_report.sparse_gp_cost,
     {"backend": "cpu", "cpus": 2, "dtype": "float64", "rows": 100, "dim": 3, "inducing": 8, "batch": 4,
      "steps_timed": 2, "rounds": 1, "cholesky_ms": {"median": 2.0, "min": 1.0},
      "methods": {"pmd": {"ms_per_step": 32.0, "ms_min": 30.0, "x_cholesky": 16.0, "x_cholesky_per_particle": 1.0}},
      "svi_over_gpjax": 0.5, "pmd_state_mib": 1.5, "peak_rss_mib": 900.0},
     ["| pmd | 32 | 16.00 | 1.000 |", "**0.50×**", "900 MiB"]),
    (bench_report.lda_cost,
     {"corpus": "c", "documents": 10, "tokens_per_document": 25.0, "K": 100, "W": 50, "batch": 100, "platform": "cpu",
      "ms_per_document": {"svi_hoffman": 0.25, "sklearn": 0.5}, "tokens_per_second": {"svi_hoffman": 1e5, "sklearn": 5e4},
      "svi_speed_ratio": {"sklearn": 2.0}, "paper_run_hours": {"svi_hoffman": 0.05, "sklearn": 0.1}},
     ["| svi_hoffman | 0.25 | 100,000 | 3 min |", "| sklearn | 0.5 | 50,000 | 6 min |", "2.00× sklearn's"]),
    (bench_report.batched_seeds,
     {"device": "cpu", "seeds": 10, "rounds": 2, "N": 1000, "batch": 10, "steps": 200, "particles": 300,
      "methods": {"pmd": {"sequential_s": 100.0, "batched_s": 25.0, "speedup": 4.0}}},
     ["10 seeds of the mixture", "| pmd | 100 | 25 | **4.00×** |"]),
    (bench_report.batched_logistic,
     {"device": "cpu", "platform": "cpu", "config": "paper.yaml", "data": "synthetic", "rows": 1000, "dim": 51,
      "passes": 5, "seeds": 10, "paper_steps": 79441,
      "methods": {"sgld": {"steps": 50, "sequential_s": 30.0, "batched_s": 6.0, "speedup": 5.0,
                           "sequential": {"compile_s": 20.0, "ms_per_step": 200.0},
                           "batched": {"compile_s": 2.0, "ms_per_step": 80.0},
                           "extrapolated_s": {"sequential": 36000.0, "batched": 7200.0}}}},
     ["| sgld | 50 | 30 | 6 | **5.00×** | 200 / 80 | 10 h | 2 h |", "79,441 steps"]),
    (bench_report.batched_logistic_compare,
     {"cpu": {"device": "cpu", "cpus": 2, "methods": {"pmd": {"extrapolated_s": {"sequential": 72000.0}}}},
      "accelerator": {"device": "H200", "paper_steps": 79441, "seeds": 10,
                      "methods": {"pmd": {"extrapolated_s": {"batched": 1800.0}}}}},
     ["| pmd | 20 h | 30 min | **40.0×** |", "not a same-run ratio"]),
    (bench_report.workflow_plan,
     {"configfiles": ["paper.yaml"], "jobs": 3, "cores": 2, "total_s": 7200.0, "fixed_s": 600.0,
      "longest_s": 3600.0, "wall_s": 7200.0,
      "rules": {"mixture_run": {"jobs": 2, "seconds": 7000.0, "fixed_s": 400.0, "longest_s": 3600.0},
                "mixture_figures": {"jobs": 1, "seconds": 200.0, "fixed_s": 200.0, "longest_s": 200.0}}},
     ["**3 jobs**", "at most **2 h**", "| mixture_run | 2 | 1.94 h | 6.67 min | 60 min |", "extrapolated"]),
    (bench_report.particle_methods,
     {"settings": {"N": 1000, "batch": 10, "m": 300, "steps": 5, "rounds": 1, "device": "cpu"},
      "ms_per_step": {"npl": 1.0, "npl_sequential": 2.0}, "us_per_point": {"npl": 100.0, "npl_sequential": 200.0},
      "npl_parallel_speedup": 2.0, "svgd_over_blackjax": 0.6},
     ["| npl | 1 | 100 |", "**2.00×**", "**0.60×**"]),
])
def test_each_table_carries_the_reports_numbers(tmp_path, render, report, expected):
    out = tmp_path / "r.json"
    bench_report.write(out, report, render)
    assert {k: v for k, v in json.loads(out.read_text()).items() if k not in ("load_average", "cpus")} == {
        k: v for k, v in report.items() if k != "cpus"}
    table = out.with_suffix(".md").read_text()
    for text in expected:
        assert text in table, (text, table)


def test_a_report_that_cannot_be_rendered_leaves_the_old_files(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    with pytest.raises(KeyError):
        bench_report.write(out, {"settings": {}}, bench_report.particle_methods)
    assert out.read_text() == "old" and not out.with_suffix(".md").exists()
    with pytest.raises(ValueError, match="give a .json path"):
        bench_report.write(tmp_path / "r.md", {}, bench_report.particle_methods)


def test_a_plans_command_is_the_one_a_user_types():
    """The plan's command runs as written: ``--configfile`` only when config files were named (the
    embedded default takes none); it once read ``snakemake --configfile (default)``."""
    plan = {"jobs": 1, "cores": 2, "total_s": 60.0, "fixed_s": 60.0, "longest_s": 60.0, "wall_s": 60.0,
            "rules": {"rate": {"jobs": 1, "seconds": 60.0, "fixed_s": 60.0, "longest_s": 60.0}}}
    assert bench_report.workflow_plan({**plan, "configfiles": []}).startswith("`snakemake` (")
    assert bench_report.workflow_plan({**plan, "configfiles": ["workflow/config/standard.yaml"]}).startswith(
        "`snakemake --configfile workflow/config/standard.yaml` (")

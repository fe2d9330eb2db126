"""benchmarks/config_time.py's report: one row per config merged into the JSON, the
Markdown table rendered from it (the README's generated block), the snakemake arguments per config
and the CPU model; not the timing itself (a whole workflow run)."""

from __future__ import annotations

import json

import pytest

from bench_helpers import load_benchmark
from pmd_bench.reports import benchmarks as bench_report

config_time = load_benchmark("config_time")


def _row(config: str, wall_s: float, commit: str = "0123456789abcdef", mirror: bool = False) -> dict:
    return {"config": config, "command": " ".join(["snakemake", *config_time.snakemake_args(config, 2)]),
            "jobs": 80, "wall_s": wall_s, "cores": 2, "machine": "AMD EPYC", "date": "2026-11-26 03:00 UTC",
            "commit": commit, "mirror": mirror, "load_average": 1.5}


def test_a_configs_row_replaces_its_old_one_and_keeps_the_others():
    report = config_time.merge({}, _row("standard", 2580.0))
    report = config_time.merge(report, _row("default", 1000.0, commit="aaaa"))
    report = config_time.merge(report, _row("default", 900.0, commit="bbbb", mirror=True))
    assert set(report["configs"]) == {"default", "standard"}
    assert report["configs"]["default"]["wall_s"] == 900.0 and report["configs"]["default"]["mirror"] is True
    assert report["configs"]["standard"]["wall_s"] == 2580.0


def test_the_table_puts_the_default_first_with_each_rows_facts():
    report = config_time.merge(config_time.merge({}, _row("standard", 2580.0)), _row("default", 900.0))
    table = bench_report.config_times(report)
    lines = [line for line in table.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| config | command | jobs | wall time |")
    assert lines[1] == ("| default | `snakemake --cores 2` | 80 | **15.0 min** | 2 | AMD EPYC (load average 1.5 at the "
                        "end) | 2026-11-26 03:00 UTC | `0123456789` | unset |")
    assert lines[2].startswith("| standard | `snakemake --cores 2 --configfile workflow/config/standard.yaml` | 80 | "
                               "**43.0 min** |")


def test_a_bad_row_or_report_is_named(tmp_path):
    with pytest.raises(ValueError, match="lacks wall_s"):
        config_time.merge({}, {k: v for k, v in _row("default", 1.0).items() if k != "wall_s"})
    with pytest.raises(ValueError, match="not a mapping"):
        config_time.merge({"configs": []}, _row("default", 1.0))
    broken = tmp_path / "config_times.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="config_times.json is not JSON"):
        config_time.read_report(broken)
    assert config_time.read_report(tmp_path / "absent.json") == {}
    broken.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="does not hold a JSON object"):
        config_time.read_report(broken)


def test_the_default_names_no_config_file_and_an_unknown_config_is_refused():
    assert config_time.snakemake_args("default", 2) == ["--cores", "2"]
    assert config_time.snakemake_args("ci", 4) == ["--cores", "4", "--configfile", "workflow/config/ci.yaml"]
    with pytest.raises(ValueError, match="no config 'nope': workflow/config/ holds .*standard"):
        config_time.snakemake_args("nope", 2)


def test_the_cpu_model_is_read_from_cpuinfo():
    assert config_time.cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t: x\n") == "AMD EPYC 9B14"
    assert config_time.cpu_model("processor\t: 0\n") == "unknown CPU"

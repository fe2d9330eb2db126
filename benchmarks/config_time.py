"""The measured wall time of the whole workflow on one config, from a fresh clone.

``python benchmarks/config_time.py default`` clones the repository's HEAD into a temporary folder
and runs ``python -m snakemake --cores 2`` there with this interpreter (``standard`` adds
``--configfile workflow/config/standard.yaml``; ``default`` names no config file, so the
Snakefile's embedded default applies), with nothing cached: the clone's own empty JAX compilation
cache (``JAX_COMPILATION_CACHE_DIR``), results folder, data cache (``PMD_BENCH_DATA_DIR``: source
files are downloaded, or copied from the mirror) and MLflow store (``MLFLOW_TRACKING_URI``).
``PMD_BENCH_DATA_MIRROR`` is passed on as set, and recorded. The clone is removed afterwards.

The jobs import the harness from this interpreter's installation, not from the clone: the script
refuses to run unless that installation is this checkout and the checkout's tracked files equal
HEAD, so the code timed is the commit recorded.

It merges one row per config (config, command, jobs, wall time, cores, CPU model, date, commit,
mirror set or not, load average at the end) into ``results/benchmarks/config_times.json`` and
re-renders ``config_times.md`` (:func:`reports.benchmarks.config_times`), both written atomically
(:func:`reports.benchmarks.write`);
Snakemake's output goes to ``config_times_<config>.log`` beside them. A failed run writes no row
and exits 1 with the log's tail.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pmd_bench import workflow
from pmd_bench.reports import benchmarks as bench_report

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "workflow" / "config"
DEFAULT_OUT = ROOT / "results" / "benchmarks" / "config_times.json"
ROW_KEYS = ("config", "command", "jobs", "wall_s", "cores", "machine", "date", "commit", "mirror", "load_average")
DONE = re.compile(r"^(\d+) of (\d+) steps \(100%\) done$", re.M)


def snakemake_args(config: str, cores: int) -> list[str]:
    """The arguments after ``python -m snakemake`` for ``config`` (a name in workflow/config/, without
    ``.yaml``; ``default``: none, the Snakefile's embedded default)."""
    if not (CONFIG_DIR / f"{config}.yaml").is_file():
        names = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml"))
        raise ValueError(f"no config {config!r}: workflow/config/ holds {', '.join(names)}")
    return ["--cores", str(cores)] + ([] if config == "default" else ["--configfile", f"workflow/config/{config}.yaml"])


def cpu_model(cpuinfo: str) -> str:
    """The first ``model name`` of a ``/proc/cpuinfo`` text, or ``unknown CPU``."""
    found = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    return found.group(1).strip() if found else "unknown CPU"


def merge(report: dict[str, Any], row: dict[str, Any]) -> dict[str, Any]:
    """``report`` (``{"configs": {name: row}}``, or empty) with ``row`` in place of its config's row."""
    missing = [key for key in ROW_KEYS if key not in row]
    if missing:
        raise ValueError(f"config_time: a row lacks {', '.join(missing)}")
    configs = report.get("configs", {})
    if not isinstance(configs, dict):
        raise ValueError("config_time: the report's 'configs' is not a mapping of config name to row")
    return {**report, "configs": {**configs, row["config"]: row}}


def read_report(path: Path) -> dict[str, Any]:
    """The report at ``path``, or an empty one when there is none yet."""
    if not path.exists():
        return {}
    try:
        report = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ValueError(f"config_time: {path} is not JSON ({error}); move it away to start a new report") from None
    if not isinstance(report, dict):
        raise ValueError(f"config_time: {path} does not hold a JSON object")
    return report


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"config_time: git {' '.join(args)} failed in {cwd}:\n{done.stderr.strip()}")
    return done.stdout.rstrip()


def check_installed_code() -> str:
    """HEAD's commit, after checking that the jobs will import this checkout's code at that commit."""
    installed = Path(workflow.__file__).resolve().parent.parent
    if installed != ROOT:
        raise RuntimeError(f"config_time: this interpreter imports the harness from {installed}, not from {ROOT}: "
                           "run the script with the interpreter of a venv installed from this checkout")
    changed = _git("status", "--porcelain", "--untracked-files=no")
    if changed:
        raise RuntimeError("config_time: tracked files differ from HEAD, and the jobs would import them rather than "
                           f"the commit timed; commit or stash first:\n{changed}")
    return _git("rev-parse", "HEAD")


def time_config(config: str, cores: int, log: Path) -> dict[str, Any]:
    """Run the workflow on ``config`` in a fresh clone of HEAD; its row (:data:`ROW_KEYS`)."""
    args = snakemake_args(config, cores)
    commit = check_installed_code()
    mirror = os.environ.get("PMD_BENCH_DATA_MIRROR")
    log.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pmd-bench-config-time-") as tmp:
        clone = Path(tmp, "repo")
        _git("clone", "--quiet", "--no-checkout", str(ROOT), str(clone))
        _git("checkout", "--quiet", "--detach", commit, cwd=clone)
        env = {**os.environ, "TQDM_DISABLE": "1", "MPLBACKEND": "Agg",
               "JAX_COMPILATION_CACHE_DIR": str(clone / ".jax-cache"), "PMD_BENCH_DATA_DIR": str(clone / "data"),
               "MLFLOW_TRACKING_URI": f"sqlite:///{clone / 'mlruns.db'}"}
        start = time.monotonic()
        with open(log, "w") as out:
            done = subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=clone, env=env,
                                  stdout=out, stderr=subprocess.STDOUT)
        wall = time.monotonic() - start
    text = log.read_text()
    steps = DONE.findall(text)
    if done.returncode != 0 or not steps:
        tail = "\n".join(text.splitlines()[-30:])
        raise RuntimeError(f"config_time: snakemake on {config} failed (exit {done.returncode}); log {log}:\n{tail}")
    return {"config": config, "command": " ".join(["snakemake", *args]), "jobs": int(steps[-1][1]),
            "wall_s": round(wall, 1), "cores": cores, "machine": cpu_model(Path("/proc/cpuinfo").read_text()),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "commit": commit,
            "mirror": bool(mirror), "load_average": round(os.getloadavg()[0], 2)}


def main(argv: list[str] | None = None) -> int:
    """Time one config and merge its row into the report (module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("config", help="a config of workflow/config/ without .yaml (default: the embedded default)")
    parser.add_argument("--cores", type=int, default=2, help="snakemake --cores (default 2, this project's machine)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the report's JSON (the .md is written beside it)")
    args = parser.parse_args(argv)
    if args.out.suffix != ".json":
        parser.error(f"--out {args.out}: give a .json path (the .md table is written beside it)")
    try:
        report = read_report(args.out)
        row = time_config(args.config, args.cores, args.out.with_name(f"config_times_{args.config}.log"))
        report = merge(report, row)
    except (ValueError, RuntimeError) as error:
        print(error, file=sys.stderr)
        return 1
    bench_report.write(args.out, report, bench_report.config_times)
    print(json.dumps(row, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

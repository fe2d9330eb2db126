"""What a config's workflow will run and how long it takes here, before it runs.

``pmd-bench plan workflow/config/paper.yaml --out plan.json`` dry-runs Snakemake on the config (its
results folder redirected to an empty one, so every job is listed whatever this checkout has built),
counts the jobs per rule, and adds up each job's expected seconds from the measured anchors of
:mod:`workflow.resources` (``fixed_s + rate_s × work``: the scheduler's ``runtime`` without its
safety factor). Each anchor's rate is the slowest method's measured rate, so a job's figure is an
upper estimate for the faster methods of its rule. On ``cores`` single-threaded job slots any
greedy schedule (Snakemake's) ends within ``total / cores + longest job`` (Graham 1966): that is
the wall time reported, an upper estimate labelled as extrapolated from measurements, never as a
measured run.

The anchors are a scheduler's bounds, not predictions: ``fixed_s`` is the slowest job of its rule
at a small config on a loaded machine (start-up, compilation, evaluation), charged to every job.
Where those fixed parts dominate (the ``ci`` config: 7.5 minutes measured on an idle machine) the
sum overestimates several-fold; the table shows the fixed part of each rule beside its total so a
reader sees which kind of number it is. At the ``paper`` configs the scaled part dominates.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from . import resources
from .config import DEFAULT_CONFIG, validate

ROOT = Path(__file__).resolve().parent.parent
JOB = re.compile(r"^(?:local)?rule (\w+):\n(.*?)(?=^\S|\Z)", re.S | re.M)
WILDCARDS = re.compile(r"^\s+wildcards: (.*)$", re.M)
TOTAL = re.compile(r"^total\s+(\d+)$", re.M)
#: a rule running all of a method's seeds as one program -> (the per-seed rule, its config section):
#: charged the seeds' per-seed times in turn, as ``resources.batch_resources`` asks a scheduler
BATCHED = {"mixture_run_batched": ("mixture_run", "mixture"), "logistic_run_batched": ("logistic_run", "logistic"),
           "posteriordb_run_batched": ("posteriordb_run", "posteriordb"),
           "posteriordb_run_tuned_batched": ("posteriordb_run_tuned", "posteriordb")}


def merged_config(configfiles: Sequence[str | Path]) -> dict[str, Any]:
    """The config Snakemake runs with ``--configfile`` ``configfiles``: each file deep-merged over
    the ones before it (the Snakefile's default applies only when none is given)."""
    from snakemake.utils import update_config

    config: dict[str, Any] = {}
    for path in configfiles or [DEFAULT_CONFIG]:
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"plan: config file {path} does not exist")
        update_config(config, yaml.safe_load(path.read_text()) or {})
    return validate(config, " + ".join(map(str, configfiles)))


def dry_run(configfiles: Sequence[str | Path]) -> list[tuple[str, dict[str, str]]]:
    """``(rule, wildcards)`` of every job ``snakemake -n`` lists for ``configfiles`` (none: the
    embedded default, named explicitly since the results overlay alone would make Snakemake skip
    it) with an empty results folder (rule ``all`` left out)."""
    with tempfile.TemporaryDirectory(prefix="pmd-bench-plan-") as tmp:
        overlay = Path(tmp, "results_dir.yaml")
        overlay.write_text(yaml.safe_dump({"results_dir": str(Path(tmp, "results"))}))
        files = [str(Path(f).resolve()) for f in configfiles or [DEFAULT_CONFIG]]
        done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", *files, str(overlay)], cwd=ROOT,
                              capture_output=True, text=True, timeout=600, env=os.environ)
    if done.returncode != 0:
        raise RuntimeError(f"plan: snakemake -n on {', '.join(map(str, configfiles))} failed:\n{done.stderr[-3000:]}")
    jobs = []
    for rule, body in JOB.findall(done.stdout):
        if rule == "all":
            continue
        if rule not in resources.ANCHORS and rule not in BATCHED:
            raise KeyError(f"plan: rule {rule} has no anchor in workflow/resources.py ANCHORS")
        line = WILDCARDS.search(body)
        wildcards = dict(item.split("=", 1) for item in line.group(1).split(", ")) if line else {}
        jobs.append((rule, wildcards))
    listed = TOTAL.search(done.stdout)
    if listed is None or int(listed.group(1)) != len(jobs) + 1:  # + rule all
        raise RuntimeError(f"plan: parsed {len(jobs)} jobs besides 'all', but snakemake's job stats say "
                           f"{listed.group(1) if listed else 'nothing'} in all")
    return jobs


def summarise(jobs: list[tuple[str, dict[str, str]]], config: dict[str, Any], cores: int) -> dict[str, Any]:
    """Jobs and expected seconds per rule, the total, the longest job and the wall time's upper
    estimate on ``cores`` job slots (module docstring)."""
    per_rule: dict[str, dict[str, float]] = defaultdict(
        lambda: {"jobs": 0, "seconds": 0.0, "fixed_s": 0.0, "longest_s": 0.0})
    for rule, wildcards in jobs:
        anchor, repetitions = rule, 1
        if rule in BATCHED:
            anchor, section = BATCHED[rule]
            repetitions = config[section]["seeds"]
        seconds = repetitions * resources.expected_seconds(anchor, config, wildcards)
        row = per_rule[rule]
        row["jobs"] += 1
        row["seconds"] += seconds
        row["fixed_s"] += repetitions * resources.ANCHORS[anchor].fixed_s
        row["longest_s"] = max(row["longest_s"], seconds)
    total = sum(r["seconds"] for r in per_rule.values())
    fixed = sum(r["fixed_s"] for r in per_rule.values())
    longest = max((r["longest_s"] for r in per_rule.values()), default=0.0)
    return {"jobs": len(jobs), "cores": cores, "total_s": total, "fixed_s": fixed, "longest_s": longest,
            "wall_s": total / cores + longest,
            "rules": dict(sorted(per_rule.items(), key=lambda kv: -kv[1]["seconds"]))}


def plan(configfiles: Sequence[str | Path], cores: int) -> dict[str, Any]:
    """:func:`summarise` of the dry run of ``configfiles``, and whether an offline data mirror is set
    (without one the posteriordb experiment and the real corpora drop out of the plan)."""
    from pmd_bench.datasets.settings import resolve_settings

    config = merged_config(configfiles)
    return {"configfiles": [str(f) for f in configfiles],
            "offline_mirror": resolve_settings(config["datasets"]).mirror is not None,
            **summarise(dry_run(configfiles), config, cores)}

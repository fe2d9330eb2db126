"""The logistic experiment's repetitions batched on one device against one after another, and the
paper-scale run extrapolated from them.

Settings: a config's ``logistic`` section (default ``workflow/config/paper.yaml``: H.2's batch 100,
5 passes, the methods' entries as written there), ``--seeds`` repetitions of each ``--methods``
label, on ``--rows`` training rows of d = 51 (PCA-50 + bias). Data: the prepared classification
file ``--data`` when given, else a synthetic well-specified logistic data set of that shape
(``x ~ N(0, I)``, ``w* ~ N(0, I/50)``; labelled so in the report). A step of these methods touches
only its batch, so its cost does not depend on the rows held (the gather is one ``take``), which is
what makes the extrapolation below sound; the redraw frequency follows the step-size schedule of
the whole run, which is why the timed run takes every pass of its rows rather than a prefix.

For each method: one run per seed (``pmd.run``, compiling each time, as one job per seed does)
and one ``pmd.run_batched`` over all seeds; each at the full schedule (``--passes`` over ``--rows``
in batches of the config's size) and at a 2-step one, so ``compile_s`` (the 2-step run) and ``ms_per_step`` (the difference over the steps
between) separate. Evaluation is off. ``extrapolated_s``: the paper run's ``--paper-steps`` steps
(79,441 = 1,588,815 rows × 5 passes / 100) at that cost plus compilation, for the 10 seeds one
after another and batched: what the workflow's paper config would spend on the method's stepping.

Known limit (measured 2026-11-24, jax 0.10.2 on this 2-core CPU): the robust ``pmd`` batched over
seeds deadlocks XLA's CPU runtime on this model at d = 51 (all threads asleep, the host waiting on
the buffers; at any m tried, 100 to 1,000), while d = 3 and d = 20 run, as do ``pmd_paper``, SGLD
and SMC; so ``pmd`` is not among the default ``--methods``. Per-seed runs of ``pmd`` are unaffected.

Run here (CPU): ``python benchmarks/bench_batched_logistic.py``. On an accelerator the same command
writes ``batched_logistic_gpu.json``; ``--compare`` then puts a CPU file and a GPU file side by side
(the question: the 10 paper-scale repetitions batched on the accelerator against this CPU
one after another). Writes ``results/benchmarks/batched_logistic_<platform>.json`` and its ``.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import jax
import numpy as np
import yaml

import pmd
from pmd.models.logistic import BayesianLogisticRegression, labelled
from pmd_bench.reports import benchmarks as bench_report
from pmd_bench.workflow import methods

PAPER_STEPS = math.ceil(1_588_815 * 5 / 100)


def synthetic(rows: int, dim: int = 50, seed: int = 0) -> dict:
    """A well-specified logistic data set of the experiment's shape (bias column appended)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(rows, dim)).astype(np.float32)
    w = rng.normal(size=dim) / np.sqrt(dim)
    y = np.where(rng.random(rows) < 1 / (1 + np.exp(-(x @ w))), 1, -1).astype(np.int8)
    return labelled(x, y)


def _timed(call) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(call())
    return time.perf_counter() - t0


def measure(label: str, spec: dict, section: dict, train: dict, seeds: int, passes: float) -> dict:
    """Sequential and batched wall time of ``label`` at the full schedule and at 2 steps."""
    spec, settings = methods.split_spec(label, dict(spec), section)
    model = BayesianLogisticRegression(train["x"].shape[1], section["prior_std"]).model()
    keys = [jax.random.key(s) for s in range(seeds)]
    rows, batch = len(train["y"]), settings["batch_size"]
    out = {}
    full_steps = math.ceil(passes * rows / batch)
    # both runs use the method built for the full schedule (its step sizes and redraws), so the
    # 2-step run compiles the same program and stops early; only an integer burn-in longer than 2
    # steps is set to 1 there (the runner refuses a run that would retain no draw; the compiled
    # program differs in that one constant)
    short_spec = dict(spec)
    if isinstance(short_spec.get("burn_in"), int) and short_spec["burn_in"] >= 2:
        short_spec["burn_in"] = 1
    full_method = methods.build(label, dict(spec), model, train, full_steps)
    built = {"full": full_method,
             "short": full_method if short_spec == spec else methods.build(label, short_spec, model, train, full_steps)}
    for name, steps in (("full", full_steps), ("short", 2)):
        method = built[name]
        run_settings = {"batch_size": batch, "num_passes": (steps - 0.5) * batch / rows}  # ceil(): exactly steps
        sequential = _timed(lambda: [pmd.run(method, train, k, **run_settings).posterior.mean() for k in keys])
        batched = _timed(lambda: [r.posterior.mean() for r in pmd.run_batched(method, train, keys, **run_settings)])
        out[name] = {"steps": steps, "sequential_s": sequential, "batched_s": batched}
        print(json.dumps({label: {name: out[name]}}), flush=True)
    full, short = out["full"], out["short"]
    span = full["steps"] - short["steps"]
    result = {"steps": full["steps"], "sequential_s": full["sequential_s"], "batched_s": full["batched_s"],
              "speedup": full["sequential_s"] / full["batched_s"]}
    for mode in ("sequential", "batched"):
        compile_s = short[f"{mode}_s"]
        per_step = max(full[f"{mode}_s"] - compile_s, 0.0) / span
        result[mode] = {"compile_s": compile_s, "ms_per_step": 1e3 * per_step}
    return result


def extrapolate(result: dict, paper_steps: int) -> dict:
    """The paper run's stepping time for every seed, one after another and batched, at the measured cost."""
    return {mode: result[mode]["compile_s"] + paper_steps * result[mode]["ms_per_step"] / 1e3
            for mode in ("sequential", "batched")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", type=Path, default=Path("workflow/config/paper.yaml"))
    parser.add_argument("--methods", nargs="+", default=["pmd_paper", "sgld", "smc"],
                        help="labels of the config's logistic.methods (pmd: see the known limit above)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--rows", type=int, default=24_000,
                        help="training rows (synthetic data; ignored with --data); the default gives 1,200 steps at "
                             "5 passes of batch 100, past the paper config's SGLD burn-in of 1,000")
    parser.add_argument("--passes", type=float, default=None, help="default: the config's num_passes")
    parser.add_argument("--data", type=Path, help="a prepared classification file instead of synthetic data")
    parser.add_argument("--paper-steps", type=int, default=PAPER_STEPS)
    parser.add_argument("--out", type=Path, help="default results/benchmarks/batched_logistic_<platform>.json")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("CPU_JSON", "ACCELERATOR_JSON"),
                        help="write the accelerator-against-CPU table from two earlier reports and exit")
    args = parser.parse_args()
    if args.compare:
        cpu, accelerator = (json.loads(p.read_text()) for p in args.compare)
        out = args.out or Path("results/benchmarks/batched_logistic_compare.json")
        bench_report.write(out, {"cpu": cpu, "accelerator": accelerator, "cpus": cpu.get("cpus")},
                           bench_report.batched_logistic_compare)
        print(out.with_suffix(".md").read_text())
        return
    section = yaml.safe_load(args.config.read_text())["logistic"]
    unknown = sorted(set(args.methods) - set(section["methods"]))
    if unknown:
        raise SystemExit(f"{args.config}: logistic.methods has no {unknown} (it has {sorted(section['methods'])})")
    if args.data:
        # Imported here: the experiment's module brings MLflow, which the synthetic default (and an
        # accelerator machine without MLflow) does not need.
        from pmd_bench.workflow.experiments.logistic import load_data
        train = load_data(args.data)[0]
    else:
        train = synthetic(args.rows)
    passes = args.passes if args.passes is not None else section["num_passes"]
    platform = jax.devices()[0].platform
    report = {"device": jax.devices()[0].device_kind, "platform": platform, "config": str(args.config),
              "data": str(args.data) if args.data else f"synthetic logistic data, {len(train['y']):,} rows",
              "rows": len(train["y"]), "dim": int(train["x"].shape[1]), "passes": passes, "seeds": args.seeds,
              "paper_steps": args.paper_steps, "methods": {}}
    for label in args.methods:
        result = measure(label, section["methods"][label], section, train, args.seeds, passes)
        result["extrapolated_s"] = extrapolate(result, args.paper_steps)
        report["methods"][label] = result
    out = args.out or Path(f"results/benchmarks/batched_logistic_{platform}.json")
    bench_report.write(out, report, bench_report.batched_logistic)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()

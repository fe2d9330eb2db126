"""Structured PMD's moving inducing inputs against F.1's fixed ones, PMD with ``γ_t = 1/t``
and SVI-GP, through the sparse-GP experiment's own code, with each run's ceiling: Titsias' optimum
at its best inducing inputs.

For each method label of the config's ``sparse_gp.methods`` and each seed, on one problem: the run
of :func:`workflow.experiments.sparse_gp.run_one` (same data, model, method build, runner and
scores), then, from its final state, the DTC evidence ``log p(y|Z_j)`` of every component
(:func:`pmd.models.sparse_gp.collapsed_evidence`) and the test scores of Titsias' predictive
(:func:`pmd.models.sparse_gp.titsias_predict`, float64 NumPy) at the ``Z`` of highest evidence:
the best the run's mixture could reach with that ``Z``. One JSON line per run (appended to
``--out``): the final scores, ``titsias_*`` at the best ``Z``, the final ESS, the distinct ``Z``
among the components, the work (``evals``: likelihood terms; ``visited``: rows read) and the
seconds of stepping.

Run: ``python benchmarks/sparse_gp_moves.py --config C --problem P --data D --reference T
--methods pmd pmd_harmonic pmd_move svi --seeds 0 1 2 --out results/benchmarks/sparse_gp_moves.jsonl``
(the data and truth files as the workflow's ``make-data``/``reference`` write them).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from pmd import run
from pmd.models.sparse_gp import collapsed_evidence, titsias_predict
from pmd_bench.workflow import methods
from pmd_bench.workflow.config import load as load_config
from pmd_bench.workflow.experiments.sparse_gp import _float64, _scores, build_model, load_problem
from pmd_bench.workflow.results import load_npz


def measure(section: dict, problem: str, label: str, seed: int, data_path: str, reference: str) -> dict:
    """One run of ``label`` (as ``run_one`` runs it) and its ceiling (module docstring)."""
    cfg = section["problems"][problem]
    spec, settings = methods.split_spec(label, section["methods"][label], cfg)
    train, _, info = load_problem(problem, cfg, data_path)
    truth, _ = load_npz(reference)
    model = build_model(cfg, train)
    num_steps = max(1, math.ceil(settings["num_passes"] * len(train["y"]) / settings["batch_size"]))
    method = methods.build(label, spec, model, train, num_steps)
    t0 = time.perf_counter()
    result = run(method, train, jax.random.key(seed), batch_size=settings["batch_size"],
                 num_passes=settings["num_passes"], eval_every=None)
    seconds = time.perf_counter() - t0
    post = result.posterior
    mean, var = (np.asarray(a) for a in jax.jit(lambda p, x: p.predict(x))(post, jnp.asarray(truth["x"])))
    data = {k: jnp.asarray(v) for k, v in train.items()}
    # the data an argument, not a constant the program closes over (XLA folded a padded copy of H.3.2's
    # 463,715 × 90 rows into the program: seconds of constant folding and a second copy in memory)
    evidence = jax.vmap(lambda z, d: collapsed_evidence(model, z, d, 8192)[0], in_axes=(0, None))
    log_ev = np.asarray(jax.jit(evidence)(post.inducing, data))
    best = int(np.argmax(log_ev))
    z_best = np.asarray(post.inducing[best])
    ceiling = _scores(*titsias_predict(model, z_best, train["x"], train["y"], truth["x"]), truth)
    distinct = len(np.unique(np.asarray(post.inducing).reshape(len(log_ev), -1).round(12), axis=0))
    return {"problem": problem, "method": label, "seed": seed, **_scores(mean, var, truth),
            **{f"titsias_{k}": v for k, v in ceiling.items()}, "best_log_evidence": float(log_ev[best]),
            "ess": float(post.effective_sample_size()), "distinct_z": distinct,
            "evals": float(result.curves["evals"][-1]), "visited": int(result.visited[-1]),
            "step_seconds": result.step_seconds, "seconds": seconds, "noise_std": info["noise_std"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--problem", required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--reference", required=True)
    parser.add_argument("--methods", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--out", default="results/benchmarks/sparse_gp_moves.jsonl")
    args = parser.parse_args()
    _float64()
    section = load_config(args.config)["sparse_gp"]
    for label in args.methods:
        for seed in args.seeds:
            row = measure(section, args.problem, label, seed, args.data, args.reference)
            print(json.dumps(row), flush=True)
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()

"""Where the default PMD's time goes (issue 35): compilation, streaming steps, moves.

Problem: synthetic well-specified logistic regression (``benchmarks/bench_batched_logistic.py``'s
``synthetic``: ``x ~ N(0, I)``, bias column appended, ``d = --features + 1``), ``N = --rows``;
the default ``PMD(model, N, m, data=data)`` over ``--passes`` passes in batches of ``--batch``.

Parts, each timed with ``jax.block_until_ready`` in this one process:

* ``compile``: lowering and compiling the runner's scan over all the run's steps (:func:`pmd.runner.stepper`);
* ``run``: executing that compiled scan (the whole run: streaming steps and moves);
* ``streaming``: the same run with ``rejuvenate=None`` (compiled first, executed timed);
* ``moves``: ``run - streaming``; and one round of the moves alone on the full data, executed
  after compiling, with the rounds the run takes (their row counts) to scale it.

Run: ``python benchmarks/profile_pmd_default.py [--rows 200000] [--features 10] [--particles 1000]``;
prints a JSON report.
"""

from __future__ import annotations

import argparse
import json
import time

import jax
import jax.numpy as jnp
import numpy as np

from bench_batched_logistic import synthetic
from pmd import PMD
from pmd.models.logistic import BayesianLogisticRegression
from pmd.rejuvenation import LogTarget
from pmd.runner import run_batches, stepper


def timed(call):
    t0 = time.perf_counter()
    out = jax.block_until_ready(call())
    return out, time.perf_counter() - t0


def profile_run(method, data, key, batch, passes):
    """``(compile seconds, execute seconds, info)`` of the runner's one scan over the whole run."""
    rows, tail = run_batches(0, method.data_size, batch, int(passes * method.data_size))
    assert tail.size == 0
    k_init, k_steps = jax.random.split(key)
    state = method.init(k_init)
    keys = jax.random.split(k_steps, len(rows))
    device = jax.tree_util.tree_map(jnp.asarray, data)
    advance = stepper(method)
    compiled, compile_s = timed(lambda: advance.lower(state, keys, rows, device).compile())
    (_, info), run_s = timed(lambda: compiled(state, keys, rows, device))
    return compile_s, run_s, info


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, default in (("--rows", 200_000), ("--features", 10), ("--particles", 1000), ("--batch", 1000),
                          ("--passes", 2.0)):
        parser.add_argument(flag, type=type(default), default=default)
    args = parser.parse_args(argv)
    data = synthetic(args.rows, args.features)
    model = BayesianLogisticRegression(dim=args.features + 1).model()
    key = jax.random.key(0)
    default = PMD(model, args.rows, args.particles, data=data)
    compile_s, run_s, info = profile_run(default, data, key, args.batch, args.passes)
    stream = PMD(model, args.rows, args.particles, rejuvenate=None)
    stream_compile_s, stream_s, _ = profile_run(stream, data, key, args.batch, args.passes)
    moved = np.flatnonzero(np.asarray(info["moved"]))
    target = LogTarget(model, data, default.moves.chunk)
    thetas = model.sample_prior(jax.random.key(1), args.particles) * 0.01
    round_fn = jax.jit(lambda k, th, n: default.moves(k, th, jnp.zeros(th.shape[0]), target, n))
    _, round_compile_s = timed(lambda: round_fn(jax.random.key(2), thetas, args.rows))
    _, round_s = timed(lambda: round_fn(jax.random.key(3), thetas, args.rows))
    grad_fn = jax.jit(lambda th: target.value_and_grad(th, args.rows))
    timed(lambda: grad_fn(thetas))
    _, read_s = timed(lambda: grad_fn(thetas))
    visited = np.asarray(info["visited"])
    report = {
        "rows": args.rows, "dim": args.features + 1, "particles": args.particles, "batch": args.batch,
        "passes": args.passes, "compile_s": compile_s, "run_s": run_s, "streaming_compile_s": stream_compile_s,
        "streaming_s": stream_s, "moves_s": run_s - stream_s, "move_steps": moved.tolist(),
        "rows_read": int(visited.sum()), "grad_evals": float(np.sum(np.asarray(info["grad_evals"]), dtype=np.float64)),
        "full_round_s": round_s, "full_round_compile_s": round_compile_s, "full_value_and_grad_read_s": read_s,
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()

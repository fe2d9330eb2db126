"""Where the default PMD's time goes: compilation, streaming steps, moves.

Problem: synthetic well-specified logistic regression (``benchmarks/bench_batched_logistic.py``'s
``synthetic``: ``x ~ N(0, I)``, bias column appended, ``d = --features + 1``), ``N = --rows``;
the default ``PMD(model, N, m, data=data)`` over ``--passes`` passes in batches of ``--batch``.

Parts, each timed with ``jax.block_until_ready`` in this one process:

* ``compile``: lowering and compiling the runner's scan over all the run's steps (:func:`pmd.runner.stepper`);
* ``run``: executing that compiled scan (the whole run: streaming steps and moves);
* ``streaming``: the same run with ``rejuvenate=None`` (compiled first, executed timed);
* ``moves``: ``run - streaming``; and one round of the moves alone on the full data, executed
  after compiling, with the rounds the run takes (their row counts) to scale it;
* the programs' size: the XLA kernels (fusions) of the run's scan with and without moves and, with
  ``--parts``, compiled only, without the moves' independence sweeps and with one global (Silverman)
  kernel in place of the per-mode one. On a CPU compilation grows with the kernels, about 5.5 ms of
  wall time each on the 2-core development machine (docs/findings.md, 2026-11-29), whatever ``N`` is.

Run: ``python benchmarks/profile_pmd_default.py [--rows 200000] [--features 10] [--particles 1000]
[--parts] [--out results/benchmarks/pmd_profile]``; prints the table; with ``--out``, writes
``<out>.json`` (the report) and ``<out>.md`` (the table).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

# --xla-flags=... must reach XLA_FLAGS before JAX starts its backend, which the imports below do
for _arg in sys.argv[1:]:
    if _arg.startswith("--xla-flags="):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_arg.split('=', 1)[1]}".strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from bench_batched_logistic import synthetic  # noqa: E402
from pmd import PMD  # noqa: E402
from pmd.models.logistic import BayesianLogisticRegression  # noqa: E402
from pmd.rejuvenation import DEFAULT_MOVES, LogTarget  # noqa: E402
from pmd.runner import run_batches, stepper  # noqa: E402
from pmd_bench.datasets.atomic import atomic_path  # noqa: E402
from pmd_bench.workflow.results import save_json  # noqa: E402


def timed(call):
    t0 = time.perf_counter()
    out = jax.block_until_ready(call())
    return out, time.perf_counter() - t0


PARTS = {"without the independence sweeps": {"rejuvenate": {**DEFAULT_MOVES, "independence": 0}},
         "with one global (Silverman) kernel": {"bandwidth": "silverman"}}
"""``--parts``: the default's pieces left out, one at a time (``PMD`` keyword arguments)."""


def kernels(compiled) -> int:
    """The XLA kernels (fusions) of a compiled program."""
    return len(re.findall(r"= \S+ fusion\(", compiled.as_text()))


def compiled_run(method, data, key, batch, passes):
    """``(compiled scan over the whole run, compile seconds, its arguments)``."""
    rows, tail = run_batches(0, method.data_size, batch, int(passes * method.data_size))
    assert tail.size == 0
    k_init, k_steps = jax.random.split(key)
    state = method.init(k_init)
    keys = jax.random.split(k_steps, len(rows))
    device = jax.tree_util.tree_map(jnp.asarray, data)
    advance = stepper(method)
    compiled, compile_s = timed(lambda: advance.lower(state, keys, rows, device).compile())
    return compiled, compile_s, (state, keys, rows, device)


def profile_run(method, data, key, batch, passes):
    """``(compile seconds, execute seconds, info, kernels)`` of the runner's one scan over the whole run."""
    compiled, compile_s, args = compiled_run(method, data, key, batch, passes)
    (_, info), run_s = timed(lambda: compiled(*args))
    return compile_s, run_s, info, kernels(compiled)


def table(report: dict) -> str:
    """The report as a markdown table of seconds, one row per part."""
    passes = report["passes"]
    rows = [("compile the run's scan (streaming steps and moves)", report["compile_s"]),
            (f"execute it ({passes:g} pass{'' if passes == 1 else 'es'})", report["run_s"]),
            ("of which the streaming steps (the same run without moves)", report["streaming_s"]),
            (f"of which the moves ({len(report['move_steps'])} rounds)", report["moves_s"]),
            ("compile the run without moves", report["streaming_compile_s"]),
            ("compile one round of the moves alone", report["full_round_compile_s"]),
            ("execute one round of the moves on all N rows", report["full_round_s"]),
            ("one full-data value and gradient for all particles", report["full_value_and_grad_read_s"])]
    head = (f"The default PMD on synthetic logistic regression, N = {report['rows']:,}, d = {report['dim']}, "
            f"m = {report['particles']}, batch {report['batch']}, on {report['device']}"
            f"{' with XLA_FLAGS ' + report['xla_flags'] if report.get('xla_flags') else ''} "
            f"(benchmarks/profile_pmd_default.py; one process, each part timed once after its compilation). "
            f"Rows read: {report['rows_read']:,}; per-row likelihood gradients: {report['grad_evals']:.3g}.")
    lines = [head, "", "| part | seconds |", "|---|---|"] + [f"| {name} | {sec:.3g} |" for name, sec in rows]
    programs = [("the run (the default)", report["kernels"], report["compile_s"]),
                ("the run without moves", report["streaming_kernels"], report["streaming_compile_s"])]
    programs += [(f"the run {name}", part["kernels"], part["compile_s"])
                 for name, part in report.get("parts", {}).items()]
    lines += ["", "The programs' size (each compiled once, in this process):", "",
              "| program | XLA kernels | compile seconds | ms per kernel |", "|---|---|---|---|"]
    lines += [f"| {name} | {count:,} | {sec:.3g} | {1e3 * sec / count:.2f} |" for name, count, sec in programs]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, default in (("--rows", 200_000), ("--features", 10), ("--particles", 1000), ("--batch", 1000),
                          ("--passes", 2.0)):
        parser.add_argument(flag, type=type(default), default=default)
    parser.add_argument("--out", default=None, help="write <out>.json and <out>.md")
    parser.add_argument("--xla-flags", default="", help="appended to XLA_FLAGS before JAX starts its backend; give "
                        "it as --xla-flags=... (e.g. --xla-flags=--xla_gpu_autotune_level=0: how much of the GPU's "
                        "compilation is autotuning)")
    parser.add_argument("--parts", action="store_true", help="also compile the run without each of PARTS' pieces")
    args = parser.parse_args(argv)
    data = synthetic(args.rows, args.features)
    model = BayesianLogisticRegression(dim=args.features + 1).model()
    key = jax.random.key(0)
    default = PMD(model, args.rows, args.particles, data=data)
    compile_s, run_s, info, size = profile_run(default, data, key, args.batch, args.passes)
    stream = PMD(model, args.rows, args.particles, rejuvenate=None)
    stream_compile_s, stream_s, _, stream_size = profile_run(stream, data, key, args.batch, args.passes)
    parts = {}
    for name, options in PARTS.items() if args.parts else ():
        compiled, seconds, _ = compiled_run(PMD(model, args.rows, args.particles, data=data, **options), data, key,
                                            args.batch, args.passes)
        parts[name] = {"compile_s": seconds, "kernels": kernels(compiled), "options": options}
    moved = np.flatnonzero(np.asarray(info["moved"]))
    target = LogTarget(model, data, default.moves.block_rows(args.particles))
    thetas = model.sample_prior(jax.random.key(1), args.particles) * 0.01
    round_fn = jax.jit(lambda k, th, n: default.moves(k, th, jnp.zeros(th.shape[0]), target, n,
                                                        kernel=lambda kk, p, w: default._kernel(kk, p, w, 1.0)))
    _, round_compile_s = timed(lambda: round_fn(jax.random.key(2), thetas, args.rows))
    _, round_s = timed(lambda: round_fn(jax.random.key(3), thetas, args.rows))
    grad_fn = jax.jit(lambda th: target.value_and_grad(th, args.rows))
    timed(lambda: grad_fn(thetas))
    _, read_s = timed(lambda: grad_fn(thetas))
    visited = np.asarray(info["visited"])
    report = {
        "device": f"{jax.devices()[0].device_kind} ({jax.default_backend()})", "xla_flags": args.xla_flags,
        "rows": args.rows, "dim": args.features + 1, "particles": args.particles, "batch": args.batch,
        "passes": args.passes, "compile_s": compile_s, "run_s": run_s, "streaming_compile_s": stream_compile_s,
        "streaming_s": stream_s, "moves_s": run_s - stream_s, "move_steps": moved.tolist(),
        "rows_read": int(visited.sum()), "grad_evals": float(np.sum(np.asarray(info["grad_evals"]), dtype=np.float64)),
        "full_round_s": round_s, "full_round_compile_s": round_compile_s, "full_value_and_grad_read_s": read_s,
        "kernels": size, "streaming_kernels": stream_size, **({"parts": parts} if parts else {}),
    }
    text = table(report)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        save_json(out.with_suffix(".json"), report)
        with atomic_path(out.with_suffix(".md")) as tmp:
            tmp.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

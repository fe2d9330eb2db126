"""One method label's repetitions (seeds) of an experiment, one at a time or batched.

An experiment describes a label once, as a :class:`Prepared` (the method built for its data, the
runner's settings, the evaluation, the MLflow parameters and how a finished run is saved); then
:func:`run_seeds` runs any list of seeds of it:

* one seed, or several one after another (``vectorised=False``): :func:`pmd.run` inside each
  seed's MLflow run, its curves logged live; several seeds in one process share its start (imports,
  data, the method's construction) and the method object's compiled programs
  (:func:`pmd.runner.compiled_programs`), so a later seed's ``compile_seconds`` is zero;
* several, vectorised: :func:`pmd.run_batched` (``vmap`` over the seeds: one compilation, one
  device), each seed's curves buffered and replayed into its own MLflow run at the same steps
  afterwards.

Either way every seed ends with the same result file and MLflow run (name, parameters, curves
against data points visited, summary), so the figures, tables and ``regress`` never see which way
it ran; batched runs carry the tag ``pmd_bench.batched`` = the number of seeds run together.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import jax

from pmd import RunResult, run, run_batched

from .config import BATCHABLE  # noqa: F401  (the experiments that batch seeds; defined where the CLI reads it fast)
from .tracking import git_commit, tracked_run

#: ``save(result, seed, run_params, out, started, shared_seconds, extra) -> meta``: write the seed's
#: result file atomically, log its summary and artifact to the active MLflow run, return its meta;
#: its ``total_seconds`` run from ``started`` plus ``shared_seconds`` (its share of a batch's time).
Saver = Callable[[RunResult, int, dict, "str | Path", float, float, dict], dict]


@dataclass(frozen=True)
class Prepared:
    """Everything a method label needs to run any of its seeds on one experiment's data."""

    method: Any
    data: Any
    settings: Mapping[str, Any]  # the runner's batch_size, num_passes, eval_every
    evaluate: Callable | None
    params: Mapping[str, Any]  # the MLflow parameters, the seed added per run
    run_name: Callable[[int], str]
    save: Saver
    tags: Mapping[str, str] = field(default_factory=dict)
    start: tuple[float, float] = (0.0, 0.0)  # building the method: (seconds, compile seconds), pmd.run's start


class _Buffer:
    """A runner logger that keeps the metrics, to be replayed into the seed's MLflow run."""

    def __init__(self):
        self.entries: list[tuple[dict, int]] = []

    def log_metrics(self, metrics, step: int) -> None:
        self.entries.append((dict(metrics), step))


def run_seeds(prep: Prepared, seeds: list[int], outs: list[str | Path], uri: str, experiment: str,
              vectorised: bool = True) -> list[dict]:
    """Run ``prep`` for every seed of ``seeds`` (``jax.random.key(seed)``) and leave ``outs[i]`` and
    the MLflow run ``prep.run_name(seed)`` for each: one seed (or several with ``vectorised`` false,
    or a method that is not ``batchable``) by :func:`pmd.run`, one after another, several as one
    vectorised program by :func:`pmd.run_batched`, whose ``step_seconds`` per seed is its share of
    the batch's stepping time and whose ``meta["batched"]`` is the number of seeds run together."""
    if not seeds or len(seeds) != len(outs):
        raise ValueError(f"run_seeds needs one output file per seed: got {len(seeds)} seeds and {len(outs)} files")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"run_seeds got a seed twice: {seeds}")
    commit = git_commit()  # each result file says which code made it
    if len(seeds) == 1 or not vectorised or not getattr(prep.method, "batchable", True):  # one at a time
        metas = []
        for seed, out in zip(seeds, outs):
            run_params = {**prep.params, "seed": seed}
            with tracked_run(uri, experiment, prep.run_name(seed), run_params, dict(prep.tags)) as logger:
                t0 = time.perf_counter()
                result = run(prep.method, prep.data, jax.random.key(seed), evaluate=prep.evaluate, logger=logger,
                             start=prep.start, **prep.settings)
                metas.append(prep.save(result, seed, run_params, out, t0, 0.0, {"commit": commit}))
        return metas
    buffers = [_Buffer() for _ in seeds]
    t0 = time.perf_counter()
    results = run_batched(prep.method, prep.data, [jax.random.key(s) for s in seeds], evaluate=prep.evaluate,
                          loggers=buffers, start=prep.start, **prep.settings)
    share = (time.perf_counter() - t0) / len(seeds)
    metas = []
    for seed, out, result, buffer in zip(seeds, outs, results, buffers):
        run_params = {**prep.params, "seed": seed}
        tags = {**prep.tags, "pmd_bench.batched": str(len(seeds))}
        with tracked_run(uri, experiment, prep.run_name(seed), run_params, tags) as logger:
            for metrics, step in buffer.entries:
                logger.log_metrics(metrics, step)
            metas.append(prep.save(result, seed, run_params, out, time.perf_counter(), share,
                                   {"batched": len(seeds), "commit": commit}))
    return metas

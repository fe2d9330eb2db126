"""The Welling-Teh mixture experiment (section 6, Figure 1 and Figure 3; Appendix H.1)."""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import mlflow
import numpy as np

from pmd import run, run_batched
from pmd.metrics import Grid, GridPosterior, floor, kde_fit, loo_bandwidth, score
from pmd.models.mixture import WellingTehMixture

from .. import methods
from ..results import load_npz, save_npz
from ..tracking import log_summary, tracked_run

EXPERIMENT = "mixture"


def grid_of(cfg: dict) -> Grid:
    """The evaluation grid of the config."""
    g = cfg["grid"]
    return Grid(tuple(g["lower"]), tuple(g["upper"]), tuple(g["size"]))


def make_data(cfg: dict, out: str | Path) -> dict:
    """Simulate the data, compute the exact posterior on the grid and the exact-draws floor."""
    mix = WellingTehMixture()
    x = mix.simulate(cfg["data_seed"], cfg["num_data"], tuple(cfg["true_theta"]))
    grid = grid_of(cfg)
    true = mix.grid_posterior(x, grid)
    floors = floor(true, jax.random.key(cfg["data_seed"]), cfg["score_samples"])
    points = grid.points
    mass_right = float(np.exp(np.asarray(true.log_prob))[points[:, 0] > 0].sum())
    meta = {"floor": floors, "floor_samples": cfg["score_samples"], "mass_theta1_positive": mass_right,
            "num_data": len(x),
            "grid": {"lower": list(grid.lower), "upper": list(grid.upper), "size": list(grid.size)}}
    save_npz(out, {"x": x, "log_prob": np.asarray(true.log_prob)}, meta)
    return meta


def load_data(path: str | Path) -> tuple[np.ndarray, GridPosterior, dict]:
    """The data set, the gridded truth and the metadata written by :func:`make_data`."""
    arrays, meta = load_npz(path)
    g = meta["grid"]
    grid = Grid(tuple(g["lower"]), tuple(g["upper"]), tuple(g["size"]))
    return arrays["x"], GridPosterior(grid, jnp.asarray(arrays["log_prob"])), meta


def display_density(posterior, true: GridPosterior, key) -> np.ndarray:
    """The posterior's log-density on the grid for the figures: its own where it has one, else the
    leave-one-out KDE of its weighted samples (the sharper of the estimators in pmd.metrics)."""
    points = jnp.asarray(true.grid.points)
    if posterior.has_density():
        return np.asarray(posterior.log_density(points))
    samples, log_w = posterior.weighted_samples(key, 1500)
    return np.asarray(kde_fit(samples, log_w, loo_bandwidth(samples, log_w))(points))


def _setup(cfg: dict, label: str, data_path: str | Path, params: dict[str, Any] | None):
    """The data, the truth, the method and its run settings and parameters of one method label."""
    x, true, _ = load_data(data_path)
    spec, settings = methods.split_spec(label, cfg["methods"][label] if params is None else params, cfg)
    num_steps = max(1, math.ceil(settings["num_passes"] * len(x) / settings["batch_size"]))
    method = methods.build(label, spec, WellingTehMixture().model(), jnp.asarray(x), num_steps)
    base = {"method": label, "num_data": len(x), **settings, **{f"method.{k}": v for k, v in spec.items()}}
    evaluate = lambda posterior, k: score(posterior, true, k, cfg["score_samples"])  # noqa: E731
    return x, true, method, settings, base, evaluate


def _save(result, label: str, seed: int, run_params: dict, true: GridPosterior, out: str | Path, started: float,
          shared_seconds: float = 0.0, extra: dict[str, Any] | None = None) -> dict:
    """Write a run's result file and log its summary and artifact to the active MLflow run; its
    ``total_seconds`` run from ``started`` (plus its share of a batch's time) to the display density."""
    density = display_density(result.posterior, true, jax.random.fold_in(jax.random.key(seed), 1))
    total = shared_seconds + time.perf_counter() - started
    meta = {"method": label, "seed": seed, "params": run_params, "step_seconds": result.step_seconds,
            "eval_seconds": result.eval_seconds, "total_seconds": total, "num_steps": result.num_steps,
            "visited": int(result.visited[-1]), **(extra or {})}
    arrays = {"visited": result.visited, "final_log_density": density,
              **{f"curve/{name}": values for name, values in result.curves.items()}}
    save_npz(out, arrays, meta)
    log_summary(meta)
    mlflow.log_artifact(str(out), artifact_path="result")
    return meta


def run_one(cfg: dict, label: str, seed: int, data_path: str | Path, out: str | Path,
            uri: str, experiment: str, params: dict[str, Any] | None = None) -> dict:
    """Run method ``label`` with ``seed`` on the mixture data, log it to MLflow, write ``out``."""
    x, true, method, settings, base, evaluate = _setup(cfg, label, data_path, params)
    run_params = {**base, "seed": seed}
    with tracked_run(uri, experiment, f"{label}-seed{seed}", run_params, {"experiment": EXPERIMENT}) as logger:
        t0 = time.perf_counter()
        result = run(method, jnp.asarray(x), jax.random.key(seed), evaluate=evaluate, logger=logger, **settings)
        return _save(result, label, seed, run_params, true, out, t0)


class _Buffer:
    """A runner logger that keeps the metrics, to be replayed into the seed's MLflow run."""

    def __init__(self):
        self.entries: list[tuple[dict, int]] = []

    def log_metrics(self, metrics, step: int) -> None:
        self.entries.append((dict(metrics), step))


def run_batch(cfg: dict, label: str, seeds: list[int], data_path: str | Path, outs: list[str | Path],
              uri: str, experiment: str, params: dict[str, Any] | None = None) -> list[dict]:
    """Run method ``label`` for every seed of ``seeds`` as one vectorised program
    (:func:`pmd.run_batched`, issue 16) and leave what :func:`run_one` leaves for each seed: its
    result file ``outs[i]`` and its MLflow run ``<label>-seed<k>`` with the same parameters, curves
    against data points visited and summary (the curves are replayed at their steps once the batch
    has run). ``step_seconds`` is each seed's share of the batch's stepping time; ``meta["batched"]``
    holds the number of seeds run together."""
    if len(seeds) != len(outs):
        raise ValueError(f"run_batch got {len(seeds)} seeds but {len(outs)} output files")
    x, true, method, settings, base, evaluate = _setup(cfg, label, data_path, params)
    buffers = [_Buffer() for _ in seeds]
    t0 = time.perf_counter()
    results = run_batched(method, jnp.asarray(x), [jax.random.key(s) for s in seeds], evaluate=evaluate,
                          loggers=buffers, **settings)
    seconds = (time.perf_counter() - t0) / len(seeds)
    metas = []
    for seed, out, result, buffer in zip(seeds, outs, results, buffers):
        run_params = {**base, "seed": seed}
        with tracked_run(uri, experiment, f"{label}-seed{seed}", run_params,
                         {"experiment": EXPERIMENT, "pmd_bench.batched": str(len(seeds))}) as logger:
            for metrics, step in buffer.entries:
                logger.log_metrics(metrics, step)
            metas.append(_save(result, label, seed, run_params, true, out, time.perf_counter(), seconds,
                               {"batched": len(seeds)}))
    return metas

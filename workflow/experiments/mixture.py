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

from pmd.metrics import FLOOR_REPEATS, Grid, GridPosterior, floor_scores, floor_summary, kde_fit, loo_bandwidth, score
from pmd.models.mixture import WellingTehMixture

from .. import methods
from ..repetitions import Prepared, run_seeds
from ..results import load_npz, save_npz
from ..tracking import log_summary

EXPERIMENT = "mixture"


def grid_of(cfg: dict) -> Grid:
    """The evaluation grid of the config."""
    g = cfg["grid"]
    return Grid(tuple(g["lower"]), tuple(g["upper"]), tuple(g["size"]))


def make_data(cfg: dict, out: str | Path) -> dict:
    """Simulate the data, compute the exact posterior on the grid and the exact-draws floor: the
    mean score of :data:`pmd.metrics.FLOOR_REPEATS` sets of ``score_samples`` exact draws
    (``floor``; :func:`pmd.metrics.floor`), with the standard deviation of one set's score
    (``floor_sd``)."""
    mix = WellingTehMixture()
    x = mix.simulate(cfg["data_seed"], cfg["num_data"], tuple(cfg["true_theta"]))
    grid = grid_of(cfg)
    true = mix.grid_posterior(x, grid)
    floors, spread = floor_summary(true, floor_scores(true, jax.random.key(cfg["data_seed"]), cfg["score_samples"]))
    points = grid.points
    mass_right = float(np.exp(np.asarray(true.log_prob))[points[:, 0] > 0].sum())
    meta = {"floor": floors, "floor_samples": cfg["score_samples"], "floor_sets": FLOOR_REPEATS,
            "floor_sd": spread,
            "mass_theta1_positive": mass_right,
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


def prepare(cfg: dict, label: str, data_path: str | Path, params: dict[str, Any] | None = None) -> Prepared:
    """Method ``label`` on the mixture data, ready for :func:`workflow.repetitions.run_seeds`: scored
    against the gridded truth at every evaluation; each seed's result file holds its curves and the
    log-density of its final posterior on the grid (:func:`display_density`)."""
    x, true, _ = load_data(data_path)
    spec, settings = methods.split_spec(label, cfg["methods"][label] if params is None else params, cfg)
    settings = methods.with_work_cap(settings, len(x))
    num_steps = max(1, math.ceil(settings["num_passes"] * len(x) / settings["batch_size"]))
    method, start = methods.build_timed(label, spec, WellingTehMixture().model(), jnp.asarray(x), num_steps)
    base = {"method": label, "num_data": len(x), **settings, **{f"method.{k}": v for k, v in spec.items()}}

    def save(result, seed: int, run_params: dict, out, started: float, shared: float, extra: dict) -> dict:
        density = display_density(result.posterior, true, jax.random.fold_in(jax.random.key(seed), 1))
        meta = {"method": label, "seed": seed, "params": run_params, "step_seconds": result.step_seconds,
                "eval_seconds": result.eval_seconds, "total_seconds": shared + time.perf_counter() - started,
                "num_steps": result.num_steps, "visited": int(result.visited[-1]), **extra}
        arrays = {"visited": result.visited, "final_log_density": density,
                  **{f"curve/{name}": values for name, values in result.curves.items()}}
        save_npz(out, arrays, meta)
        log_summary(meta)
        mlflow.log_artifact(str(out), artifact_path="result")
        return meta

    return Prepared(method=method, data=jnp.asarray(x), settings=settings,
                    evaluate=lambda posterior, k: score(posterior, true, k, cfg["score_samples"]),
                    params=base, run_name=lambda seed: f"{label}-seed{seed}", save=save,
                    tags={"experiment": EXPERIMENT}, start=start)


def run_one(cfg: dict, label: str, seed: int, data_path: str | Path, out: str | Path,
            uri: str, experiment: str, params: dict[str, Any] | None = None) -> dict:
    """Run method ``label`` with ``seed`` on the mixture data, log it to MLflow, write ``out``."""
    return run_seeds(prepare(cfg, label, data_path, params), [seed], [out], uri, experiment)[0]

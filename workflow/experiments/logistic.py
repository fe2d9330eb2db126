"""Bayesian logistic regression on MNIST 6-vs-8 (section 6, Figure 2(1); Appendix H.2).

The data are a prepared classification file of :mod:`datasets` (``X_train``, ``y_train``,
``X_test``, ``y_test``: PCA-50 features, labels ±1), to which a bias column is appended (``d = 51``).

* :func:`make_reference`: the NUTS reference posterior on the training rows the comparison uses
  (PyMC model, NumPyro NUTS, ArviZ gate: :mod:`workflow.reference`; with ``reference.metric:
  laplace``, NumPyro's NUTS on :func:`reference_log_density` with the Laplace covariance as its
  fixed metric, for the paper-scale reference on a CPU). The last chain is held out:
  ``eval_samples`` of its draws scored against the other chains give the floor of each
  sample-based distance at the sample size every method is scored from
  (:func:`pmd.sample_metrics.reference_floor`); the reference's own predictive test scores are recorded too. Run it in its
  own process: PyMC's JAX sampler turns on float64.
* :func:`run_one`: one method, one seed; at every evaluation the test error and test
  log-likelihood of the posterior predictive (:func:`pmd.models.logistic.predictive_scores`) and
  the distances to the reference (:class:`pmd.sample_metrics.SampleReference`) against data points
  visited, logged to MLflow and written atomically to a result file.

A method's config entry may override the section's ``batch_size``, ``num_passes``, ``eval_every``
(:func:`workflow.methods.split_spec`) and ``train_rows``: Gibbs scans the whole training set every
step, so it runs on its first ``train_rows`` rows (the paper: "unaffordable" at full scale).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import mlflow
import numpy as np

from pmd import ParticlePosterior
from pmd.models.logistic import BayesianLogisticRegression, labelled, predictive_scores
from pmd.sample_metrics import SampleReference, reference_floor

from .. import methods
from ..repetitions import Prepared, run_seeds
from ..results import load_npz, save_npz
from ..tracking import log_summary, tracked_run

EXPERIMENT = "logistic"


def load_data(path: str | Path, train_rows: int | None = None) -> tuple[dict, dict]:
    """``(train, test)`` data pytrees ``{"x": (N, d), "y": (N,)}`` with the bias column appended."""
    arrays, _ = load_npz(path)
    missing = {"X_train", "y_train", "X_test", "y_test"} - set(arrays)
    if missing:
        raise ValueError(f"{path} is not a prepared classification file: it lacks {sorted(missing)}")
    rows = len(arrays["y_train"]) if train_rows is None else train_rows
    if not 1 <= rows <= len(arrays["y_train"]):
        raise ValueError(f"train_rows={train_rows} must lie in [1, {len(arrays['y_train'])}] for {path}")
    return (labelled(arrays["X_train"][:rows], arrays["y_train"][:rows]),
            labelled(arrays["X_test"], arrays["y_test"]))


def pymc_model(train: dict, prior_std: float):
    """The same model in PyMC: ``w ~ N(0, s² I)``, ``(y+1)/2 ~ Bernoulli(σ(Xw))``."""
    import pymc as pm

    with pm.Model() as model:
        w = pm.Normal("w", 0.0, prior_std, shape=train["x"].shape[1])
        pm.Bernoulli("y", logit_p=pm.math.dot(train["x"], w), observed=(train["y"] > 0).astype(np.int8))
    return model


def reference_log_density(train: dict, prior_std: float):
    """The unnormalised log posterior ``log N(w; 0, s² I) + Σ_n log σ(y_n wᵀx_n)`` of the training
    rows in float64 (the reference's arithmetic; call with ``jax_enable_x64`` on)."""
    model = BayesianLogisticRegression(train["x"].shape[1], prior_std)
    data = {"x": jnp.asarray(train["x"], jnp.float64), "y": jnp.asarray(train["y"], jnp.float64)}

    def logdensity(w: jax.Array) -> jax.Array:
        return model.log_prior(w) + jnp.sum(jax.vmap(model.log_likelihood, (None, 0))(w, data))

    return logdensity


def compute_reference(cfg: dict, data_path: str | Path) -> tuple[dict[str, np.ndarray], dict]:
    """NUTS reference draws on the section's training rows, gated and scored for the floor.

    Returns ``(arrays, meta)``: ``arrays`` holds ``draws`` (every chain but the last, flattened)
    and ``held_out`` (the last chain); ``meta`` the diagnostics, the floor of each sample-based
    distance (the held-out chain scored against the others), the reference's own predictive test
    scores, the sampler's wall time and the settings. Nothing is logged or written: the same
    computation runs under :func:`make_reference` or on another machine (an accelerator). With
    ``reference.metric: laplace`` the sampler is :func:`workflow.reference.sample_nuts_laplace` on
    :func:`reference_log_density`, started at the prior mean, and ``diagnostics`` also holds
    ``laplace_mean_error``: the Laplace mode's largest distance from the chains' mean, in their sd.
    """
    from ..reference import check_convergence, sample_nuts, sample_nuts_laplace

    ref_cfg = cfg["reference"]
    train, test = load_data(data_path, cfg["train_rows"])
    params = {"data": str(data_path), "num_data": len(train["y"]), "prior_std": cfg["prior_std"], **ref_cfg}
    sampler = {"draws": ref_cfg["draws"], "tune": ref_cfg["tune"], "chains": ref_cfg["chains"], "seed": ref_cfg["seed"]}
    t0 = time.perf_counter()
    if ref_cfg.get("metric", "adapted") == "laplace":
        jax.config.update("jax_enable_x64", True)  # as PyMC's JAX samplers do: this process only
        idata = sample_nuts_laplace(reference_log_density(train, cfg["prior_std"]),
                                    np.zeros(train["x"].shape[1]), **sampler)
    else:
        idata = sample_nuts(pymc_model(train, cfg["prior_std"]), **sampler)
    seconds = time.perf_counter() - t0
    diagnostics = check_convergence(idata, "w", max_rhat=ref_cfg["max_rhat"], min_ess=ref_cfg["min_ess"])
    draws = np.asarray(idata.posterior["w"].values, np.float32)  # (chains, draws, d)
    reference, held_out = draws[:-1].reshape(-1, draws.shape[-1]), draws[-1]
    floor = reference_floor(draws, cfg["eval_samples"])
    predictive = predictive_scores(ParticlePosterior.equally_weighted(jnp.asarray(reference)), test,
                                   jax.random.key(ref_cfg["seed"]))
    if "laplace_mode" in idata.attrs:  # how far the chain went from the approximation that preconditioned it
        all_draws = draws.reshape(-1, draws.shape[-1])
        diagnostics["laplace_mean_error"] = float(np.max(np.abs(np.asarray(idata.attrs["laplace_mode"])
                                                                - all_draws.mean(0)) / all_draws.std(0)))
    meta = {"diagnostics": diagnostics, "floor": floor, "floor_samples": cfg["eval_samples"], "predictive": predictive, "seconds": seconds,
            "num_data": len(train["y"]), "dim": int(draws.shape[-1]), "params": params,
            "platform": jax.devices()[0].platform}
    return {"draws": reference, "held_out": held_out}, meta


def make_reference(cfg: dict, data_path: str | Path, out: str | Path, uri: str, experiment: str) -> dict:
    """:func:`compute_reference` inside an MLflow run; the draws saved atomically to ``out`` and logged."""
    params = {"data": str(data_path), "prior_std": cfg["prior_std"], **cfg["reference"]}
    with tracked_run(uri, experiment, "reference-nuts", params, {"experiment": EXPERIMENT, "role": "reference"}):
        arrays, meta = compute_reference(cfg, data_path)
        mlflow.log_params({"num_data": meta["num_data"]})
        mlflow.log_metrics({**{f"diag_{k}": float(v) for k, v in meta["diagnostics"].items()},
                            **{f"floor_{k}": v for k, v in meta["floor"].items()}, **meta["predictive"],
                            "total_seconds": meta["seconds"]})
        save_npz(out, arrays, meta)
        mlflow.log_artifact(str(out), artifact_path="reference")
    return meta


def prepare(cfg: dict, label: str, data_path: str | Path, reference: str | Path | None,
            params: dict[str, Any] | None = None) -> Prepared:
    """Method ``label`` on the section's training rows, ready for
    :func:`workflow.repetitions.run_seeds`: at every evaluation the posterior predictive's test
    scores and the distances to the NUTS ``reference``; each seed's result file holds its curves."""
    if reference is None:
        raise ValueError("the logistic experiment scores every run against the NUTS reference: pass --reference")
    spec = dict(cfg["methods"][label] if params is None else params)
    train_rows = spec.pop("train_rows", cfg["train_rows"])
    spec, settings = methods.split_spec(label, spec, cfg)
    train, test = load_data(data_path, train_rows)
    settings = methods.with_work_cap(settings, len(train["y"]))
    num_steps = max(1, math.ceil(settings["num_passes"] * len(train["y"]) / settings["batch_size"]))
    ref_arrays, ref_meta = load_npz(reference)
    if ref_meta.get("floor_samples") != cfg["eval_samples"]:
        raise ValueError(f"the reference {reference} has its floor at {ref_meta.get('floor_samples')} draws, the "
                         f"methods are scored from eval_samples={cfg['eval_samples']}: recompute the reference")
    ref = SampleReference(ref_arrays["draws"])
    if ref.draws.shape[1] != train["x"].shape[1]:
        raise ValueError(f"the reference {reference} has d={ref.draws.shape[1]}, the data d={train['x'].shape[1]}")
    model = BayesianLogisticRegression(train["x"].shape[1], cfg["prior_std"]).model()
    method, start = methods.build_timed(label, spec, model, train, num_steps)
    base = {"method": label, "num_data": len(train["y"]), "prior_std": cfg["prior_std"], "train_rows": train_rows,
            **settings, **{f"method.{k}": v for k, v in spec.items()}}

    def evaluate(posterior, key):
        k_pred, k_ref = jax.random.split(key)
        return {**predictive_scores(posterior, test, k_pred, cfg["eval_samples"]),
                **ref.score_posterior(posterior, k_ref, cfg["eval_samples"])}

    def save(result, seed: int, run_params: dict, out, started: float, shared: float, extra: dict) -> dict:
        visited = int(result.visited[-1])
        meta = {"method": label, "seed": seed, "params": run_params, "step_seconds": result.step_seconds,
                "eval_seconds": result.eval_seconds, "total_seconds": shared + time.perf_counter() - started,
                "num_steps": result.num_steps, "visited": visited,
                "seconds_per_visited": result.step_seconds / max(visited, 1), **extra}
        log_summary(meta)
        arrays = {"visited": result.visited, **{f"curve/{name}": values for name, values in result.curves.items()}}
        save_npz(out, arrays, meta)
        mlflow.log_artifact(str(out), artifact_path="result")
        return meta

    return Prepared(method=method, data=train, settings=settings, evaluate=evaluate, params=base,
                    run_name=lambda seed: f"{label}-seed{seed}", save=save, tags={"experiment": EXPERIMENT},
                    start=start)


def run_one(cfg: dict, label: str, seed: int, data_path: str | Path, out: str | Path, uri: str, experiment: str,
            params: dict[str, Any] | None = None, reference: str | Path | None = None) -> dict:
    """Run method ``label`` with ``seed``, score it on the test set and against ``reference``, write ``out``."""
    return run_seeds(prepare(cfg, label, data_path, reference, params), [seed], [out], uri, experiment)[0]

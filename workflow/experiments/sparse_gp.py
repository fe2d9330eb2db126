"""Sparse Gaussian processes (section 6, Figure 2(2) and Figure 4; Appendix F.1 and H.3).

Two problems, each a section of ``sparse_gp.problems``:

* ``gp1d`` (H.3.1): the prepared ``gp1d-synth`` file (2,048 points, ``x``, ``y`` and the noise-free
  ``f``). Its truth (:func:`make_truth`) is the exact GP's predictive on a grid of test inputs
  (float64, :func:`pmd.models.sparse_gp.exact_gp_predict`): every method's predictive mean is
  scored against it (``rmse_exact``) and its variance (``var_ratio``, the geometric mean over the
  grid of the method's variance over the exact one), and against ``f`` (``rmse_f``).
* ``msd`` (H.3.2): YearPredictionMSD when it is prepared (``dataset: msd``, offline mirror only),
  else **the stand-in** :func:`make_data` writes (``dataset: msd-standin``): 90 standard normal
  features and targets ``y = f(x) + e`` with ``f`` a draw from the GP with the model's own kernel
  (random Fourier features: Rahimi & Recht 2007) and ``e ~ N(0, β⁻¹)`` at the model's noise, so
  the model is right and the best achievable test RMSE is the noise's standard deviation
  (``noise_std``, printed beside every result). Its targets are not years in [0, 1]: the paper's
  0.027 on MSD is quoted beside it, not compared. Metrics: ``test_rmse`` against the noisy test
  targets and, for the stand-in, ``rmse_f`` against ``f``.

Every run is scored against data points visited (the runner's ``eval_every``); on ``gp1d`` the
predictive mean and variance at every evaluation are kept too (``snapshot/mean``, ``snapshot/var``:
Figure 4 shows PMD's at iterations 0, 1, 5, 10, 20, 50, 80, so ``gp1d`` evaluates after every step).

A run of one Gaussian ``q(u)`` records Hensman's bound on the whole training set (``elbo``) at the
hyperparameters the method ends with: the model's, except for a method with a ``fitted_model``
(GPJax's rows), whose learned kernel and noise it uses and records (``fitted``).

Each run file's meta records the process's peak resident set (``peak_rss_gib``, ``getrusage``'s
``ru_maxrss``: data, method, evaluations and the final bound together), the memory a job of that
config needs.

Tuning (``pmd-bench tune sparse_gp``): per problem, on validation rows of its training
set by their predictive log density, never the test rows or the truth (:mod:`.sparse_gp_tuning`).

JAX runs in float64 in these processes (:func:`_float64`): in float32 the Cholesky factor of
``K_mm`` fails for inducing inputs closer than the bandwidth (NaN measured at H.3.1's ``M = 128``,
σ = 0.03) — the experiment's own processes only, so nothing else changes.
"""

from __future__ import annotations

import math
import resource
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import mlflow
import numpy as np

from pmd import run
from pmd.models.sparse_gp import SparseGP, exact_gp_predict, median_bandwidth, svgp_elbo

from .. import methods
from ..results import load_npz, save_npz
from ..tracking import git_commit, log_summary, tracked_run

EXPERIMENT = "sparse_gp"
# rows per slice of the full-data Hensman bound: 8,192 × M = 1,024 float64 features are 64 MiB
ELBO_CHUNK_ROWS = 8192


def _float64() -> None:
    """Turn on JAX's 64-bit types for this process (module docstring)."""
    jax.config.update("jax_enable_x64", True)


def make_data(cfg: dict, out: str | Path) -> dict:
    """The MSD-shaped stand-in of ``cfg["standin"]`` at the noise of ``cfg["problems"]["msd"]``.

    ``X ~ N(0, I_d)`` (MSD's features are standardised), the bandwidth σ by the median trick on
    the training inputs (H.3.2: scale 1, as the model will compute it), ``f(x) = √(2/D) Σ_k w_k
    cos(ω_kᵀx + b_k)`` with ``ω_k ~ N(0, σ⁻² I)``, ``b_k ~ U(0, 2π)``, ``w_k ~ N(0, 1)``: a draw from
    a GP whose covariance tends to the RBF kernel as ``D`` grows. ``y = f + e``, ``e ~ N(0, β⁻¹)``.
    """
    sc, msd = cfg["standin"], cfg["problems"]["msd"]
    rng = np.random.default_rng(sc["seed"])
    n, n_test, d = sc["train"], sc["test"], sc["dim"]
    x = rng.standard_normal((n + n_test, d))
    sigma = median_bandwidth(x[:n], msd["bandwidth_scale"])
    omega = rng.standard_normal((d, sc["features"])) / sigma
    phase = rng.uniform(0, 2 * np.pi, sc["features"])
    weights = rng.standard_normal(sc["features"])
    # in blocks of rows: H.3.2's 468,878 rows x 2,048 features would be 7.7 GB at once
    f = np.concatenate([np.sqrt(2.0 / sc["features"]) * np.cos(block @ omega + phase) @ weights
                        for block in np.array_split(x, max(1, len(x) // 50_000))])
    noise_std = math.sqrt(msd["noise_variance"])
    y = f + noise_std * rng.standard_normal(n + n_test)
    meta = {"standin": True, "floor": {"noise_std": noise_std}, "lengthscale": sigma, **sc}
    arrays = {"X_train": x[:n], "y_train": y[:n], "f_train": f[:n], "X_test": x[n:], "y_test": y[n:], "f_test": f[n:]}
    save_npz(out, arrays, meta)
    return meta


def load_problem(problem: str, cfg: dict, data_path: str | Path) -> tuple[dict, dict, dict]:
    """``(train {"x", "y"}, test {"x", "y"?, "f"?}, info)`` of ``problem`` from its data file."""
    arrays, meta = load_npz(data_path)
    if problem == "gp1d":
        from pmd_bench.datasets.synthetic import gp1d_function

        grid = np.linspace(arrays["x"].min(), arrays["x"].max(), cfg["test_points"])[:, None]
        return ({"x": arrays["x"], "y": arrays["y"]}, {"x": grid, "f": gp1d_function(grid[:, 0])},
                {"noise_std": float(arrays["noise"]), "standin": False})
    test = {"x": arrays["X_test"], "y": arrays["y_test"]}
    if "f_test" in arrays:
        test["f"] = arrays["f_test"]
    noise = meta.get("floor", {}).get("noise_std")
    return {"x": arrays["X_train"], "y": arrays["y_train"]}, test, {"noise_std": noise,
                                                                   "standin": bool(meta.get("standin", False))}


def build_model(cfg: dict, train: dict) -> SparseGP:
    """The problem's sparse GP: σ by the median trick, noise and ``M`` from the config (H.3)."""
    return SparseGP.from_data(train["x"], noise_variance=cfg["noise_variance"], num_inducing=cfg["num_inducing"],
                              bandwidth_scale=cfg["bandwidth_scale"], jitter=cfg["jitter"])


def make_truth(section: dict, problem: str, data_path: str | Path, out: str | Path, uri: str,
               experiment: str) -> dict:
    """The problem's test inputs, model and (``exact_gp: true``) the exact GP's predictive there."""
    _float64()
    cfg = section["problems"][problem]
    train, test, info = load_problem(problem, cfg, data_path)
    model = build_model(cfg, train)
    meta = {"problem": problem, "num_data": len(train["y"]), "dim": model.dim, "lengthscale": model.lengthscale,
            "noise_variance": model.noise_variance, "num_inducing": model.num_inducing, **info}
    arrays = {k: np.asarray(v) for k, v in test.items()}
    params = {"problem": problem, "data": str(data_path), **cfg}
    with tracked_run(uri, experiment, f"truth-{problem}", params, {"experiment": EXPERIMENT, "role": "reference"}):
        if cfg["exact_gp"]:
            t0 = time.perf_counter()
            mean, var = exact_gp_predict(model, train["x"], train["y"], test["x"])
            meta["exact_seconds"] = time.perf_counter() - t0
            arrays.update(exact_mean=mean, exact_var=var)
            meta["exact"] = _scores(mean, var, arrays)
            mlflow.log_metrics({f"exact_{k}": v for k, v in meta["exact"].items()})
        save_npz(out, arrays, meta)
        mlflow.log_artifact(str(out), artifact_path="reference")
    return meta


def _scores(mean: np.ndarray, var: np.ndarray, truth: dict) -> dict[str, float]:
    """The metrics of one predictive (module docstring) against what ``truth`` holds."""
    out = {}
    if "y" in truth:
        out["test_rmse"] = float(np.sqrt(np.mean((mean - truth["y"]) ** 2)))
    if "f" in truth:
        out["rmse_f"] = float(np.sqrt(np.mean((mean - truth["f"]) ** 2)))
    if "exact_mean" in truth:
        out["rmse_exact"] = float(np.sqrt(np.mean((mean - truth["exact_mean"]) ** 2)))
        out["var_ratio"] = float(np.exp(np.mean(np.log(np.maximum(var, 1e-300) / truth["exact_var"]))))
    return out


def run_one(section: dict, label: str, seed: int, data_path: str | Path, out: str | Path, uri: str,
            experiment: str, params: dict[str, Any] | None = None, reference: str | Path | None = None,
            problem: str | None = None) -> dict:
    """Run method ``label`` with ``seed`` on ``problem``, scored against its truth file ``reference``."""
    if reference is None or problem is None:
        raise ValueError("run sparse_gp needs --problem and --reference (the problem's truth file)")
    if problem not in section["problems"]:
        raise ValueError(f"unknown sparse_gp problem {problem!r}; the config has {', '.join(section['problems'])}")
    _float64()
    cfg = section["problems"][problem]
    spec, settings = methods.split_spec(label, section["methods"][label] if params is None else params, cfg)
    train, _, info = load_problem(problem, cfg, data_path)
    truth, _ = load_npz(reference)
    model = build_model(cfg, train)
    num_steps = max(1, math.ceil(settings["num_passes"] * len(train["y"]) / settings["batch_size"]))
    method, start = methods.build_timed(label, spec, model, train, num_steps)
    run_params = {"method": label, "seed": seed, "problem": problem, "data": str(data_path),
                  "standin": info["standin"], "num_data": len(train["y"]),
                  "lengthscale": model.lengthscale, "noise_variance": model.noise_variance,
                  "num_inducing": model.num_inducing, **settings, **{f"method.{k}": v for k, v in spec.items()}}
    test_x = jnp.asarray(truth["x"])
    snapshots: dict[str, list] = {"mean": [], "var": []}
    # test_x is an argument, not a closure: a captured array is a compile-time constant to XLA
    predict = jax.jit(lambda posterior, x: (*posterior.predict(x), posterior.effective_sample_size()))

    def evaluate(posterior, key):
        mean, var, ess = (np.asarray(a) for a in predict(posterior, test_x))
        if cfg["exact_gp"]:
            snapshots["mean"].append(mean)
            snapshots["var"].append(var)
        return {**_scores(mean, var, truth), "ess": float(ess)}

    with tracked_run(uri, experiment, f"{problem}-{label}-seed{seed}", run_params,
                     {"experiment": EXPERIMENT, "problem": problem}) as logger:
        t0 = time.perf_counter()
        result = run(method, train, jax.random.key(seed), batch_size=settings["batch_size"],
                     num_passes=settings["num_passes"], eval_every=settings["eval_every"], evaluate=evaluate,
                     logger=logger, start=start)
        post = result.posterior
        meta = {"method": label, "seed": seed, "problem": problem, "params": run_params, "commit": git_commit(), "noise_std": info["noise_std"],
                "standin": info["standin"], "step_seconds": result.step_seconds, "eval_seconds": result.eval_seconds,
                "total_seconds": time.perf_counter() - t0, "num_steps": result.num_steps,
                "visited": int(result.visited[-1]), "seconds_per_step": result.step_seconds / result.num_steps,
                "num_components": int(post.log_weights.shape[0])}
        if meta["num_components"] == 1:  # Hensman's bound of a single q(u) on the whole training set
            full = {k: jnp.asarray(v) for k, v in train.items()}
            fitted = method.fitted_model(result.state) if hasattr(method, "fitted_model") else model
            meta["elbo"] = float(svgp_elbo(fitted, post.inducing[0], post.chol_k[0], post.loc[0], post.scale[0], full,
                                           len(train["y"]), chunk_rows=ELBO_CHUNK_ROWS))
            if fitted is not model:
                meta["fitted"] = {k: getattr(fitted, k) for k in ("lengthscale", "variance", "noise_variance")}
        meta["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # kilobytes on Linux
        log_summary(meta)
        if "elbo" in meta:
            mlflow.log_metrics({"elbo": meta["elbo"]})
        arrays = {"visited": result.visited, **{f"curve/{name}": values for name, values in result.curves.items()}}
        if snapshots["mean"]:
            arrays.update({"snapshot/mean": np.stack(snapshots["mean"]), "snapshot/var": np.stack(snapshots["var"])})
        save_npz(out, arrays, meta)
        mlflow.log_artifact(str(out), artifact_path="result")
    return meta

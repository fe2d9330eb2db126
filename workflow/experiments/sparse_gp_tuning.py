"""The sparse GP's tuning criterion (:mod:`workflow.tuning`).

The problem's training rows ``(x, y)`` are split as every experiment's rows are
(:func:`workflow.tuning.validation_split`), and the model is built on the tuning's training part
alone (σ by the median trick, the inducing inputs' box: :func:`workflow.experiments.sparse_gp.build_model`),
so no validation row is seen, not even its input. A finished run scores its validation rows'
held-out log predictive density under the method's own predictive,

``LPD = 1/V Σ_v log Σ_j α_j N(y_v; m_j(x_v), s_j(x_v) + β⁻¹)``,

the mixture over its components ``q(Z_j, u)`` (``component_predict``: each one's Gaussian
predictive of ``f``) plus the noise: the model's ``β⁻¹``, or the learned one of a method that fits
its own hyperparameters (GPJax's learned SVGP, ``fitted_model``). Why this and not the test RMSE
the table reports: the RMSE scores the mean alone, the LPD a calibrated mean and variance, as the
other experiments' criterion does. The test rows and the gp1d truth (the exact GP) are never read.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from .. import methods
from ..tuning import Criterion, validation_split
from . import sparse_gp


@jax.jit
def _row_lpds(posterior, noise_variance, x, y):
    means, variances = posterior.component_predict(x)  # (P, V) each
    total = variances + noise_variance
    logpdf = -0.5 * (jnp.log(2 * jnp.pi * total) + (y[None, :] - means) ** 2 / total)
    log_w = posterior.log_weights - logsumexp(posterior.log_weights)
    return logsumexp(logpdf + log_w[:, None], axis=0)


def predictive_lpd(posterior, noise_variance: float, valid: dict) -> float:
    """The module docstring's ``LPD`` of the rows ``valid = {"x", "y"}``."""
    return float(jnp.mean(_row_lpds(posterior, noise_variance, jnp.asarray(valid["x"]), jnp.asarray(valid["y"]))))


def criterion(cfg: dict) -> Criterion:
    """The module docstring's criterion for the problem section ``cfg``."""
    def score(result, method, model, valid, key) -> float:
        fitted = method.fitted_model(result.state) if hasattr(method, "fitted_model") else model
        return predictive_lpd(result.posterior, fitted.noise_variance, valid)

    return Criterion(split=validation_split, model=lambda train: sparse_gp.build_model(cfg, train), score=score,
                     name="validation targets' log density under the method's predictive, per row")


def tuning_problem(section: dict, label: str, problem: str, data_path: str | Path) -> tuple[dict, dict, dict, Criterion]:
    """``(method spec, training rows, run settings, criterion)`` of method ``label`` on ``problem``,
    in float64 as the experiment's runs are (:mod:`workflow.experiments.sparse_gp`)."""
    if problem not in section["problems"]:
        raise ValueError(f"unknown sparse_gp problem {problem!r}; the config has {', '.join(section['problems'])}")
    sparse_gp._float64()
    cfg = section["problems"][problem]
    spec, settings = methods.split_spec(label, section["methods"][label], cfg)
    train, _, _ = sparse_gp.load_problem(problem, cfg, data_path)
    return spec, train, settings, criterion(cfg)

"""The Gaussian-process model of the suite: GP regression hyperparameters. The data set is ONE
datum ``{"x": (N,), "y": (N,)}``."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.linalg import solve_triangular

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.settings import Settings

from .parameters import Parameters, Positive
from .priors import Gamma, half_normal
from .problem import PosteriordbProblem, build, fields

Array = jax.Array


def gp_regr(settings: Settings) -> PosteriordbProblem:
    """``gp_pois_regr-gp_regr``: ``y ~ multi_normal(0, K)`` with ``K_ij = alpha² exp(-(x_i -
    x_j)² / (2 rho²)) + sigma δ_ij`` (the program adds ``sigma``, not ``sigma²``, to the diagonal),
    ``rho ~ gamma(25, 4)``, ``alpha ~ normal(0, 2)``, ``sigma ~ normal(0, 1)``, all on ``(0, ∞)``."""
    name = "gp_pois_regr-gp_regr"
    data = pdb.load_data(name, settings)
    (n,) = fields(name, data, N=())
    x, y = fields(name, data, x=(int(n),), y=(int(n),))
    parameters = Parameters(
        (Positive("rho", Gamma(25.0, 4.0)), Positive("alpha", half_normal(2.0)), Positive("sigma", half_normal(1.0)))
    )

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        rho, alpha, sigma = values
        x, y = datum["x"], datum["y"]
        cov = alpha**2 * jnp.exp(-0.5 * ((x[:, None] - x[None, :]) / rho) ** 2) + sigma * jnp.eye(x.shape[0])
        chol = jnp.linalg.cholesky(cov)
        white = solve_triangular(chol, y, lower=True)
        return -0.5 * white @ white - jnp.sum(jnp.log(jnp.diag(chol))) - 0.5 * x.shape[0] * math.log(2 * math.pi)

    return build(name, parameters, log_likelihood, {"x": x, "y": y}, iid=False)

"""The time series of the suite: AR(K), ARMA(1,1) and GARCH(1,1). Their data are not i.i.d.: the
whole series is ONE datum ``{"y": (T,)}`` (GARCH adds ``"sigma1": ()``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy import stats

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.settings import Settings

from .parameters import Parameters, Positive, Real, UniformTriangle
from .priors import Normal, half_cauchy, half_normal
from .problem import FLAT_SCALE, PosteriordbProblem, build, fields

Array = jax.Array


def _series(name: str, data: dict) -> Array:
    (t,) = fields(name, data, T=())
    (y,) = fields(name, data, y=(int(t),))
    return y


def ar_k(settings: Settings) -> PosteriordbProblem:
    """``arK-arK``: ``y[t] ~ normal(alpha + Σ_k beta[k] y[t-k], sigma)`` for ``t = K+1..T``,
    ``alpha, beta ~ normal(0, 10)``, ``sigma ~ cauchy(0, 2.5)`` on ``(0, ∞)``."""
    name = "arK-arK"
    data = pdb.load_data(name, settings)
    y, (k,) = _series(name, data), fields(name, data, K=())
    k = int(k)
    if not 0 < k < len(y):
        raise FormatError(f"{name}: K = {k} must lie in 1..T-1 = {len(y) - 1}")

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        alpha, beta, sigma = values
        y, t = datum["y"], datum["y"].shape[0]
        lags = jnp.stack([y[k - lag : t - lag] for lag in range(1, k + 1)], axis=1)
        return jnp.sum(stats.norm.logpdf(y[k:], alpha + lags @ beta, sigma))

    blocks = (
        Real("alpha", Normal(0.0, 10.0)),
        Real("beta", Normal(0.0, 10.0), length=k),
        Positive("sigma", half_cauchy(2.5)),
    )
    return build(name, Parameters(blocks), log_likelihood, {"y": y}, iid=False)


def arma11(settings: Settings) -> PosteriordbProblem:
    """``arma-arma11``: ``err[t] = y[t] - (mu + phi y[t-1] + theta err[t-1])`` (``nu[1] = mu + phi
    mu``, i.e. ``err[0] = 0``), ``err ~ normal(0, sigma)``, ``mu ~ normal(0, 10)``, ``phi, theta ~
    normal(0, 2)``, ``sigma ~ cauchy(0, 2.5)`` on ``(0, ∞)``."""
    name = "arma-arma11"
    y = _series(name, pdb.load_data(name, settings))

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        mu, phi, theta, sigma = values
        y = datum["y"]

        def step(err, pair):
            y_now, y_before = pair
            err = y_now - (mu + phi * y_before + theta * err)
            return err, err

        first = y[0] - (mu + phi * mu)
        _, rest = jax.lax.scan(step, first, (y[1:], y[:-1]))
        return jnp.sum(stats.norm.logpdf(jnp.concatenate([first[None], rest]), 0.0, sigma))

    blocks = (
        Real("mu", Normal(0.0, 10.0)),
        Real("phi", Normal(0.0, 2.0)),
        Real("theta", Normal(0.0, 2.0)),
        Positive("sigma", half_cauchy(2.5)),
    )
    return build(name, Parameters(blocks), log_likelihood, {"y": y}, iid=False)


def garch11(settings: Settings) -> PosteriordbProblem:
    """``garch-garch11``: ``y[t] ~ normal(mu, sigma[t])``, ``sigma[1] = sigma1`` (data),
    ``sigma[t]² = alpha0 + alpha1 (y[t-1] - mu)² + beta1 sigma[t-1]²``; ``alpha1 ∈ (0, 1)``,
    ``beta1 ∈ (0, 1 - alpha1)`` uniform (Stan: no sampling statement, a proper flat prior on the
    triangle). ``mu`` and ``alpha0 > 0`` are flat in Stan: here ``(mu - ȳ)/sd(y) ~ normal(0, 10²)``
    and ``alpha0/var(y) ~ half-normal(0, 10²)`` (:data:`~.problem.FLAT_SCALE`)."""
    name = "garch-garch11"
    data = pdb.load_data(name, settings)
    y, (sigma1,) = _series(name, data), fields(name, data, sigma1=())

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        mu, alpha0, (alpha1, beta1) = values
        y = datum["y"]

        def step(variance, y_before):
            variance = alpha0 + alpha1 * (y_before - mu) ** 2 + beta1 * variance
            return variance, variance

        _, variances = jax.lax.scan(step, datum["sigma1"] ** 2, y[:-1])
        sigma = jnp.concatenate([datum["sigma1"][None], jnp.sqrt(variances)])
        return jnp.sum(stats.norm.logpdf(y, mu, sigma))

    blocks = (
        Real("mu", Normal(float(y.mean()), FLAT_SCALE * float(y.std()))),
        Positive("alpha0", half_normal(FLAT_SCALE * float(y.var()))),
        UniformTriangle("alpha1", "beta1"),
    )
    return build(name, Parameters(blocks), log_likelihood, {"y": y, "sigma1": sigma1}, iid=False)

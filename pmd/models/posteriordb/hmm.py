"""The hidden Markov model of the suite: two states, unit-variance normal emissions. The series
is ONE datum ``{"y": (N,)}``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.scipy import stats
from jax.scipy.special import logsumexp

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.settings import Settings

from .parameters import Parameters, PositiveOrdered, UniformSimplex
from .priors import Normal
from .problem import PosteriordbProblem, build, fields

Array = jax.Array


def hmm_example(settings: Settings) -> PosteriordbProblem:
    """``hmm_example-hmm_example``: ``K = 2`` states, transition rows ``theta1``, ``theta2``
    (``simplex[K]``, no sampling statement: uniform), emission means ``mu`` (``positive_ordered[K]``)
    with ``mu[1] ~ normal(3, 1)``, ``mu[2] ~ normal(10, 1)``, ``y[t] | state k ~ normal(mu[k], 1)``;
    the states are summed out by the forward algorithm (``gamma[1, k] = log N(y[1]; mu[k], 1)``, no
    initial-state distribution, as in the program)."""
    name = "hmm_example-hmm_example"
    data = pdb.load_data(name, settings)
    n, k = fields(name, data, N=(), K=())
    (y,) = fields(name, data, y=(int(n),))
    if int(k) != 2:
        raise FormatError(f"{name}: K = {k:g}; the program's priors name mu[1] and mu[2] only, so K must be 2")
    parameters = Parameters(
        (UniformSimplex("theta1", 2), UniformSimplex("theta2", 2), PositiveOrdered("mu", 2, Normal((3.0, 10.0), 1.0)))
    )

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        theta1, theta2, mu = values
        log_transition = jnp.log(jnp.stack([theta1, theta2]))  # [from, to]
        log_emission = stats.norm.logpdf(datum["y"][:, None], mu, 1.0)  # (N, K)

        def forward(gamma, log_emit):
            gamma = logsumexp(gamma[:, None] + log_transition, axis=0) + log_emit
            return gamma, None

        gamma, _ = jax.lax.scan(forward, log_emission[0], log_emission[1:])
        return logsumexp(gamma)

    return build(name, parameters, log_likelihood, {"y": y}, iid=False)

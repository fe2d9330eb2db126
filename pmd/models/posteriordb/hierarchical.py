"""The hierarchical model of the suite: eight schools, non-centred. One datum per school."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.settings import Settings

from .parameters import Parameters, Positive, Real
from .priors import Normal, half_cauchy
from .problem import PosteriordbProblem, build, fields

Array = jax.Array


def eight_schools_noncentered(settings: Settings) -> PosteriordbProblem:
    """``eight_schools-eight_schools_noncentered``: ``theta = theta_trans tau + mu``, ``y[j] ~
    normal(theta[j], sigma[j])``, ``theta_trans ~ normal(0, 1)``, ``mu ~ normal(0, 5)``, ``tau ~
    cauchy(0, 5)`` on ``(0, ∞)``. A datum is ``{"school": () int, "y": (), "sigma": ()}``.

    ``θ = (theta_trans[1..J], mu, log tau)``; the reference draws hold the transformed parameter
    ``theta`` instead of ``theta_trans``, so :meth:`~.problem.PosteriordbProblem.constrain` gives
    ``(theta[1..J], mu, tau)`` and ``unconstrain`` recovers ``theta_trans = (theta - mu) / tau``.
    """
    name = "eight_schools-eight_schools_noncentered"
    data = pdb.load_data(name, settings)
    (j,) = fields(name, data, J=())
    y, sigma = fields(name, data, y=(int(j),), sigma=(int(j),))
    parameters = Parameters(
        (
            Real("theta_trans", Normal(0.0, 1.0), length=int(j)),
            Real("mu", Normal(0.0, 5.0)),
            Positive("tau", half_cauchy(5.0)),
        )
    )

    def log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
        theta_trans, mu, tau = values
        return stats.norm.logpdf(datum["y"], theta_trans[datum["school"]] * tau + mu, datum["sigma"])

    def to_constrained(theta: Array) -> Array:
        theta_trans, mu, tau = parameters.values(theta)
        return jnp.concatenate([theta_trans * tau + mu, jnp.stack([mu, tau])])

    def to_unconstrained(x: Array) -> Array:
        school_effects, mu, tau = x[:-2], x[-2], x[-1]
        return jnp.concatenate([(school_effects - mu) / tau, jnp.stack([mu, jnp.log(tau)])])

    return build(
        name,
        parameters,
        log_likelihood,
        {"school": np.arange(int(j)), "y": y, "sigma": sigma},
        iid=True,
        columns=(*(f"theta[{i}]" for i in range(1, int(j) + 1)), "mu", "tau"),
        to_constrained=to_constrained,
        to_unconstrained=to_unconstrained,
    )

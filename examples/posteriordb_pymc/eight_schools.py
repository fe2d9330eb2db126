"""posteriordb's ``eight_schools-eight_schools_noncentered`` as a PyMC model (a custom model file for
``pmd.from_pymc``).

The Stan program (posteriordb ``models/stan/eight_schools_noncentered.stan``) is the non-centred
hierarchical model of eight schools' coaching effects::

    parameters { vector[J] theta_trans; real mu; real<lower=0> tau; }
    transformed parameters { vector[J] theta = theta_trans * tau + mu; }
    model {
      theta_trans ~ normal(0, 1); y ~ normal(theta, sigma);
      mu ~ normal(0, 5); tau ~ cauchy(0, 5);
    }

Translation choices:

* All priors are proper: nothing substituted. ``tau ~ cauchy(0, 5)`` on ``(0, ∞)`` is
  ``HalfCauchy(5)``; PyMC's log transform is Stan's. ``theta`` is a ``pm.Deterministic``.
* One datum is one school (``datum_axis = 0``, ``N = 8``): the school's index and its standard error
  ``sigma`` are ``pm.Data`` containers of length ``J``, split with ``y``, and school ``j``'s mean is
  ``theta[school_j]``.
* posteriordb's reference draws hold ``theta`` (the transformed parameter), not ``theta_trans``:
  :func:`reference_draws` recovers ``theta_trans = (theta - mu) / tau`` (and drops ``theta``).

Columns: ``theta_trans[0]`` ... ``theta_trans[7]``, ``mu``, ``tau``.
"""

import numpy as np
import pymc as pm

from pmd_bench.datasets import posteriordb
from pmd_bench.datasets.settings import resolve_settings

NAME = "eight_schools-eight_schools_noncentered"
datum_axis = 0


def model() -> pm.Model:
    """The posterior: Stan's program, one school per datum."""
    data = posteriordb.load_data(NAME, resolve_settings())
    schools = int(data["J"])
    with pm.Model() as pm_model:
        school = pm.Data("school", np.arange(schools))
        sigma = pm.Data("sigma", np.asarray(data["sigma"], float))
        theta_trans = pm.Normal("theta_trans", 0.0, 1.0, shape=schools)
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfCauchy("tau", beta=5.0)
        theta = pm.Deterministic("theta", theta_trans * tau + mu)
        pm.Normal("y", mu=theta[school], sigma=sigma, observed=np.asarray(data["y"], float))
    return pm_model


def reference_draws() -> dict[str, np.ndarray]:
    """posteriordb's reference draws ``{column: (chains, draws)}``: ``theta_trans[j]`` recovered from
    Stan's ``theta[j + 1]``, ``mu`` and ``tau``."""
    draws = posteriordb.load_reference_draws(NAME, resolve_settings())
    mu, tau = draws["mu"], draws["tau"]
    schools = sum(column.startswith("theta[") for column in draws)
    theta_trans = {f"theta_trans[{j}]": (draws[f"theta[{j + 1}]"] - mu) / tau for j in range(schools)}
    return {**theta_trans, "mu": mu, "tau": tau}

"""posteriordb's ``arma-arma11`` as a PyMC model (a custom model file for ``pmd.from_pymc``).

The Stan program (posteriordb ``models/stan/arma11.stan``) is an ARMA(1, 1) time series::

    parameters { real mu; real phi; real theta; real<lower=0> sigma; }
    model {
      mu ~ normal(0, 10); phi ~ normal(0, 2); theta ~ normal(0, 2); sigma ~ cauchy(0, 2.5);
      nu[1] = mu + phi * mu;  err[1] = y[1] - nu[1];            // assume err[0] == 0
      for (t in 2:T) { nu[t] = mu + phi * y[t - 1] + theta * err[t - 1]; err[t] = y[t] - nu[t]; }
      err ~ normal(0, sigma);
    }

Translation choices:

* All priors are proper: nothing substituted. ``sigma ~ cauchy(0, 2.5)`` on ``(0, ∞)`` is
  ``HalfCauchy(2.5)``; PyMC's log transform is Stan's.
* The recursion for ``err[2..T-1]`` (``nu`` needs no ``err[T]``) is a ``pytensor.scan``. The parameters go
  in as ``non_sequences``: captured by closure, scan copies their random variables (with their
  shared generators) into its inner graph, which PyMC's values never replace and which cannot be
  compiled to JAX. ``nu`` is then Stan's, vectorised, with ``mu`` and 0 standing in for
  ``y[0]`` and ``err[0]``.
* ``err ~ normal(0, sigma)`` is written as the observed ``y ~ normal(nu, sigma)``: ``err = y - nu``
  and ``nu[t]`` depends on ``y[1..t-1]`` only, so ``y -> err`` has unit Jacobian and the densities
  are equal. The series is one ``pm.Data`` container ``y``, the observed value and ``nu``'s input.
* The likelihood does not factor over time: the whole series is ONE datum (``datum_axis = None``,
  ``N = 1``).

Columns: ``mu``, ``phi``, ``theta``, ``sigma`` (Stan's names).
"""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt

from pmd_bench.datasets import posteriordb
from pmd_bench.datasets.settings import resolve_settings

NAME = "arma-arma11"
datum_axis = None


def _error(y_now, y_before, err_before, mu, phi, theta):
    """One step of Stan's loop: ``err[t] = y[t] - (mu + phi * y[t - 1] + theta * err[t - 1])``."""
    return y_now - (mu + phi * y_before + theta * err_before)


def model() -> pm.Model:
    """The posterior: Stan's program, the whole series one datum."""
    data = posteriordb.load_data(NAME, resolve_settings())
    with pm.Model() as pm_model:
        y = pm.Data("y", np.asarray(data["y"], float))
        mu = pm.Normal("mu", 0.0, 10.0)
        phi = pm.Normal("phi", 0.0, 2.0)
        theta = pm.Normal("theta", 0.0, 2.0)
        sigma = pm.HalfCauchy("sigma", beta=2.5)
        first = y[0] - (mu + phi * mu)
        err = pytensor.scan(_error, sequences=[y[1:-1], y[:-2]], outputs_info=[first],
                            non_sequences=[mu, phi, theta], return_updates=False)
        y_before = pt.concatenate([mu[None], y[:-1]])
        err_before = pt.concatenate([pt.zeros(1), first[None], err])
        pm.Normal("y_given_past", mu=mu + phi * y_before + theta * err_before, sigma=sigma, observed=y)
    return pm_model


def reference_draws() -> dict[str, np.ndarray]:
    """posteriordb's reference draws ``{column: (chains, draws)}`` (Stan's names are PyMC's)."""
    draws = posteriordb.load_reference_draws(NAME, resolve_settings())
    return {column: draws[column] for column in ("mu", "phi", "theta", "sigma")}

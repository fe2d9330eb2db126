"""posteriordb's ``mesquite-logmesquite`` as a PyMC model (a custom model file for ``pmd.from_pymc``).

The Stan program (posteriordb ``models/stan/logmesquite.stan``) regresses the log weight of mesquite
bushes on the logs of their measurements and on ``group``; its ``transformed data`` takes the logs::

    parameters { vector[7] beta; real<lower=0> sigma; }
    model {
      log_weight ~ normal(beta[1] + beta[2] * log_diam1 + beta[3] * log_diam2 + beta[4] * log_canopy_height
                          + beta[5] * log_total_height + beta[6] * log_density + beta[7] * group, sigma);
    }

Translation choices:

* The ``transformed data`` logs are taken once in numpy; the predictors form the design matrix
  ``X`` (46 x 6, the intercept kept apart as ``beta[0]``).
* ``beta`` and ``sigma`` are flat (improper) in Stan. They get the suite's proper substitutes
  (``pmd.models.posteriordb.problem.FLAT_SCALE``): ``z ~ normal(0, FLAT_SCALE)`` independently on the
  coefficients of the regression of the standardised response on the standardised predictors,
  ``(y - ȳ)/s_y = z_0 + Σ_j z_j (x_j - x̄_j)/s_j`` (``s`` the population sd, ``ddof=0``), i.e.
  ``beta_j = s_y z_j / s_j``, ``beta_0 = ȳ + s_y z_0 - Σ_j beta_j x̄_j``: ``beta = M z + (ȳ, 0, ...)``,
  ``beta ~ MvNormal((ȳ, 0, ...), FLAT_SCALE² M Mᵀ)`` (its Cholesky factor computed here in float64);
  and ``sigma / s_y ~ half-normal(0, FLAT_SCALE)``, i.e. ``sigma ~ HalfNormal(FLAT_SCALE s_y)``
  (PyMC's log transform is Stan's).
* One datum is one bush (``datum_axis = 0``): ``N = 46``.

Columns: ``beta[0]`` ... ``beta[6]``, ``sigma`` (Stan's ``beta[1]`` ... ``beta[7]``, ``sigma``).
"""

import numpy as np
import pymc as pm

from pmd.models.posteriordb.problem import FLAT_SCALE
from pmd_bench.datasets import posteriordb
from pmd_bench.datasets.settings import resolve_settings

NAME = "mesquite-logmesquite"
LOGGED = ("diam1", "diam2", "canopy_height", "total_height", "density")
datum_axis = 0


def model() -> pm.Model:
    """The posterior: Stan's program with the ``FLAT_SCALE`` substitutes for the flat priors."""
    data = posteriordb.load_data(NAME, resolve_settings())
    log_weight = np.log(np.asarray(data["weight"], float))
    predictors = np.column_stack([np.log(np.asarray(data[key], float)) for key in LOGGED] + [data["group"]])
    s_y, means, sds = log_weight.std(), predictors.mean(axis=0), predictors.std(axis=0)
    matrix = np.diag(np.concatenate([[s_y], s_y / sds]))
    matrix[0, 1:] = -s_y * means / sds
    offset = np.concatenate([[log_weight.mean()], np.zeros(len(sds))])
    chol = FLAT_SCALE * np.linalg.cholesky(matrix @ matrix.T)
    with pm.Model() as pm_model:
        x = pm.Data("x", predictors)
        beta = pm.MvNormal("beta", mu=offset, chol=chol)
        sigma = pm.HalfNormal("sigma", sigma=FLAT_SCALE * s_y)
        pm.Normal("log_weight", mu=beta[0] + x @ beta[1:], sigma=sigma, observed=log_weight)
    return pm_model


def reference_draws() -> dict[str, np.ndarray]:
    """posteriordb's reference draws ``{column: (chains, draws)}``, Stan's 1-based ``beta`` renamed 0-based."""
    draws = posteriordb.load_reference_draws(NAME, resolve_settings())
    return {**{f"beta[{i}]": draws[f"beta[{i + 1}]"] for i in range(7)}, "sigma": draws["sigma"]}

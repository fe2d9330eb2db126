"""posteriordb's ``kidiq-kidscore_momiq`` as a PyMC model (a custom model file for ``pmd.from_pymc``).

The Stan program (posteriordb ``models/stan/kidscore_momiq.stan``) is a linear regression of the
child's test score on the mother's IQ::

    parameters { vector[2] beta; real<lower=0> sigma; }
    model { sigma ~ cauchy(0, 2.5); kid_score ~ normal(beta[1] + beta[2] * mom_iq, sigma); }

Translation choices:

* ``beta`` is flat (improper) in Stan. It gets the suite's proper substitute
  (``pmd.models.posteriordb.problem.FLAT_SCALE``): ``z ~ normal(0, FLAT_SCALE)`` independently on the
  coefficients of the regression of the standardised response on the standardised predictor,
  ``(y - ȳ)/s_y = z_0 + z_1 (x - x̄)/s_x`` (``s`` the population sd, ``ddof=0``). As a map,
  ``beta = M z + (ȳ, 0)`` with ``M = [[s_y, -s_y x̄/s_x], [0, s_y/s_x]]``, i.e.
  ``beta ~ MvNormal((ȳ, 0), FLAT_SCALE² M Mᵀ)`` (its Cholesky factor computed here in float64).
* ``sigma ~ cauchy(0, 2.5)`` on ``(0, ∞)`` is ``HalfCauchy(2.5)``; PyMC's log transform is Stan's.
* One datum is one child (``datum_axis = 0``): ``N = 434``.

Columns: ``beta[0]``, ``beta[1]``, ``sigma`` (Stan's ``beta[1]``, ``beta[2]``, ``sigma``).
"""

import numpy as np
import pymc as pm

from pmd.models.posteriordb.problem import FLAT_SCALE
from pmd_bench.datasets import posteriordb
from pmd_bench.datasets.settings import resolve_settings

NAME = "kidiq-kidscore_momiq"
datum_axis = 0


def model() -> pm.Model:
    """The posterior: Stan's program with the ``FLAT_SCALE`` substitute for ``beta``'s flat prior."""
    data = posteriordb.load_data(NAME, resolve_settings())
    kid_score, mom_iq = np.asarray(data["kid_score"], float), np.asarray(data["mom_iq"], float)
    s_y, s_x = kid_score.std(), mom_iq.std()
    matrix = np.array([[s_y, -s_y * mom_iq.mean() / s_x], [0.0, s_y / s_x]])
    chol = FLAT_SCALE * np.linalg.cholesky(matrix @ matrix.T)
    with pm.Model() as pm_model:
        x = pm.Data("mom_iq", mom_iq)
        beta = pm.MvNormal("beta", mu=[kid_score.mean(), 0.0], chol=chol)
        sigma = pm.HalfCauchy("sigma", beta=2.5)
        pm.Normal("kid_score", mu=beta[0] + beta[1] * x, sigma=sigma, observed=kid_score)
    return pm_model


def reference_draws() -> dict[str, np.ndarray]:
    """posteriordb's reference draws ``{column: (chains, draws)}``, Stan's 1-based ``beta`` renamed 0-based."""
    draws = posteriordb.load_reference_draws(NAME, resolve_settings())
    return {"beta[0]": draws["beta[1]"], "beta[1]": draws["beta[2]"], "sigma": draws["sigma"]}

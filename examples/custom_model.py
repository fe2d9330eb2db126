"""A complete model file for the ``custom`` experiment: a robust (Student-t) linear regression.

``y_n = α + x_n·β + σ ε_n`` with ``ε_n ~ Student-t(ν = 4)``, 400 rows of two predictors simulated
from a fixed seed (so the file is its own data set), priors ``α, β ~ N(0, 2.5²)`` and
``σ ~ HalfNormal(1)``. One datum is one row: ``x`` is a ``pm.Data`` container whose first axis
has the observed ``y``'s length, so ``pmd.from_pymc`` splits both by row (``datum_axis = 0``, the
default, written out here).

Run every method on it (NUTS makes the reference draws, since this file defines no
``reference_draws()``)::

    snakemake --cores 2 results/custom/robust_regression/table.md results/custom/robust_regression/cost.md

Copy this file for your own model: keep ``model()`` returning the ``pymc.Model`` with its data,
and name the file in a config's ``custom.models`` (README, "Add your own model").
"""

import numpy as np
import pymc as pm

datum_axis = 0  # one datum = one row of every observed variable (None: the whole data set, as a time series)


def model() -> pm.Model:
    rng = np.random.default_rng(20161)
    x = rng.normal(size=(400, 2))
    y = 1.0 + x @ np.array([0.8, -0.4]) + 0.5 * rng.standard_t(4.0, size=400)
    with pm.Model() as robust:
        rows = pm.Data("x", x)
        alpha = pm.Normal("alpha", 0.0, 2.5)
        beta = pm.Normal("beta", 0.0, 2.5, shape=2)
        sigma = pm.HalfNormal("sigma", 1.0)
        pm.StudentT("y", nu=4.0, mu=alpha + rows @ beta, sigma=sigma, observed=y)
    return robust

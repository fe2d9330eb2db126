"""The linear regressions of the suite: ``y_n ~ normal(x_nᵀ β, σ)``, one datum per row.

Each Stan program's ``transformed data`` is computed here once (log transforms, age dummies,
centred predictors), and its coefficients are stacked into one vector ``β`` matched by a design
matrix whose constant column sits where the program's intercept does. A datum is
``{"x": (p,), "y": ()}`` (``x`` includes the constant 1).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy import stats

from pmd_bench.datasets import posteriordb as pdb
from pmd_bench.datasets.errors import FormatError
from pmd_bench.datasets.settings import Settings

from .parameters import Block, Parameters, Positive, Real
from .priors import AffineNormal, Half, Normal, StudentT, half_cauchy, half_normal, half_student_t
from .problem import FLAT_SCALE, PosteriordbProblem, build, fields

Array = jax.Array


def standardised_prior(name: str, design: np.ndarray, y: np.ndarray) -> AffineNormal:
    """The proper substitute for flat priors on all of a regression's coefficients (see
    :data:`~.problem.FLAT_SCALE`), ``design``'s column 0 the constant: ``z ~ N(0, FLAT_SCALE² I)``
    on the coefficients of ``(y - ȳ)/s_y = z_0 + Σ_j z_j (x_j - x̄_j)/s_j``, mapped to the raw
    coefficients ``β_j = s_y z_j / s_j``, ``β_0 = ȳ + s_y z_0 - Σ_j β_j x̄_j``.
    """
    mean, sd = design[:, 1:].mean(axis=0), design[:, 1:].std(axis=0)
    if np.any(sd == 0) or y.std() == 0:
        raise FormatError(f"{name}: a predictor or the response is constant: the standardised prior is undefined")
    slopes = np.arange(1, design.shape[1])
    matrix, offset = np.zeros((design.shape[1],) * 2), np.zeros(design.shape[1])
    matrix[slopes, slopes] = y.std() / sd
    matrix[0, slopes] = -y.std() * mean / sd
    matrix[0, 0], offset[0] = y.std(), y.mean()
    return AffineNormal(matrix, offset, FLAT_SCALE)


def flat_scale_prior(y: np.ndarray) -> Half:
    """The proper substitute for a flat prior on a residual sd: ``σ/sd(y) ~ half-normal(0, FLAT_SCALE²)``."""
    return half_normal(FLAT_SCALE * float(y.std()))


def _gaussian_log_likelihood(values: tuple[Array, ...], datum: dict) -> Array:
    *coefficients, sigma = values
    beta = jnp.concatenate([jnp.atleast_1d(c) for c in coefficients])
    return stats.norm.logpdf(datum["y"], datum["x"] @ beta, sigma)


def _rows(name: str, data: dict[str, np.ndarray], *keys: str) -> list[np.ndarray]:
    """The ``(N,)`` data fields ``keys``, ``N`` the program's ``N``."""
    (n,) = fields(name, data, N=())
    return fields(name, data, **{key: (int(n),) for key in keys})


def _linear(name: str, design: np.ndarray, y: np.ndarray, blocks: tuple[Block, ...]) -> PosteriordbProblem:
    """``y ~ normal(design β, sigma)``, ``β`` the stacked values of ``blocks[:-1]``, ``blocks[-1]`` sigma."""
    return build(name, Parameters(blocks), _gaussian_log_likelihood, {"x": design, "y": y}, iid=True)


def _flat_regression(
    name: str, design: np.ndarray, y: np.ndarray, sigma_prior: Half | None = None
) -> PosteriordbProblem:
    """``vector[p] beta; real<lower=0> sigma;`` with ``beta`` flat (intercept ``beta[1]``); ``sigma``
    has ``sigma_prior`` or, when None, is flat too."""
    beta = Real("beta", standardised_prior(name, design, y), length=design.shape[1])
    return _linear(name, design, y, (beta, Positive("sigma", sigma_prior or flat_scale_prior(y))))


def _with_intercept(*columns: np.ndarray) -> np.ndarray:
    return np.column_stack([np.ones_like(columns[0]), *columns])


def kidscore_momiq(settings: Settings) -> PosteriordbProblem:
    """``kidiq-kidscore_momiq``: ``kid_score ~ normal(beta[1] + beta[2] mom_iq, sigma)``,
    ``sigma ~ cauchy(0, 2.5)``; ``beta`` flat in Stan (standardised substitute here)."""
    name = "kidiq-kidscore_momiq"
    kid_score, mom_iq = _rows(name, pdb.load_data(name, settings), "kid_score", "mom_iq")
    return _flat_regression(name, _with_intercept(mom_iq), kid_score, half_cauchy(2.5))


def logearn_height(settings: Settings) -> PosteriordbProblem:
    """``earnings-logearn_height``: ``log(earn) ~ normal(beta[1] + beta[2] height, sigma)``; ``beta``
    and ``sigma`` flat in Stan (standardised substitutes here)."""
    name = "earnings-logearn_height"
    earn, height = _rows(name, pdb.load_data(name, settings), "earn", "height")
    return _flat_regression(name, _with_intercept(height), np.log(earn))


def logmesquite(settings: Settings) -> PosteriordbProblem:
    """``mesquite-logmesquite``: ``log(weight)`` on an intercept, the logs of ``diam1``, ``diam2``,
    ``canopy_height``, ``total_height``, ``density``, and ``group``; ``beta`` (7) and ``sigma`` flat
    in Stan (standardised substitutes here)."""
    name = "mesquite-logmesquite"
    keys = ("weight", "diam1", "diam2", "canopy_height", "total_height", "density", "group")
    *positive, group = _rows(name, pdb.load_data(name, settings), *keys)
    log_weight, *predictors = np.log(positive)
    return _flat_regression(name, _with_intercept(*predictors, group), log_weight)


def nes(settings: Settings) -> PosteriordbProblem:
    """``nes2000-nes``: ``partyid7`` on an intercept, ``real_ideo``, ``race_adj``, dummies of
    ``age_discrete`` = 2, 3, 4, ``educ1``, ``gender``, ``income``; ``beta`` (9) and ``sigma`` flat in
    Stan (standardised substitutes here)."""
    name = "nes2000-nes"
    keys = ("partyid7", "real_ideo", "race_adj", "age_discrete", "educ1", "gender", "income")
    partyid7, real_ideo, race_adj, age, educ1, gender, income = _rows(name, pdb.load_data(name, settings), *keys)
    ages = [(age == level).astype(np.float64) for level in (2, 3, 4)]
    return _flat_regression(name, _with_intercept(real_ideo, race_adj, *ages, educ1, gender, income), partyid7)


def kilpisjarvi(settings: Settings) -> PosteriordbProblem:
    """``kilpisjarvi_mod-kilpisjarvi``: ``y ~ normal(alpha + beta x, sigma)``, ``alpha ~
    normal(pmualpha, psalpha)``, ``beta ~ normal(pmubeta, psbeta)``; ``sigma`` flat in Stan
    (standardised substitute here)."""
    name = "kilpisjarvi_mod-kilpisjarvi"
    data = pdb.load_data(name, settings)
    x, y = _rows(name, data, "x", "y")
    hyper = fields(name, data, pmualpha=(), psalpha=(), pmubeta=(), psbeta=())
    mu_alpha, sd_alpha, mu_beta, sd_beta = map(float, hyper)
    blocks = (
        Real("alpha", Normal(mu_alpha, sd_alpha)),
        Real("beta", Normal(mu_beta, sd_beta)),
        Positive("sigma", flat_scale_prior(y)),
    )
    return _linear(name, _with_intercept(x), y, blocks)


def diamonds(settings: Settings) -> PosteriordbProblem:
    """``diamonds-diamonds`` (brms): ``Y ~ normal(Intercept + Xc b, sigma)`` with ``Xc`` the columns
    2..K of ``X`` centred, ``b ~ normal(0, 1)``, ``Intercept ~ student_t(3, 8, 10)``, ``sigma ~
    student_t(3, 0, 10)`` truncated to ``(0, ∞)``. All priors proper: nothing substituted."""
    name = "diamonds-diamonds"
    data = pdb.load_data(name, settings)
    (y,) = _rows(name, data, "Y")
    (k,) = fields(name, data, K=())
    x, prior_only = fields(name, data, X=(len(y), int(k)), prior_only=())
    if prior_only != 0:
        raise FormatError(f"{name}: prior_only = {prior_only:g}; only the posterior (prior_only = 0) is modelled")
    centred = x[:, 1:] - x[:, 1:].mean(axis=0)
    blocks = (
        Real("b", Normal(0.0, 1.0), length=centred.shape[1]),
        Real("Intercept", StudentT(3.0, 8.0, 10.0)),
        Positive("sigma", half_student_t(3.0, 10.0)),
    )
    return _linear(name, np.column_stack([centred, np.ones(len(y))]), y, blocks)

"""Metrics against a posterior known on a grid (Dai et al. 2016, Appendix H.1), for every method.

The paper scores a method by the total variation and the cross entropy between the true posterior
and the method's density on a grid. A method without a density (particles, MCMC draws) is given
one "by kernel density estimation and Gaussian estimation, reporting the better one", the KDE
with a bandwidth of 0.1 × the median pairwise distance (H.1). That KDE is coarse: even exact
posterior draws score far from zero under it, so :func:`score` also reports a sharper estimator
(a weighted KDE whose bandwidth maximises the leave-one-out likelihood) and :func:`floor` scores
exact posterior draws under each estimator: the best any method can do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from .bandwidth import median_distance, weighted_cov
from .kde import kde_log_density, pairwise_sq_distances
from .posterior import GaussianPosterior, Posterior, own_draws
from .weights import normalize

Array = jax.Array


@dataclass(frozen=True)
class Grid:
    """A regular grid on a box: ``size[k]`` points from ``lower[k]`` to ``upper[k]`` per axis."""

    lower: tuple[float, ...]
    upper: tuple[float, ...]
    size: tuple[int, ...]

    def __post_init__(self):
        if not len(self.lower) == len(self.upper) == len(self.size):
            raise ValueError(f"grid lower/upper/size disagree in length: {self.lower}, {self.upper}, {self.size}")
        if any(lo >= hi for lo, hi in zip(self.lower, self.upper)):
            raise ValueError(f"grid lower {self.lower} must lie below upper {self.upper} on every axis")

    @property
    def axes(self) -> list[np.ndarray]:
        return [np.linspace(lo, hi, n) for lo, hi, n in zip(self.lower, self.upper, self.size)]

    @property
    def spacing(self) -> np.ndarray:
        return np.array([(hi - lo) / (n - 1) for lo, hi, n in zip(self.lower, self.upper, self.size)])

    @property
    def cell_volume(self) -> float:
        return float(np.prod(self.spacing))

    @property
    def points(self) -> np.ndarray:
        """All grid points, ``(Π size, d)``, C order over the axes (``ij`` indexing)."""
        mesh = np.meshgrid(*self.axes, indexing="ij")
        return np.stack([g.ravel() for g in mesh], axis=1).astype(np.float32)


@dataclass(frozen=True)
class GridPosterior:
    """A density known on a grid: ``log_prob`` holds the log-probability of each cell."""

    grid: Grid
    log_prob: Array

    @classmethod
    def from_unnormalized(cls, grid: Grid, log_density: np.ndarray) -> "GridPosterior":
        """Normalise unnormalised log-density values at the grid points into cell probabilities."""
        log_density = np.asarray(log_density, np.float64)
        log_prob = log_density - np.logaddexp.reduce(log_density)
        return cls(grid=grid, log_prob=jnp.asarray(log_prob, jnp.float32))

    @property
    def log_density(self) -> Array:
        """The normalised log-density at each grid point."""
        return self.log_prob - math.log(self.grid.cell_volume)

    def sample(self, key: Array, n: int) -> Array:
        """``n`` exact draws: a cell by its probability, then uniform within the cell."""
        k_cell, k_jitter = jax.random.split(key)
        idx = jax.random.categorical(k_cell, self.log_prob, shape=(n,))
        spacing = jnp.asarray(self.grid.spacing, jnp.float32)
        jitter = (jax.random.uniform(k_jitter, (n, len(self.grid.size))) - 0.5) * spacing
        return jnp.asarray(self.grid.points)[idx] + jitter


def total_variation(true: GridPosterior, log_density: Array) -> Array:
    """``½ ∫ |q* - q̃|`` by quadrature, ``q̃`` renormalised on the grid (H.1)."""
    log_q = normalize(log_density)
    return 0.5 * jnp.sum(jnp.abs(jnp.exp(true.log_prob) - jnp.exp(log_q)))


def cross_entropy(true: GridPosterior, log_density: Array) -> Array:
    """``-∫ q* log q̃`` by quadrature, ``q̃`` renormalised on the grid (H.1). Its minimum, reached
    at ``q̃ = q*``, is the entropy of ``q*`` (:func:`entropy`)."""
    log_q = normalize(log_density) - math.log(true.grid.cell_volume)
    p = jnp.exp(true.log_prob)
    return -jnp.sum(jnp.where(p > 0, p * jnp.maximum(log_q, -1e30), 0.0))


def entropy(true: GridPosterior) -> Array:
    """``-∫ q* log q*``: the smallest cross entropy any density can have."""
    return cross_entropy(true, true.log_density)


def kde_fit(samples: Array, log_weights: Array, bandwidth: Array):
    """A weighted isotropic Gaussian KDE with bandwidth ``h``, as a function ``points -> log q̃``."""
    chol = bandwidth * jnp.eye(samples.shape[1], dtype=samples.dtype)
    return lambda points: kde_log_density(points, samples, log_weights, chol)


def gaussian_fit(samples: Array, log_weights: Array):
    """The weighted moment-matched Gaussian, as a function ``points -> log q̃`` (H.1)."""
    w = jnp.exp(normalize(log_weights))
    d = samples.shape[1]
    cov = weighted_cov(samples, log_weights) + 1e-9 * jnp.eye(d, dtype=samples.dtype)
    return GaussianPosterior(w @ samples, jnp.linalg.cholesky(cov)).log_density


def loo_bandwidth(samples: Array, log_weights: Array, num_candidates: int = 32) -> Array:
    """The isotropic bandwidth maximising the weighted leave-one-out log-likelihood.

    Candidates are geometric from 1/100 to 1 of the root-mean variance. Pairs at distance zero
    (duplicates left by resampling) count as the left-out point itself, so they cannot drive ``h``
    to zero.
    """
    d = samples.shape[1]
    log_w = normalize(log_weights)
    scale = jnp.sqrt(jnp.trace(weighted_cov(samples, log_weights)) / d)
    scale = jnp.where(scale > 0, scale, 1.0)  # a single distinct sample: unit scale
    candidates = scale * jnp.geomspace(0.01, 1.0, num_candidates)
    sq = pairwise_sq_distances(samples, samples)
    others = sq > 1e-12 * scale**2

    def loo(h):
        log_k = -0.5 * sq / h**2 - d * jnp.log(h) - 0.5 * d * math.log(2 * math.pi)
        log_k = jnp.where(others, log_k + log_w[None, :], -jnp.inf)
        per_point = logsumexp(log_k, axis=1)
        usable = jnp.isfinite(per_point) & jnp.isfinite(log_w)
        return jnp.sum(jnp.where(usable, jnp.exp(log_w) * per_point, 0.0))

    scores = jax.lax.map(loo, candidates)
    return candidates[jnp.argmax(scores)]


def _estimators(samples: Array, log_weights: Array) -> dict:
    median = median_distance(samples, log_weights)
    # One distinct sample (an MCMC run just past burn-in) has no pairwise distance: fall back to
    # the unit scale of the problem rather than a NaN bandwidth.
    median = jnp.where(jnp.isfinite(median) & (median > 0), median, 1.0)
    return {
        "kde_median": kde_fit(samples, log_weights, 0.1 * median),
        "gaussian": gaussian_fit(samples, log_weights),
        "kde_loo": kde_fit(samples, log_weights, loo_bandwidth(samples, log_weights)),
    }


def _score_estimates(true: GridPosterior, estimates: dict) -> dict:
    """``tv_<name>``/``ce_<name>`` (arrays) of each estimator's log-density on the grid."""
    points = jnp.asarray(true.grid.points)
    out = {}
    for name, fn in estimates.items():
        log_q = fn(points)
        out[f"tv_{name}"] = total_variation(true, log_q)
        out[f"ce_{name}"] = cross_entropy(true, log_q)
    return out


@partial(jax.jit, static_argnums=0)
def _sample_scores(grid: Grid, log_prob: Array, samples: Array, log_weights: Array) -> dict:
    """:func:`_score_estimates` of the three sample estimators (:func:`_estimators`), as one
    compiled program per grid and sample shape: an evaluation is then one call, where the same
    operations run one by one would compile their loops at every evaluation."""
    return _score_estimates(GridPosterior(grid, log_prob), _estimators(samples, log_weights))


def _named(scores: dict) -> dict:
    """``scores`` as float arrays, with ``tv``/``ce`` the better of ``kde_median`` and ``gaussian``
    (H.1's rule for a method without a density, applied to every method and to the floor) and
    ``tv_sharp``/``ce_sharp`` the ``kde_loo`` values."""
    out = {name: np.asarray(value, np.float64) for name, value in scores.items()}
    out["tv"] = np.minimum(out["tv_kde_median"], out["tv_gaussian"])
    out["ce"] = np.minimum(out["ce_kde_median"], out["ce_gaussian"])
    out["tv_sharp"], out["ce_sharp"] = out["tv_kde_loo"], out["ce_kde_loo"]
    return out


def score(posterior: Posterior, true: GridPosterior, key: Array, num_samples: int = 1500) -> dict:
    """Total variation and cross entropy of a posterior against the gridded truth.

    Every method is scored the same way, from ``num_samples`` points of its own distribution
    (:func:`pmd.posterior.own_draws`: a density's draws, or its weighted particles), by the same
    estimators that :func:`floor` applies to ``num_samples`` exact draws, so a score and its floor
    are at the same sample size. Keys: ``tv_<est>``/``ce_<est>`` for each estimator
    (``kde_median`` and ``gaussian`` as in H.1, ``kde_loo`` the sharper one), ``tv``/``ce`` the
    better of ``kde_median`` and ``gaussian`` (H.1's rule for a method without a density, applied
    to every method) and ``tv_sharp``/``ce_sharp`` (the ``kde_loo`` values). A posterior with a
    density also gets ``tv_own``/``ce_own``, its exact density on the grid: H.1's score for such a
    method, kept as a secondary column since it depends on no sample size.
    """
    samples, log_w = own_draws(posterior, key, num_samples)
    scores = dict(_sample_scores(true.grid, true.log_prob, samples, log_w))
    if posterior.has_density():
        scores.update(_score_estimates(true, {"own": posterior.log_density}))
    return {name: float(value) for name, value in _named(scores).items()}


FLOOR_REPEATS = 100
"""Independent sets of exact draws behind a floor. One set's score is a random quantity, and a wide
one: on the Welling-Teh posterior at 100 draws the paper's estimator (a KDE at 0.1 × the median
pairwise distance, which falls within or across the two modes by chance) scores 0.48 with a
standard deviation of 0.12 over sets. A single set could put the floor anywhere in that range, and a
method's sample below it; the mean of 100 sets has a standard error near 0.012."""


def floor_scores(true: GridPosterior, key: Array, num_samples: int = 1500,
                 repeats: int = FLOOR_REPEATS) -> dict[str, np.ndarray]:
    """Every score of :func:`score` for ``repeats`` independent sets of ``num_samples`` exact
    posterior draws (arrays of length ``repeats``): the distribution of what a perfect sampler's
    ``num_samples`` draws score."""
    if repeats < 1:
        raise ValueError(f"floor_scores needs repeats >= 1, got {repeats}")
    uniform = jnp.full((num_samples,), -math.log(num_samples))
    one = jax.jit(lambda k: _sample_scores(true.grid, true.log_prob, true.sample(k, num_samples), uniform))
    return _named(jax.lax.map(one, jax.random.split(key, repeats)))  # one set at a time: memory of one


def floor_summary(true: GridPosterior, sets: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """``(mean, sd)`` of :func:`floor_scores`' ``sets``, score by score: the floor, with the entropy
    of the truth (the cross-entropy floor) added, and the standard deviation of one set's score."""
    mean = {name: float(np.mean(values)) for name, values in sets.items()}
    return {**mean, "entropy": float(entropy(true))}, {name: float(np.std(values, ddof=1)) for name, values in sets.items()}


def floor(true: GridPosterior, key: Array, num_samples: int = 1500, repeats: int = FLOOR_REPEATS) -> dict:
    """The mean score of ``num_samples`` exact posterior draws under each estimator, over ``repeats``
    independent sets (:func:`floor_scores`; :data:`FLOOR_REPEATS` says why not one set): what a
    perfect sampler scores at that sample size. Plus the entropy of the truth (the cross-entropy
    floor)."""
    return floor_summary(true, floor_scores(true, key, num_samples, repeats))[0]

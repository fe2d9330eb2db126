"""Sparse Gaussian-process regression (Dai et al. 2016, section 6 and Appendix F.1, H.3).

The model of F.1 with ``K̃ = β⁻¹ I``: ``M`` inducing inputs ``Z``, inducing values
``u ~ N(0, K_mm)`` and ``p(y_i | u, Z) = N(y_i | K_im K_mm⁻¹ u, β⁻¹)``, with the Gaussian RBF kernel
``k(x, x') = s² exp(-‖x - x'‖² / (2σ²))`` of fixed hyperparameters (H.3: the bandwidth σ by the
median trick, :func:`median_bandwidth`; the noise variance ``β⁻¹`` fixed). ``K_mm`` carries a jitter
``ε s² I``: it is part of the model (the prior of ``u`` is ``N(0, K_mm + ε s² I)``), so the closed
forms below, used as the truth, are exact for the same model the methods run on.

Every method works in *whitened* coordinates ``v = L⁻¹ u`` with ``L Lᵀ = K_mm``: the prior is
``N(0, I)`` whatever ``Z`` is, and a datum's mean is ``a_iᵀ v`` with ``a_i = L⁻¹ K_mi``
(:func:`features`). A Gaussian ``q(v) = N(Λ⁻¹h, Λ⁻¹)`` is held by its natural parameters
``(Λ, h)``; the prox step of F.1 and Hensman's natural-gradient step (they are the same map, see
:func:`prox_update`) are affine in them.

Choices where F.1 is vague, taken as the authors' cited sources take them:

* F.1 writes ``Γ = diag(K̃_ii - Q_ii) + β⁻¹ I`` (the FITC form of [35]) for a model it states with
  ``K̃ = β⁻¹ I``; we use the stated model, so the likelihood variance is ``Γ = β⁻¹`` and the exact
  posterior of ``u`` for a fixed ``Z`` is Titsias' (2009) optimal ``q(u)`` (:func:`titsias_posterior`).
* The predictive at a test input is Titsias' and Hensman's (2013):
  ``f* | y ~ N(k*ᵀK⁻¹m, k** - k*ᵀK⁻¹k* + k*ᵀK⁻¹SK⁻¹k*)`` (the latent function, noise excluded).

The truth (:func:`exact_gp_predict`, :func:`titsias_posterior`, :func:`titsias_predict`,
:func:`dtc_log_evidence`) is computed in float64 NumPy, independently of the JAX methods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg as sla
from scipy.spatial.distance import pdist
from jax.scipy.linalg import cho_solve, solve_triangular

from ..interface import ConfigError
from ..weights import categorical_draw, effective_sample_size, normalize

Array = jax.Array


# -- the kernel and its bandwidth -----------------------------------------------------------------
def rbf(x1, x2, lengthscale, variance=1.0, xp=jnp):
    """``k(x, x') = s² exp(-‖x - x'‖² / (2σ²))`` between the rows of ``x1 (n, d)`` and ``x2 (m, d)``.

    ``xp`` is ``jax.numpy`` (the methods) or ``numpy`` (the float64 truth). Squared distances are
    expanded after subtracting the mean of ``x2`` from both sets (a translation changes no distance
    and keeps the float32 expansion from cancelling) and clipped at zero.
    """
    return variance * xp.exp(-0.5 * squared_distances(x1, x2, xp) / lengthscale**2)


def squared_distances(x1, x2, xp=jnp):
    """``‖x1_i - x2_j‖²`` between the rows of ``x1 (n, d)`` and ``x2 (m, d)``, as :func:`rbf` computes them."""
    centre = xp.mean(x2, axis=0)
    a, b = x1 - centre, x2 - centre
    sq = xp.sum(a * a, axis=1)[:, None] + xp.sum(b * b, axis=1)[None, :] - 2.0 * a @ b.T
    return xp.maximum(sq, 0.0)


def median_bandwidth(x: np.ndarray, scale: float = 1.0, max_points: int = 2000, seed: int = 0) -> float:
    """The median trick of H.3: ``scale`` times the median distance between pairs of distinct rows.

    H.3.1 takes ``scale = 0.1`` (σ = 0.1 × the median), H.3.2 ``scale = 1``. Above ``max_points``
    rows the median is that of a random subset of ``max_points`` rows (seeded): the full set of
    pairs of H.3.2's 463,715 songs has 10¹¹ entries, and the median of 2·10⁶ pairs is within a
    fraction of a percent of it.
    """
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ConfigError(f"the median trick needs a (n >= 2, d) array of inputs, got shape {x.shape}")
    if not scale > 0:
        raise ConfigError(f"bandwidth_scale must be positive, got {scale!r}")
    if x.shape[0] > max_points:
        x = x[np.random.default_rng(seed).choice(x.shape[0], max_points, replace=False)]
    median = float(np.median(pdist(x)))
    if not median > 0:
        raise ConfigError("the median trick found a zero median distance: the inputs are (mostly) identical")
    return scale * median


# -- the model --------------------------------------------------------------------------------------
def _positive(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) or not value > 0:
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SparseGP:
    """The sparse-GP regression model of F.1 with fixed hyperparameters (module docstring).

    Args:
        lengthscale: the RBF bandwidth σ.
        noise_variance: ``β⁻¹`` (H.3.1: 0.001; H.3.2: 0.01).
        num_inducing: ``M``.
        lower, upper: the box ``Z`` is uniform on (PMD's prior over the inducing inputs, F.1).
        variance: the kernel's signal variance ``s²`` (1: the paper fixes no other).
        jitter: ``ε``: ``K_mm + ε s² I`` (the model's prior covariance of ``u``).
    """

    lengthscale: float
    noise_variance: float
    num_inducing: int
    lower: tuple
    upper: tuple
    variance: float = 1.0
    jitter: float = 1e-5

    def __post_init__(self) -> None:
        for name in ("lengthscale", "noise_variance", "variance", "jitter"):
            object.__setattr__(self, name, _positive(name, getattr(self, name)))
        m = self.num_inducing
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
            raise ConfigError(f"num_inducing must be a positive integer, got {m!r}")
        lower = tuple(float(v) for v in np.atleast_1d(self.lower))
        upper = tuple(float(v) for v in np.atleast_1d(self.upper))
        if len(lower) != len(upper) or not all(lo < hi for lo, hi in zip(lower, upper)):
            raise ConfigError(f"the inducing box needs lower < upper in every dimension, got lower={lower}, "
                              f"upper={upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "num_inducing", int(m))

    @classmethod
    def from_data(cls, x: np.ndarray, *, noise_variance: float, num_inducing: int, bandwidth_scale: float = 1.0,
                  jitter: float = 1e-5, seed: int = 0) -> "SparseGP":
        """H.3's model for training inputs ``x (n, d)``: σ by the median trick, ``Z``'s box = the data's."""
        x = np.asarray(x)
        return cls(lengthscale=median_bandwidth(x, bandwidth_scale, seed=seed), noise_variance=noise_variance,
                   num_inducing=num_inducing, lower=tuple(x.min(axis=0)), upper=tuple(x.max(axis=0)),
                   jitter=jitter)

    @property
    def dim(self) -> int:
        return len(self.lower)

    @property
    def precision(self) -> float:
        """``β``."""
        return 1.0 / self.noise_variance

    def kernel(self, x1, x2, xp=jnp):
        """``k(x1, x2)`` with this model's bandwidth and signal variance."""
        return rbf(x1, x2, self.lengthscale, self.variance, xp)

    def kmm(self, z, xp=jnp):
        """``K_mm + ε s² I``: the prior covariance of ``u`` at inducing inputs ``z (M, d)``."""
        return self.kernel(z, z, xp) + self.jitter * self.variance * xp.eye(z.shape[0], dtype=z.dtype)

    def sample_inducing(self, key: Array, n: int, dtype=None) -> Array:
        """``n`` draws ``Z ~ Uniform(box)^M`` of shape ``(n, M, d)`` (F.1's prior ``p(Z)``), in JAX's
        default float type unless ``dtype`` is given."""
        dtype = jnp.result_type(float) if dtype is None else dtype
        lo, hi = jnp.asarray(self.lower, dtype), jnp.asarray(self.upper, dtype)
        return jax.random.uniform(key, (n, self.num_inducing, self.dim), dtype, lo, hi)

    def check_batch(self, batch: Any) -> int:
        """Check ``{"x": (B, d), "y": (B,)}`` and return ``B``; a :class:`ConfigError` names what is wrong."""
        if not isinstance(batch, dict) or set(batch) != {"x", "y"}:
            raise ConfigError(f"a sparse-GP batch is a dict with keys 'x' and 'y', got "
                              f"{sorted(batch) if isinstance(batch, dict) else type(batch).__name__}")
        xs, ys = jnp.shape(batch["x"]), jnp.shape(batch["y"])
        if len(xs) != 2 or xs[1] != self.dim or ys != xs[:1]:
            raise ConfigError(f"batch['x'] must be (B, {self.dim}) and batch['y'] (B,), got {xs} and {ys}")
        return xs[0]


# -- whitened features and natural parameters (the JAX side) ---------------------------------------
def whitening(model: SparseGP, z: Array) -> Array:
    """``L = chol(K_mm + ε s² I)`` for inducing inputs ``z (M, d)``."""
    return jnp.linalg.cholesky(model.kmm(z))


def features(model: SparseGP, z: Array, chol_k: Array, x: Array) -> Array:
    """``A = K_xm L⁻ᵀ (n, M)``: row ``i`` is ``a_i``, a datum's mean is ``a_iᵀ v`` (whitened ``v``)."""
    return solve_triangular(chol_k, model.kernel(z, x), lower=True).T


def noise_log_density(model: SparseGP, y: Array) -> Array:
    """``log N(y_n | 0, β⁻¹)`` of each row: the constant ``c``'s terms of every likelihood statistic here."""
    beta = model.precision
    return -0.5 * beta * y**2 + 0.5 * jnp.log(beta / (2.0 * math.pi))


def batch_statistics(model: SparseGP, a: Array, y: Array, scale,
                     keep: Array | None = None) -> tuple[Array, Array, Array]:
    """The batch's Gaussian likelihood ``scale · Σ_b log N(y_b | a_bᵀv, β⁻¹)`` as
    ``(-½ vᵀPv + rᵀv + c)``: returns ``(P, r, c) = (scale β AᵀA, scale β Aᵀy, scale Σ_b log N(y_b|0,β⁻¹))``.
    ``scale = N/B`` makes it an unbiased estimate of the full-data log-likelihood. ``keep`` (0/1 per
    row) drops the rows where it is 0 (the padding of :func:`sum_over_rows`)."""
    beta = model.precision
    if keep is not None:
        a, y = a * keep[:, None], y * keep
    terms = noise_log_density(model, y)
    c = scale * jnp.sum(terms if keep is None else terms * keep)
    return scale * beta * (a.T @ a), scale * beta * (a.T @ y), c


def slice_rows(x: Array, y: Array, chunk_rows: int) -> tuple[Array, Array, Array]:
    """``x (N, d)`` and ``y (N,)`` as slices of ``chunk_rows`` rows, the last zero-padded:
    ``(xs (S, chunk_rows, d), ys (S, chunk_rows), keep (S, chunk_rows))`` with ``keep = 0`` on the padding."""
    pad = -y.shape[0] % chunk_rows
    xs = jnp.pad(x, ((0, pad), (0, 0))).reshape(-1, chunk_rows, x.shape[1])
    ys = jnp.pad(y, (0, pad)).reshape(-1, chunk_rows)
    keep = jnp.pad(jnp.ones_like(y), (0, pad)).reshape(-1, chunk_rows)
    return xs, ys, keep


def sum_over_rows(fn, x: Array, y: Array, chunk_rows: int | None):
    """``fn(x, y, keep)`` (a pytree, additive over rows) summed over slices of ``chunk_rows`` rows:
    one compiled slice, the last zero-padded with ``keep = 0`` on its padding (:func:`slice_rows`), so
    that no ``rows × M`` array of the whole data set exists at once. ``chunk_rows=None``: one slice."""
    if chunk_rows is None or chunk_rows >= y.shape[0]:
        return fn(x, y, jnp.ones_like(y))
    parts = jax.lax.map(lambda c: fn(*c), slice_rows(x, y, chunk_rows))
    return jax.tree_util.tree_map(lambda p: jnp.sum(p, axis=0), parts)


def kernel_statistics(model: SparseGP, z: Array, data: dict, chunk_rows: int | None = None
                      ) -> tuple[Array, Array, Array]:
    """The whole data set's sufficient statistics of the DTC likelihood for inducing inputs ``z``:
    ``(Φ, ψ, c) = (K_mn K_nm, K_mn y, Σ_n log N(y_n | 0, β⁻¹))``, summed over slices of ``chunk_rows``
    rows (:func:`sum_over_rows`) in ``O(N M (M + d))``, with no ``N × M`` array. Unwhitened, so that
    replacing a few inducing inputs changes only their rows and columns (:meth:`DataKernel.replace`)."""
    x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])

    def part(xc, yc, keep):
        k = model.kernel(z, xc) * keep  # (M, rows); padding rows zeroed
        return k @ k.T, k @ yc, jnp.sum(noise_log_density(model, yc) * keep)

    return sum_over_rows(part, x, y, chunk_rows)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class DataKernel:
    """The whole data set's kernel against inducing inputs ``Z``, kept to replace a few of them
    cheaply: ``k = K_nm (N', M)`` over the rows padded to whole slices, zero on the padding
    (``keep = 0``, ``y = 0`` there), with the statistics of :func:`kernel_statistics`
    ``(Φ, ψ, c) = (kᵀk, kᵀy, Σ_n log N(y_n | 0, β⁻¹))``. Memory: ``N M`` numbers (H.3.2's
    463,715 × 1,024 float64: 3.8 GB), held once by a round's compiled program (:meth:`build`;
    ``workflow/resources.py``, ``_moves_kernel``)."""

    x: Array
    y: Array
    keep: Array
    k: Array
    phi: Array
    psi: Array
    c: Array

    @classmethod
    def build(cls, model: SparseGP, z: Array, data: dict, chunk_rows: int | None = None,
              reuse: tuple[Array, Array, Array] | None = None) -> "DataKernel":
        """``K_nm`` built over slices of ``chunk_rows`` rows (the distances' temporaries are
        ``chunk_rows × M``), with ``Φ = kᵀk`` and ``ψ = kᵀy`` summed over the slices as they are
        built: ``O(N M (M + d))``, of which the products are ``N M²``. ``reuse = (flag, Φ, ψ)``:
        where ``flag`` (a traced boolean), the given ``Φ, ψ`` (the statistics of this same ``Z``,
        computed for another chain) are taken instead of those products, and the build is
        ``O(N M d)``. The kernel is
        evaluated as the prox steps evaluate it (``kernel(z, x)``, the distances expanded about the
        rows' mean, :func:`rbf`), so that the moves' evidences and the steps' statistics agree to
        round-off (measured on the 1-d problem of ``tests/test_sparse_gp_moves.py``, whose ``K_mm``
        is nearly singular: expanded about ``Z``'s mean instead, the log-weights after a move and a
        harmonic pass end up to 5e-6 apart, outside the test's 1e-6)."""
        x, y = jnp.asarray(data["x"]), jnp.asarray(data["y"])
        xs, ys, keep = slice_rows(x, y, y.shape[0] if chunk_rows is None else min(chunk_rows, y.shape[0]))
        m = z.shape[0]
        skip = jnp.asarray(False) if reuse is None else reuse[0]

        def part(acc, c):
            # each slice's products added as it is built: written as one kᵀk (and kᵀy) over the whole
            # kernel, XLA transposed all of k first, a second N × M array (a round's compiled
            # program: 2.05 kernels of temporaries, 1.16 this way, tests/test_sparse_gp_moves.py;
            # and 15-20 % faster at 131,072 rows, M = 1,024, d = 90)
            xc, yc, kc = c
            k = model.kernel(z, xc).T * kc[:, None]
            acc = jax.lax.cond(skip, lambda: acc, lambda: (acc[0] + k.T @ k, acc[1] + k.T @ yc))
            return acc, k

        (phi, psi), ks = jax.lax.scan(part, (jnp.zeros((m, m), z.dtype), jnp.zeros((m,), z.dtype)), (xs, ys, keep))
        if reuse is not None:
            phi, psi = jnp.where(skip, reuse[1], phi), jnp.where(skip, reuse[2], psi)
        k = ks.reshape(-1, m)
        x, y, keep = xs.reshape(-1, x.shape[1]), ys.reshape(-1), keep.reshape(-1)
        c = jnp.sum(noise_log_density(model, y) * keep)
        return cls(x, y, keep, k, phi, psi, c)

    def replace(self, model: SparseGP, z: Array, block: Array, points: Array) -> tuple[Array, Array, Array, Array]:
        """``Z`` with its rows ``block`` replaced by ``points (b, d)``, and the statistics to match:
        ``(Z', k_b, Φ', ψ')`` with ``k_b = K_{n b'} (N', b)`` the replaced columns (:meth:`accept`
        writes them into ``k``).

        Only ``Φ``'s rows and columns ``block`` and ``ψ``'s entries ``block`` depend on the replaced
        inputs: ``Φ'_{b·} = k_bᵀ k'`` and ``ψ'_b = k_bᵀ y``, in ``O(N b (M + d))`` against
        :meth:`build`'s ``O(N M (M + d))``; every changed entry is computed afresh from the kept
        kernel, not by adding and subtracting, so a long chain of replacements accumulates no error."""
        k_block = model.kernel(points, self.x).T * self.keep[:, None]
        rows = (k_block.T @ self.k).at[:, block].set(k_block.T @ k_block)
        return (z.at[block].set(points), k_block, self.phi.at[block, :].set(rows).at[:, block].set(rows.T),
                self.psi.at[block].set(k_block.T @ self.y))

    def accept(self, accept: Array, block: Array, k_block: Array, phi: Array, psi: Array) -> "DataKernel":
        """The kernel of the replaced ``Z`` where ``accept``, else this one (the columns ``block``
        written in place)."""
        columns = jnp.where(accept, k_block, self.k[:, block])
        return replace(self, k=self.k.at[:, block].set(columns), phi=jnp.where(accept, phi, self.phi),
                       psi=jnp.where(accept, psi, self.psi))


def evidence_from_statistics(model: SparseGP, z: Array, phi: Array, psi: Array, c: Array
                             ) -> tuple[Array, Array, Array, Array]:
    """``log p(y | Z)`` (the DTC evidence, :func:`dtc_log_evidence`'s quantity) from
    :func:`kernel_statistics`, with the exact posterior of the whitened ``v`` that comes with it, in
    ``O(M³)``.

    Whitened, the likelihood is ``exp(-½ vᵀPv + rᵀv + c)`` with ``P = β L⁻¹ Φ L⁻ᵀ`` and
    ``r = β L⁻¹ ψ`` (:func:`batch_statistics` of the whole data set at ``scale = 1``), and the prior
    ``N(0, I)``, so ``p(y|Z) = ∫ N(v|0, I) exp(-½ vᵀPv + rᵀv + c) dv = exp(A(I + P, r) - A(I, 0) + c)``
    (:func:`log_partition`) and ``p(v | y, Z)`` has natural parameters ``(I + P, r)``: Titsias'
    (2009) optimal ``q(u|Z)`` after whitening. Returns ``(log p(y|Z), L, I + P, r)`` with ``L`` the
    whitening factor of ``z``."""
    chol_k = whitening(model, z)
    half = solve_triangular(chol_k, phi, lower=True)  # L⁻¹Φ
    p = model.precision * solve_triangular(chol_k, half.T, lower=True)  # L⁻¹ Φ L⁻ᵀ (Φ symmetric)
    m = z.shape[0]
    prec = jnp.eye(m, dtype=p.dtype) + 0.5 * (p + p.T)
    r = model.precision * solve_triangular(chol_k, psi, lower=True)
    return log_partition(prec, r) - 0.5 * m * math.log(2.0 * math.pi) + c, chol_k, prec, r


def collapsed_evidence(model: SparseGP, z: Array, data: dict, chunk_rows: int | None = None
                       ) -> tuple[Array, Array, Array, Array]:
    """:func:`evidence_from_statistics` of the whole data set's :func:`kernel_statistics`:
    ``(log p(y|Z), L, I + P, r)`` in ``O(N M (M + d))``."""
    return evidence_from_statistics(model, z, *kernel_statistics(model, z, data, chunk_rows))


def log_partition(prec: Array, shift: Array) -> Array:
    """``log ∫ exp(-½ vᵀΛv + hᵀv) dv = ½ hᵀΛ⁻¹h - ½ log|Λ| + (M/2) log 2π``."""
    chol = jnp.linalg.cholesky(prec)
    w = solve_triangular(chol, shift, lower=True)
    m = shift.shape[-1]
    return 0.5 * w @ w - jnp.sum(jnp.log(jnp.diagonal(chol))) + 0.5 * m * math.log(2.0 * math.pi)


def prox_update(prec: Array, shift: Array, gamma, stats: tuple[Array, Array, Array]) -> tuple[Array, Array]:
    """F.1's closed-form prox step for ``q(u|Z)`` in whitened natural parameters.

    ``q_{t+1} ∝ q_t^{1-γ} p^γ Π_b p(y_b|v)^{γN/B}`` (F.1 with its ``γ_t/n`` written ``γ``, as in
    eq. 5), i.e. ``Λ ← (1-γ)Λ + γ(I + P)``, ``h ← (1-γ)h + γ r`` with ``(P, r)`` the batch's
    :func:`batch_statistics` at ``scale = N/B``. Hensman, Fusi & Lawrence (2013, sec. 3.3) derive
    the same map as SVI's natural-gradient step of size ``ρ = γ`` on ``q(u) = N(m, S)`` (their
    ``S⁻¹ ← (1-ρ)S⁻¹ + ρ(K⁻¹ + βK⁻¹K_mbK_bmK⁻¹ N/B)``, here after whitening).
    """
    p, r, _ = stats
    eye = jnp.eye(prec.shape[-1], dtype=prec.dtype)
    return (1.0 - gamma) * prec + gamma * (eye + p), (1.0 - gamma) * shift + gamma * r


def moments(prec: Array, shift: Array) -> tuple[Array, Array]:
    """``(mean, R)`` of ``N(Λ⁻¹h, Λ⁻¹)`` with ``R Rᵀ = Λ⁻¹`` (``R = chol(Λ)⁻ᵀ``, upper triangular)."""
    chol = jnp.linalg.cholesky(prec)
    mean = cho_solve((chol, True), shift)
    inv = solve_triangular(chol, jnp.eye(prec.shape[-1], dtype=prec.dtype), lower=True)
    return mean, inv.T


def svgp_elbo(model: SparseGP, z: Array, chol_k: Array, loc: Array, scale: Array, batch: dict,
              data_size: int, chunk_rows: int | None = None) -> Array:
    """Hensman et al.'s (2013, eq. 7) bound for ``q(v) = N(loc, scale scaleᵀ)``, estimated on a batch:

    ``N/B Σ_b [log N(y_b|a_bᵀm, β⁻¹) - β/2 ‖scaleᵀa_b‖² - β/2 (k_bb - ‖a_b‖²)] - KL(q(v) ‖ N(0, I))``.

    The trace term ``-β/2 (k_bb - ‖a_b‖²)`` does not depend on ``q``: it is what separates the
    Titsias/Hensman bound (GPJax's) from the model's own log-likelihood.

    ``chunk_rows``: sum the batch's terms over slices of that many rows (one compiled slice; the
    last is zero-padded and masked: :func:`sum_over_rows`), so the ``B × M`` features never exist at once. The whole
    training set of H.3.2 (463,715 rows, ``M = 1024``) would otherwise need several ``B × M``
    float64 arrays of 3.8 GB each.
    """
    x, y = jnp.asarray(batch["x"]), jnp.asarray(batch["y"])
    rows = y.shape[0]
    fit = sum_over_rows(lambda *c: jnp.sum(_svgp_fit(model, z, chol_k, loc, scale, *c)), x, y, chunk_rows)
    m = loc.shape[0]
    logdet = jnp.linalg.slogdet(scale)[1]
    kl = 0.5 * (jnp.sum(scale**2) + loc @ loc - m) - logdet
    return data_size / rows * fit - kl


def _svgp_fit(model: SparseGP, z, chol_k, loc, scale, x, y, keep) -> Array:
    """The per-row data terms of :func:`svgp_elbo`, zero where ``keep`` is zero (padding)."""
    a = features(model, z, chol_k, x)
    beta = model.precision
    fit = (-0.5 * beta * (y - a @ loc) ** 2 + 0.5 * jnp.log(beta / (2.0 * math.pi))
           - 0.5 * beta * jnp.sum((a @ scale) ** 2, axis=1) - 0.5 * beta * (model.variance - jnp.sum(a**2, axis=1)))
    return fit * keep


# -- the posterior every sparse-GP method returns ---------------------------------------------------
@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SparseGPPosterior:
    """``q(Z, u) = Σ_j α_j δ(Z_j) N(u | L_j loc_j, L_j R_j R_jᵀ L_jᵀ)``: a weighted mixture over
    inducing inputs, each with a Gaussian over its (whitened) inducing values (F.1).

    One component with its own ``Z`` is SVI-GP or SoD; many sharing one ``Z`` (each particle with
    the Liu-West kernel as ``R``) is one-pass SMC; many with their own ``Z`` is structured PMD. The parameter ``θ`` of
    the :class:`pmd.posterior.Posterior` protocol is ``(vec Z, u)`` of length ``M(d+1)``.
    """

    inducing: Array  # (P, M, d)
    chol_k: Array  # (P, M, M): L_j
    log_weights: Array  # (P,)
    loc: Array  # (P, M): whitened means
    scale: Array  # (P, M, M): R_j, whitened covariance R Rᵀ
    lengthscale: Array
    variance: Array

    def _kernel(self, x1, x2):
        return rbf(x1, x2, self.lengthscale, self.variance)

    def component_predict(self, x: Array) -> tuple[Array, Array]:
        """Each component's predictive mean and variance of ``f(x)`` (module docstring): ``(P, n)`` each."""
        def one(z, chol_k, loc, scale):
            a = solve_triangular(chol_k, self._kernel(z, x), lower=True).T
            var = self.variance - jnp.sum(a**2, axis=1) + jnp.sum((a @ scale) ** 2, axis=1)
            return a @ loc, jnp.maximum(var, 0.0)

        return jax.vmap(one)(self.inducing, self.chol_k, self.loc, self.scale)

    def predict(self, x: Array) -> tuple[Array, Array]:
        """The mixture's predictive mean and variance of ``f(x)`` at inputs ``x (n, d)``."""
        means, variances = self.component_predict(x)
        w = jnp.exp(normalize(self.log_weights))
        mean = w @ means
        return mean, w @ (variances + means**2) - mean**2

    # -- the Posterior protocol over θ = (vec Z, u) --
    def _u_means(self) -> Array:
        return jnp.einsum("pij,pj->pi", self.chol_k, self.loc)

    def _flat(self, z: Array, u: Array) -> Array:
        return jnp.concatenate([z.reshape(z.shape[0], -1), u], axis=1)

    def weighted_samples(self, key: Array | None = None, n: int | None = None) -> tuple[Array, Array]:
        """``n`` draws of ``θ`` with equal weights (the Gaussians have no samples of their own)."""
        if key is None or n is None:
            raise ValueError("a SparseGPPosterior gives weighted samples only by drawing: pass key and n")
        return self.sample(key, n), jnp.full((n,), -jnp.log(n))

    def mean(self) -> Array:
        w = jnp.exp(normalize(self.log_weights))
        return w @ self._flat(self.inducing, self._u_means())

    def cov(self) -> Array:
        """The mixture covariance of ``θ``: the spread of the component means plus ``Σ_j α_j Cov_j(u)``."""
        w = jnp.exp(normalize(self.log_weights))
        centres = self._flat(self.inducing, self._u_means())
        centred = centres - w @ centres
        between = (centred * w[:, None]).T @ centred
        factors = jnp.einsum("pij,pjk->pik", self.chol_k, self.scale)
        within_u = jnp.einsum("p,pij,pkj->ik", w, factors, factors)
        k = between.shape[0] - within_u.shape[0]
        return between.at[k:, k:].add(within_u)

    def expectation(self, f, key: Array | None = None, n: int = 4096) -> Array:
        """Monte Carlo ``E f(θ)`` with ``n`` draws (the key defaults to a fixed one)."""
        draws = self.sample(jax.random.key(0) if key is None else key, n)
        return jnp.mean(jax.vmap(f)(draws), axis=0)

    def sample(self, key: Array, n: int) -> Array:
        k_idx, k_eps = jax.random.split(key)
        idx = categorical_draw(k_idx, self.log_weights, n)
        eps = jax.random.normal(k_eps, (n, self.loc.shape[1]), self.loc.dtype)
        v = self.loc[idx] + jnp.einsum("nij,nj->ni", self.scale[idx], eps)
        return self._flat(self.inducing[idx], jnp.einsum("nij,nj->ni", self.chol_k[idx], v))

    def effective_sample_size(self) -> Array:
        return effective_sample_size(self.log_weights)

    def has_density(self) -> bool:
        return False

    def log_density(self, theta: Array) -> Array:
        raise NotImplementedError("q(Z, u) puts its mass on finitely many Z: it has no density over θ")


def posterior_from_natural(model: SparseGP, inducing: Array, chol_k: Array, log_weights: Array, prec: Array,
                           shift: Array) -> SparseGPPosterior:
    """The :class:`SparseGPPosterior` of components held by natural parameters ``(P, M, M), (P, M)``."""
    loc, scale = jax.vmap(moments)(prec, shift)
    return SparseGPPosterior(inducing, chol_k, normalize(log_weights), loc, scale,
                             jnp.asarray(model.lengthscale, loc.dtype), jnp.asarray(model.variance, loc.dtype))


# -- the truth, float64 NumPy -----------------------------------------------------------------------
def exact_gp_predict(model: SparseGP, x: np.ndarray, y: np.ndarray, x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The full GP's posterior of ``f(x_test)`` (Rasmussen & Williams 2006, eq. 2.25-2.26): mean, variance."""
    x, y, x_test = (np.asarray(a, np.float64) for a in (x, y, x_test))
    chol = sla.cho_factor(model.kernel(x, x, np) + model.noise_variance * np.eye(len(y)), lower=True)
    k_star = model.kernel(x, x_test, np)
    mean = k_star.T @ sla.cho_solve(chol, y)
    var = model.variance - np.sum(k_star * sla.cho_solve(chol, k_star), axis=0)
    return mean, var


def titsias_posterior(model: SparseGP, z: np.ndarray, x: np.ndarray, y: np.ndarray,
                      chunk_rows: int = 16384) -> tuple[np.ndarray, np.ndarray]:
    """Titsias' (2009, eq. 10) optimal ``q(u) = N(β K_mm Σ⁻¹ K_mn y, K_mm Σ⁻¹ K_mm)`` with
    ``Σ = K_mm + β K_mn K_nm``: also the exact posterior of ``u`` under the model for this ``Z``.

    ``K_mn K_nm`` and ``K_mn y`` are sums over the rows, taken over slices of ``chunk_rows`` rows,
    so that no ``N × M`` kernel is held: at H.3.2's 463,715 rows and ``M = 1,024`` it is 3.8 GB in
    float64 and its distances' temporaries several times that (the ceiling of
    ``benchmarks/sparse_gp_moves.py`` peaked at 19.1 GB with the whole kernel). A slice's distances
    are expanded about its own rows' mean (:func:`rbf`), which moves only the last bits."""
    z, x, y = (np.asarray(a, np.float64) for a in (z, x, y))
    if int(chunk_rows) < 1:
        raise ConfigError(f"titsias_posterior: chunk_rows must be a positive integer, got {chunk_rows!r}")
    kmm = model.kmm(z, np)
    phi, psi = np.zeros_like(kmm), np.zeros(len(z))
    for start in range(0, len(y), int(chunk_rows)):
        k = model.kernel(z, x[start:start + chunk_rows], np)
        phi += k @ k.T
        psi += k @ y[start:start + chunk_rows]
    sigma = sla.cho_factor(kmm + model.precision * phi, lower=True)
    mean = model.precision * kmm @ sla.cho_solve(sigma, psi)
    return mean, kmm @ sla.cho_solve(sigma, kmm)


def titsias_predict(model: SparseGP, z: np.ndarray, x: np.ndarray, y: np.ndarray,
                    x_test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The predictive of f(x_test) under :func:`titsias_posterior` (module docstring): mean, variance."""
    mean_u, cov_u = titsias_posterior(model, z, x, y)
    z, x_test = np.asarray(z, np.float64), np.asarray(x_test, np.float64)
    kmm = sla.cho_factor(model.kmm(z, np), lower=True)
    proj = sla.cho_solve(kmm, model.kernel(z, x_test, np))  # K⁻¹ K_m*
    var = model.variance - np.sum(model.kernel(z, x_test, np) * proj, axis=0) + np.sum(proj * (cov_u @ proj), axis=0)
    return proj.T @ mean_u, var


def dtc_log_evidence(model: SparseGP, z: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """``log p(y | Z) = log N(y | 0, Q_nn + β⁻¹ I)`` with ``Q_nn = K_nm K_mm⁻¹ K_mn`` (the model's
    marginal likelihood of ``Z``; Woodbury and the determinant lemma in ``O(n M²)``)."""
    z, x, y = (np.asarray(a, np.float64) for a in (z, x, y))
    beta, n = model.precision, len(y)
    kmm, kmn = model.kmm(z, np), model.kernel(z, x, np)
    sigma = sla.cho_factor(kmm + beta * kmn @ kmn.T, lower=True)
    b = kmn @ y
    quad = beta * y @ y - beta**2 * b @ sla.cho_solve(sigma, b)
    logdet = (2 * np.sum(np.log(np.diag(sigma[0]))) - 2 * np.sum(np.log(np.diag(np.linalg.cholesky(kmm))))
              - n * np.log(beta))
    return float(-0.5 * quad - 0.5 * logdet - 0.5 * n * np.log(2 * np.pi))


def titsias_elbo(model: SparseGP, z: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Titsias' collapsed bound: :func:`dtc_log_evidence` ``- β/2 tr(K_nn - Q_nn)`` (GPJax's collapsed ELBO)."""
    z, x = np.asarray(z, np.float64), np.asarray(x, np.float64)
    kmn = model.kernel(z, x, np)
    q_diag = np.sum(kmn * sla.cho_solve(sla.cho_factor(model.kmm(z, np), lower=True), kmn), axis=0)
    return dtc_log_evidence(model, z, x, y) - 0.5 * model.precision * float(np.sum(model.variance - q_diag))

"""The redraw kernel of PMD's robust variant (pmd/local_kernel.py): moments kept, modes kept apart."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd.bandwidth import weighted_cov
from pmd.local_kernel import LocalShrinkage

RNG = np.random.default_rng(0)


def mixture_moments(kernel, log_w):
    """Mean and covariance of the kernel mixture Σ_i w_i N(c_i, H_cluster(i)), in closed form."""
    w = np.exp(np.asarray(log_w) - np.logaddexp.reduce(np.asarray(log_w)))
    centres, chols = np.asarray(kernel.centres, np.float64), np.asarray(kernel.chols, np.float64)
    h = np.einsum("kij,klj->kil", chols, chols)[np.asarray(kernel.cluster)]
    mean = w @ centres
    centred = centres - mean
    return mean, (centred * w[:, None]).T @ centred + np.einsum("i,ijk->jk", w, h)


@pytest.mark.slow
def test_one_mode_is_one_cluster_with_the_clouds_moments():
    """A correlated Gaussian cloud: k-means cuts it, the merge (Ashman's D < 4) joins it again, and
    the Liu-West mixture has exactly the weighted mean and covariance of the particles (float32)."""
    x = RNG.multivariate_normal([3.0, -1.0, 0.5], [[1.0, 0.6, 0.0], [0.6, 1.0, 0.2], [0.0, 0.2, 0.5]], 1500)
    positions = jnp.asarray(x, jnp.float32)
    log_w = jnp.asarray(RNG.normal(0, 0.5, 1500), jnp.float32)
    kernel = LocalShrinkage(clusters=4)(jax.random.key(0), positions, log_w)
    assert len(np.unique(np.asarray(kernel.cluster))) == 1
    mean, cov = mixture_moments(kernel, log_w)
    w = np.exp(np.asarray(log_w) - np.logaddexp.reduce(np.asarray(log_w)))
    np.testing.assert_allclose(mean, w @ x, atol=1e-4)
    np.testing.assert_allclose(cov, np.asarray(weighted_cov(positions, log_w)), rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_two_modes_keep_their_own_kernels():
    """Two blobs 8 sd apart: two clusters along the blobs; each kernel is as narrow as its blob
    (not as wide as the gap), and each cluster keeps its blob's mean and covariance up to the
    pooling ``ν/(n_c + ν)`` with ``ν = d + 2 = 4`` and ``n_c ≈ 600`` (under 1%; allowed 2%)."""
    a = RNG.normal([-4.0, 0.0], [0.5, 0.3], (600, 2))
    b = RNG.normal([4.0, 1.0], [0.3, 0.5], (600, 2))
    x = np.concatenate([a, b])
    positions, log_w = jnp.asarray(x, jnp.float32), jnp.zeros(1200, jnp.float32)
    kernel = LocalShrinkage(clusters=4)(jax.random.key(1), positions, log_w)
    labels = np.asarray(kernel.cluster)
    assert len(np.unique(labels[:600])) == 1 and len(np.unique(labels[600:])) == 1
    assert labels[0] != labels[-1]
    for blob, rows in ((a, slice(0, 600)), (b, slice(600, 1200))):
        sub = type(kernel)(kernel.centres[rows], kernel.cluster[rows], kernel.chols)
        mean, cov = mixture_moments(sub, log_w[rows])
        np.testing.assert_allclose(mean, blob.mean(axis=0), atol=1e-3)
        np.testing.assert_allclose(np.diag(cov), blob.var(axis=0), rtol=0.02)
        h = np.asarray(kernel.chols[labels[rows][0]])
        assert np.max(np.diag(h @ h.T)) < 0.25, "the kernel spans the gap between the modes"


@pytest.mark.slow
def test_fixed_h2_keeps_the_moments_with_the_kernel_it_names():
    """``h2`` fixes every cluster's ``h_c²``: the kernel covariance is ``h2 · Σ`` (up to the pooling,
    here one cluster: none), the centres are shrunk by ``sqrt(1 - h2)`` towards the mean, and the
    mixture still has the particles' weighted mean and covariance."""
    x = RNG.multivariate_normal([1.0, -2.0], [[2.0, 0.5], [0.5, 1.0]], 1000)
    positions = jnp.asarray(x, jnp.float32)
    log_w = jnp.asarray(RNG.normal(0, 0.3, 1000), jnp.float32)
    kernel = LocalShrinkage(clusters=1, h2=0.99)(jax.random.key(2), positions, log_w)
    cov = np.asarray(weighted_cov(positions, log_w), np.float64)
    chol = np.asarray(kernel.chols[0], np.float64)
    np.testing.assert_allclose(chol @ chol.T, 0.99 * cov, rtol=1e-3, atol=1e-5)
    w = np.exp(np.asarray(log_w) - np.logaddexp.reduce(np.asarray(log_w)))
    mean = w @ x
    np.testing.assert_allclose(np.asarray(kernel.centres), mean + np.sqrt(0.01) * (x - mean), atol=1e-4)
    mix_mean, mix_cov = mixture_moments(kernel, log_w)
    np.testing.assert_allclose(mix_mean, mean, atol=1e-4)
    np.testing.assert_allclose(mix_cov, cov, rtol=1e-3, atol=1e-4)


@pytest.mark.slow
def test_neighbours_widen_the_kernel_in_high_dimension_only():
    """``neighbours = k`` raises ``h²`` to ``(k / n)^{2/d}`` where that exceeds the normal-reference
    rule: equal weights, ``n = 1000``, ``k = 10``: at ``d = 30`` ``0.01^{1/15} = 0.736`` against
    Silverman's ``(4 / (32 n))^{2/34} = 0.589``; at ``d = 2`` ``0.01`` against ``0.1``, so the
    kernel is the default's."""
    for d, expected in ((30, 0.01 ** (1 / 15)), (2, (4 / (4 * 1000)) ** (2 / 6))):
        x = RNG.normal(size=(1000, d))
        positions, log_w = jnp.asarray(x, jnp.float32), jnp.zeros(1000, jnp.float32)
        kernel = LocalShrinkage(clusters=1, neighbours=10)(jax.random.key(3), positions, log_w)
        cov = np.asarray(weighted_cov(positions, log_w), np.float64)
        chol = np.asarray(kernel.chols[0], np.float64)
        np.testing.assert_allclose(np.diag(chol @ chol.T), expected * np.diag(cov), rtol=1e-3)
        default = LocalShrinkage(clusters=1)(jax.random.key(3), positions, log_w)
        assert (d == 2) == np.allclose(np.asarray(default.chols[0]), chol, rtol=1e-5)


def _brute_log_density(points, centres, cluster, chols, log_w):
    """``log Σ_i α_i N(x; c_i, L_k L_kᵀ)`` pair by pair in float64."""
    log_w = log_w - np.logaddexp.reduce(log_w)
    out = []
    for x in points:
        terms = []
        for i, c in enumerate(centres):
            chol = chols[cluster[i]]
            z = np.linalg.solve(chol, x - c)
            terms.append(log_w[i] - 0.5 * z @ z - np.log(np.abs(np.diag(chol))).sum() - 0.5 * len(x) * np.log(2 * np.pi))
        out.append(np.logaddexp.reduce(terms))
    return np.array(out)


@pytest.mark.parametrize("condition", [1.0, 1e3])
def test_kernel_density_of_several_clusters_matches_pair_by_pair(condition):
    """Four clusters, each its own kernel shape, in a posterior whose axes differ in scale by
    ``condition`` and which sits 50 of its sd from the origin: the one-product density agrees with
    the float64 sum pair by pair. Tolerance 5e-3 nats: float32 rounding of the inputs themselves
    (coordinates of order 10⁴ at condition 10³); the per-cluster loop this density replaced is off by
    3.6e-3 nats here, the one-product density by 3.3e-3."""
    from pmd.kde import Kernel, kernel_log_density

    rng = np.random.default_rng(7)
    d, m, k = 6, 120, 4
    rotation = np.linalg.qr(rng.normal(size=(d, d)))[0]
    scales = np.logspace(0, np.log10(condition), d)
    root = rotation @ np.diag(scales) @ rotation.T
    chols = []
    for _ in range(k):  # each cluster: the posterior's scales times its own shape (axes within 10×)
        own = np.linalg.qr(rng.normal(size=(d, d)))[0]
        chols.append(np.linalg.cholesky(0.05 * root @ own @ np.diag(np.logspace(0, 1, d)) @ own.T @ root))
    chols = np.stack(chols).astype(np.float32)
    centres = (rng.normal(size=(m, d)) * scales) @ rotation.T + 50.0 * scales @ rotation.T
    cluster = rng.integers(0, k, m)
    points = centres[:40] + (rng.normal(size=(40, d)) * 0.2 * scales) @ rotation.T
    log_w = rng.normal(size=m)
    kernel = Kernel(jnp.asarray(centres, jnp.float32), jnp.asarray(cluster, jnp.int32), jnp.asarray(chols))
    got = np.asarray(kernel_log_density(jnp.asarray(points, jnp.float32), kernel, jnp.asarray(log_w, jnp.float32)))
    want = _brute_log_density(points, centres.astype(np.float32).astype(np.float64), cluster, chols.astype(np.float64),
                              log_w)
    np.testing.assert_allclose(got, want, atol=5e-3)

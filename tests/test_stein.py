"""The kernel Stein discrepancy (pmd/stein.py): its closed-form Stein kernel against automatic
differentiation of the IMQ kernel, and its order on a Gaussian known exactly."""

import jax
import jax.numpy as jnp
import numpy as np

from pmd.stein import IMQ_POWER, IMQ_SCALE, kernel_stein_discrepancy, stein_kernel


def test_the_closed_form_stein_kernel_equals_autodiff_of_the_imq_kernel():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))
    sx, sy = rng.normal(size=(4, 3)), rng.normal(size=(5, 3))

    def k(a, b):
        return (IMQ_SCALE**2 + jnp.sum((a - b) ** 2)) ** IMQ_POWER

    def k0(a, sa, b, sb):
        gx, gy = jax.grad(k, 0)(a, b), jax.grad(k, 1)(a, b)
        trace = jnp.trace(jax.jacfwd(jax.grad(k, 0), 1)(a, b))
        return sa @ sb * k(a, b) + sa @ gy + sb @ gx + trace

    expected = jax.vmap(lambda a, sa: jax.vmap(lambda b, sb: k0(a, sa, b, sb))(y, sy))(x, sx)
    np.testing.assert_allclose(stein_kernel(x, sx, y, sy), expected, rtol=1e-5, atol=1e-6)


def test_exact_draws_score_below_shifted_narrow_and_wide_ones():
    """N(0, I) in 3-d, score −θ, 1000 equally weighted points over 20 seeds. Exact draws' KSD is
    O(n^-1/2) (a V-statistic's bias, about 0.07 here); draws shifted by half an sd, or with sds
    0.6 or 1.6, are held away from zero by the population discrepancy (0.37 to 0.58), five times
    that, so every seed's exact score is below every seed's wrong one. A weight of zero removes a point exactly."""
    d, n = 3, 1000

    def ksd(points):
        return float(kernel_stein_discrepancy(points, jnp.zeros(n), -points))

    exact, wrong = [], []
    for seed in range(20):
        z = jax.random.normal(jax.random.key(seed), (n, d))
        exact.append(ksd(z))
        wrong.append(min(ksd(z + 0.5), ksd(0.6 * z), ksd(1.6 * z)))
    assert max(exact) < min(wrong), (max(exact), min(wrong))
    z = jax.random.normal(jax.random.key(0), (n, d))
    far = z.at[0].set(50.0)
    log_w = jnp.zeros(n).at[0].set(-jnp.inf)
    np.testing.assert_allclose(kernel_stein_discrepancy(far, log_w, -far),
                               kernel_stein_discrepancy(z[1:], jnp.zeros(n - 1), -z[1:]), rtol=1e-5)

"""Shared set-up of the sparse-GP tests (tests/test_sparse_gp_*.py): a small H.3.1 problem in float64.

float64 because the truth is exact: in float32 the Cholesky factor of ``K_mm`` for inducing inputs
closer than the bandwidth fails (measured: NaN at M = 128, σ = 0.03, jitter 1e-5), which is why
the sparse-GP experiment runs JAX in float64 too.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmd_bench.datasets.synthetic import gp1d_function
from pmd.models.sparse_gp import SparseGP


@pytest.fixture(autouse=True)
def x64():
    """Every sparse-GP test runs with JAX's 64-bit types (restored afterwards)."""
    with jax.enable_x64(True):
        yield


def problem(n: int = 256, num_inducing: int = 16, noise: float = 0.1, seed: int = 0, jitter: float = 1e-6,
            noise_variance: float = 1e-2, bandwidth_scale: float = 0.2) -> tuple[SparseGP, dict]:
    """H.3.1's function on ``n`` uniform inputs with ``noise`` (float64), and a model for it."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-0.5, 0.5, (n, 1))
    y = gp1d_function(x[:, 0]) + noise * rng.standard_normal(n)
    model = SparseGP.from_data(x, noise_variance=noise_variance, num_inducing=num_inducing,
                               bandwidth_scale=bandwidth_scale, jitter=jitter)
    return model, {"x": x, "y": y}


TEST_X = np.linspace(-0.5, 0.5, 41)[:, None]


def predict(posterior, x=TEST_X, components: bool = False):
    """The posterior's predictive at ``x`` (each component's when ``components``), as NumPy, through
    one jitted program (the eager path compiles every operation on its own: seconds per test)."""
    fn = (lambda p: p.component_predict(jnp.asarray(x))) if components else (lambda p: p.predict(jnp.asarray(x)))
    return tuple(np.asarray(a) for a in jax.jit(fn)(posterior))

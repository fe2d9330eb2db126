"""The runner never compiles the training set into its program.

An array that a jitted function closes over is a compile-time constant: JAX serialises it into the
program and XLA constant-folds it. At H.3.2's 463,715 × 90 float64 rows that was minutes of
compilation and gigabytes of memory per run (measured: the serialised program of a 400,000 × 90
float32 constant is 288 MB of text). The runner passes the data to its scan as an argument, and
the sparse-GP methods that draw rows of the training set (SoD, one-pass SMC, SVI-GP on data
inputs) draw them in ``init``, outside any jitted step. JAX warns when the constants captured
while lowering exceed ``jax_captured_constants_warn_bytes``; here that threshold is half the
training inputs' size, and the warning is an error.
"""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

from baselines.gp import SVIGP, OnePassSMCGP, SubsetOfData
from pmd import run, run_batched
from pmd.models.sparse_gp import SparseGP
from pmd.structured.sparse_gp import StructuredPMDGP

from sparse_gp_helpers import x64  # noqa: F401  (autouse fixture)

ROWS, DIM = 4096, 8


@pytest.fixture
def constants_are_errors():
    """Captured constants above half the inputs' bytes raise (the setting is restored afterwards)."""
    before = jax.config.values["jax_captured_constants_warn_bytes"]
    jax.config.update("jax_captured_constants_warn_bytes", ROWS * DIM * 8 // 2)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="A large amount of constants")
        yield
    jax.config.update("jax_captured_constants_warn_bytes", before)


def _problem():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (ROWS, DIM))
    y = np.sin(x.sum(axis=1)) + 0.1 * rng.standard_normal(ROWS)
    return SparseGP.from_data(x, noise_variance=1e-2, num_inducing=8), {"x": x, "y": y}


METHODS = {
    "pmd": lambda model, data: StructuredPMDGP(model, ROWS, num_particles=2),
    "svi_gp": lambda model, data: SVIGP(model, ROWS, data=data),
    "smc_gp": lambda model, data: OnePassSMCGP(model, ROWS, num_particles=4, data=data),
    "sod": lambda model, data: SubsetOfData(model, ROWS, data=data),
}


@pytest.mark.parametrize("name", sorted(METHODS))
def test_run_does_not_capture_the_data(name, constants_are_errors):
    model, data = _problem()
    result = run(METHODS[name](model, data), data, jax.random.key(0), batch_size=512, num_passes=1, eval_every=2048)
    assert result.num_steps == ROWS // 512


def test_run_batched_does_not_capture_the_data(constants_are_errors):
    model, data = _problem()
    results = run_batched(METHODS["pmd"](model, data), data, [jax.random.key(0), jax.random.key(1)],
                          batch_size=512, num_passes=1)
    assert len(results) == 2

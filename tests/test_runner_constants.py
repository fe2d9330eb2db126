"""The runner never compiles the training set into its program.

An array that a jitted function closes over is a compile-time constant: JAX serialises it into the
program and XLA constant-folds it. At H.3.2's 463,715 × 90 float64 rows that was minutes of
compilation and gigabytes of memory per run (measured: the serialised program of a 400,000 × 90
float32 constant is 288 MB of text). The runner passes the data to its scan as an argument
(:func:`pmd.runner.stepper`); the sparse-GP methods that draw rows of the training set (SoD,
one-pass SMC, SVI-GP on data inputs) draw them in ``init``, outside any jitted step; and every
method whose step reads the whole data set says ``wants_data`` and takes it as ``step(...,
data=)`` (:mod:`pmd.interface`). JAX warns when the constants captured while lowering exceed
``jax_captured_constants_warn_bytes``; here that threshold is half the training data's size, and
the warning is an error. Before these changes every case below failed.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

import jax
import numpy as np
import pytest

from pmd_bench.baselines.gibbs import MixtureGibbs
from pmd_bench.baselines.gp import SVIGP, OnePassSMCGP, SubsetOfData
from pmd_bench.baselines.lda import LDASMC
from pmd import ConfigError, run, run_batched
from pmd.models.logistic import BayesianLogisticRegression, labelled
from pmd.models.mixture import WellingTehMixture
from pmd.models.sparse_gp import SparseGP
from pmd.structured.sparse_gp import StructuredPMDGP
from pmd_bench.workflow import methods

from lda_helpers import small_corpus

ROWS, DIM = 4096, 8


@contextmanager
def raise_on_constants(nbytes: int):
    """Captured constants of ``nbytes // 2`` bytes or more raise (the setting is restored afterwards)."""
    before = jax.config.values["jax_captured_constants_warn_bytes"]
    jax.config.update("jax_captured_constants_warn_bytes", nbytes // 2)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message="A large amount of constants")
            yield
    finally:
        jax.config.update("jax_captured_constants_warn_bytes", before)


@pytest.fixture
def constants_are_errors():
    """For the sparse-GP data below (``ROWS × DIM`` float64 inputs), in float64 as that experiment runs."""
    with jax.enable_x64(True), raise_on_constants(ROWS * DIM * 8):
        yield


def _problem():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1.0, 1.0, (ROWS, DIM))
    y = np.sin(x.sum(axis=1)) + 0.1 * rng.standard_normal(ROWS)
    return SparseGP.from_data(x, noise_variance=1e-2, num_inducing=8), {"x": x, "y": y}


METHODS = {
    "pmd": lambda model, data: StructuredPMDGP(model, ROWS, num_particles=2),
    "pmd_move": lambda model, data: StructuredPMDGP(model, ROWS, num_particles=2, moves={"steps": 1, "block": 2},
                                                    data=data),
    "svi_gp": lambda model, data: SVIGP(model, ROWS, data=data),
    "smc_gp": lambda model, data: OnePassSMCGP(model, ROWS, num_particles=4, data=data),
    "sod": lambda model, data: SubsetOfData(model, ROWS, data=data),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(METHODS))
def test_run_does_not_capture_the_data(name, constants_are_errors):
    model, data = _problem()
    result = run(METHODS[name](model, data), data, jax.random.key(0), batch_size=512, num_passes=1, eval_every=2048)
    assert result.num_steps == ROWS // 512


@pytest.mark.slow
def test_run_batched_does_not_capture_the_data(constants_are_errors):
    model, data = _problem()
    results = run_batched(METHODS["pmd"](model, data), data, [jax.random.key(0), jax.random.key(1)],
                          batch_size=512, num_passes=1)
    assert len(results) == 2


# every method whose step reads the whole data set, with settings small enough for a test
LOGISTIC_FULL_DATA = {
    "pmd": {"num_particles": 64},  # the library's default: moves on the full-data posterior
    "pg_gibbs": {"num_particles": 4, "burn_in": 2},
    "npv_full": {"num_particles": 2},
    "blackjax_tempered_smc": {"num_particles": 32, "num_mcmc_steps": 1},
    "blackjax_data_smc": {"num_particles": 32, "num_mcmc_steps": 1},
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LOGISTIC_FULL_DATA))
def test_full_data_methods_take_the_data_as_an_argument(name):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ROWS, DIM)).astype(np.float32)
    data = labelled(x, np.where(rng.random(ROWS) < 1 / (1 + np.exp(-x[:, 0])), 1, -1))
    model = BayesianLogisticRegression(DIM + 1).model()
    method = methods.build(name, LOGISTIC_FULL_DATA[name], model, data, 8)
    assert method.wants_data
    with raise_on_constants(data["x"].nbytes):
        result = run(method, data, jax.random.key(0), batch_size=512, num_passes=1)
    assert result.num_steps == 8


@pytest.mark.slow
def test_mixture_gibbs_takes_the_data_as_an_argument():
    data = np.asarray(WellingTehMixture().simulate(0, ROWS))
    method = MixtureGibbs(WellingTehMixture().model(), ROWS, 4, data=data, burn_in=2)
    with raise_on_constants(data.nbytes):
        run(method, data, jax.random.key(0), batch_size=512, num_passes=1)


@pytest.mark.slow
def test_lda_smc_takes_the_corpus_as_an_argument():
    corpus = small_corpus()
    rows = corpus.train["words"].shape[0]
    method = LDASMC(corpus.model, rows, 2, data=corpus.train, rejuvenate=4)
    with raise_on_constants(corpus.train["words"].nbytes + corpus.train["mask"].nbytes):
        run(method, corpus.train, jax.random.key(0), batch_size=rows // 4, num_passes=1)


def test_a_full_data_step_refuses_data_of_another_size():
    data = np.asarray(WellingTehMixture().simulate(0, 64))
    method = MixtureGibbs(WellingTehMixture().model(), 64, 4, data=data, burn_in=2)
    with pytest.raises(ConfigError, match=r"data= has \[32\] rows, the method was built for data_size=64"):
        method.step(jax.random.key(0), method.init(jax.random.key(1)), data[:8], data=data[:32])


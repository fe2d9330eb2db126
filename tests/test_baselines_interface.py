"""Every baseline has PMD's interface, and bad hyperparameters fail at construction, by name."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import pmd
from pmd.interface import take_step
from pmd_bench.baselines import (NPV, SGLD, SVGD, SVI, MixtureGibbs, OnePassSMC, ParallelSGLD, PosteriorBootstrap,
                                 StochasticNPV)
from pmd_bench.workflow.methods import BUILTIN, METHODS, TARGETS, build, handles
from baselines_helpers import Conjugate
from pmd.models.conjugate import ConjugateGaussian
from pmd.models.mixture import WellingTehMixture

CONJ = Conjugate.make(num_data=40)
MIX = WellingTehMixture()
MIX_DATA = MIX.simulate(seed=0, n=40)
# the registry's methods that run on any pmd.Model (the conjugate model here), and the mixture's own
GENERIC = sorted(n for n in METHODS if "model" in handles(METHODS[n]))
MIXTURE = sorted(n for n in METHODS if "mixture" in handles(METHODS[n]))


def _build(name, **overrides):
    """A small instance of registry method ``name`` as the workflow builds a config entry (data and
    a run of 2 steps passed where its constructor takes them, and a burn-in of one step where it
    has one, so the tests' short runs retain samples): on the mixture for a mixture-only method,
    else on the conjugate model."""
    model, data = (MIX.model(), MIX_DATA) if name in MIXTURE else (CONJ.model, CONJ.data)
    short = {"burn_in": 1} if "burn_in" in inspect.signature(METHODS[name]).parameters else {}
    return build(name, {"num_particles": 5, **short, **overrides}, model, data, num_steps=2), data


def test_the_registry_lists_every_builtin_once_and_what_each_handles():
    assert list(METHODS)[:len(BUILTIN)] == list(BUILTIN)
    for name in METHODS:
        cls = METHODS[name]
        assert isinstance(cls.method_family, str) and isinstance(cls.reference, str), name
        assert set(handles(cls)) <= set(TARGETS), name
    assert GENERIC and MIXTURE


def _assert_same(a, b):
    """Leaves equal; typed PRNG keys (NPL keeps its weights' key in its state) by their key data."""
    if jnp.issubdtype(jnp.asarray(a).dtype, jax.dtypes.prng_key):
        a, b = jax.random.key_data(a), jax.random.key_data(b)
    np.testing.assert_array_equal(a, b)


@pytest.mark.slow
@pytest.mark.parametrize("name", GENERIC + MIXTURE)
def test_interface(name):
    algo, data = _build(name)
    assert isinstance(algo, pmd.InferenceMethod)
    state = algo.init(jax.random.key(0))
    jax.tree_util.tree_map(_assert_same, state, algo.init(jax.random.key(0)))
    batch, rows = jnp.asarray(data[:8]), jnp.arange(8)
    one, info = take_step(algo, jax.random.key(1), state, batch, rows, data)  # as the runner calls it
    two, _ = take_step(algo, jax.random.key(1), state, batch, rows, data)  # pure: same key, same result
    jax.tree_util.tree_map(_assert_same, one, two)
    assert jax.tree_util.tree_structure(one) == jax.tree_util.tree_structure(state)
    assert all(np.ndim(v) == 0 for v in info.values())
    post = algo.posterior(one)
    assert isinstance(post, pmd.Posterior)
    assert post.mean().shape == (2,) and post.cov().shape == (2, 2)
    assert np.all(np.isfinite(np.asarray(post.cov())))
    assert post.sample(jax.random.key(2), 7).shape == (7, 2)
    if post.has_density():
        assert np.isfinite(float(post.log_density(jnp.zeros(2))))
    # the runner drives it inside jit(lax.scan) with evaluations in between
    res = pmd.run(algo, data, jax.random.key(3), batch_size=10, num_passes=1, eval_every=20,
                  evaluate=lambda p, k: {"m0": p.mean()[0]})
    assert np.all(np.isfinite(res.curves["m0"]))


def test_full_data_methods_count_what_they_read():
    gibbs, _ = _build("gibbs")
    res = pmd.run(gibbs, MIX_DATA, jax.random.key(0), batch_size=8, num_passes=2)
    assert res.num_steps == 10 and res.visited[-1] == 10 * 40
    npv, _ = _build("npv_full")
    res = pmd.run(npv, CONJ.data, jax.random.key(0), batch_size=8, num_passes=1)
    assert res.visited[-1] >= res.num_steps * 40 and res.visited[-1] % 40 == 0


@pytest.mark.parametrize("name", GENERIC)  # the mixture's datum is a scalar
def test_batches_are_checked(name):
    algo, _ = _build(name)
    state = algo.init(jax.random.key(0))
    with pytest.raises(pmd.ModelError):
        take_step(algo, jax.random.key(1), state, jnp.zeros((4, 3)), jnp.arange(4))  # the model's data are 2-d


BAD = [
    (SGLD, {"a": -0.1}, "a"),
    (SGLD, {"a": 0.0}, "a"),
    (SGLD, {"gamma": 1.5}, "gamma"),
    (SGLD, {"b": -1.0}, "b"),
    (SGLD, {"num_particles": 0}, "num_particles"),
    (SGLD, {"burn_in": 100, "num_steps": 100}, "burn_in"),
    (SGLD, {"burn_in": -1}, "burn_in"),
    (SGLD, {"thin": 0}, "thin"),
    (ParallelSGLD, {"a": -1e-3}, "a"),
    (ParallelSGLD, {"num_particles": 0}, "num_particles"),
    (OnePassSMC, {"threshold": 1.5}, "threshold"),
    (OnePassSMC, {"bandwidth": 1.0}, "bandwidth"),
    (OnePassSMC, {"data_size": 0}, "data_size"),
    (SVI, {"learning_rate": -0.01}, "learning_rate"),
    (SVI, {"kappa": 2.0}, "kappa"),
    (SVI, {"family": "diagonal"}, "family"),
    (SVI, {"optimizer": "rmsprop"}, "optimizer"),
    (SVI, {"num_particles": 0}, "num_particles"),
    (SVI, {"init": "median"}, "init"),
    (SVI, {}, "data"),
    (StochasticNPV, {"learning_rate": 0.0}, "learning_rate"),
    (StochasticNPV, {}, "data"),
    (StochasticNPV, {"init": "median", "data": CONJ.data}, "init"),
    (NPV, {"data": CONJ.data, "iterations": 0}, "iterations"),
    (NPV, {"data": CONJ.data, "init": "median"}, "init"),
    (NPV, {}, "data"),
    (PosteriorBootstrap, {}, "data"),
    (PosteriorBootstrap, {"init": "median", "data": CONJ.data}, "init"),
    (SVGD, {}, "data"),
    (SVGD, {"init": "median", "data": CONJ.data}, "init"),
    (SVGD, {"step_size": 0.01, "kappa": 2.0}, "kappa"),
]


@pytest.mark.parametrize("cls, kwargs, name", BAD, ids=[f"{c.__name__}-{n}-{i}" for i, (c, _, n) in enumerate(BAD)])
def test_bad_hyperparameters_fail_at_construction(cls, kwargs, name):
    args = {"data_size": 40, "num_particles": 5, **kwargs}
    with pytest.raises(pmd.ConfigError, match=rf"\b{name}\b"):
        cls(CONJ.model, **args)


@pytest.mark.parametrize("kwargs, name", [
    ({"burn_in": 50, "num_steps": 50}, "burn_in"),
    ({"data": None}, "data"),
    ({"data": MIX_DATA[:30]}, "data_size"),
])
def test_bad_gibbs_configuration(kwargs, name):
    args = {"data_size": 40, "num_particles": 5, "data": MIX_DATA, **kwargs}
    with pytest.raises(pmd.ConfigError, match=rf"\b{name}\b"):
        MixtureGibbs(MIX.model(), **args)


def test_gibbs_refuses_a_model_that_is_not_its_mixture():
    other = WellingTehMixture(noise_std=1.0)
    with pytest.raises(pmd.ConfigError, match="mixture"):
        MixtureGibbs(other.model(), data_size=40, num_particles=5, data=MIX_DATA)
    with pytest.raises(pmd.ConfigError, match="dim"):
        MixtureGibbs(ConjugateGaussian(dim=3).model(), data_size=40, num_particles=5, data=MIX_DATA)


def test_a_model_is_required():
    with pytest.raises(pmd.ConfigError, match="model"):
        SGLD(object(), data_size=40, num_particles=5)

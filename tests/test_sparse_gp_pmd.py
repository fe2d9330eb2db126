"""Structured PMD for sparse GPs (pmd/structured/sparse_gp.py) against the closed-form truth:
Titsias' optimal q(u|Z) for each particle and weights ∝ the DTC evidence p(y|Z)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import logsumexp

from pmd import ConfigError, run
from pmd.structured.sparse_gp import StructuredPMDGP

from sparse_gp_helpers import TEST_X, predict, problem, x64  # noqa: F401  (x64: autouse fixture)
from pmd.models.sparse_gp import dtc_log_evidence, titsias_predict


def _check_against_truth(model, data, post):
    """Each particle's predictive is Titsias' for its Z and the weights are the normalised DTC
    evidence. Float64 round-off only: 1e-7 on the predictive (values O(1)); 1e-6 on log-weights
    computed from log evidences of magnitude ~10³."""
    means, variances = predict(post, components=True)
    evidence = []
    for j, z in enumerate(np.asarray(post.inducing)):
        mean, var = titsias_predict(model, z, data["x"], data["y"], TEST_X)
        np.testing.assert_allclose(np.asarray(means[j]), mean, atol=1e-7)
        np.testing.assert_allclose(np.asarray(variances[j]), var, atol=1e-7)
        evidence.append(dtc_log_evidence(model, z, data["x"], data["y"]))
    evidence = np.array(evidence)
    np.testing.assert_allclose(np.asarray(post.log_weights), evidence - logsumexp(evidence), atol=1e-6)


def test_one_full_data_step_with_unit_step_size_is_the_exact_posterior():
    """γ = 1 on the whole data set: the prox step of F.1 is Bayes' rule for every Z_j."""
    model, data = problem()
    method = StructuredPMDGP(model, 256, num_particles=4, step_size=1.0)
    state, info = method.step(jax.random.key(1), method.init(jax.random.key(0)),
                              {k: jnp.asarray(v) for k, v in data.items()})
    _check_against_truth(model, data, method.posterior(state))
    assert float(info["gamma"]) == 1.0


def test_one_pass_of_minibatches_with_harmonic_steps_is_the_exact_posterior():
    """γ_t = 1/t over one pass of disjoint batches averages the batch natural parameters into
    exactly the full-data ones, and the weights (∝ exp of each q(u|Z_j)'s log partition, up to a
    constant shared by all particles) into the DTC evidence."""
    model, data = problem()
    method = StructuredPMDGP(model, 256, num_particles=4, step_size={"kind": "harmonic"})
    result = run(method, data, jax.random.key(3), batch_size=32, num_passes=1)
    assert result.num_steps == 8
    _check_against_truth(model, data, result.posterior)


def test_paper_step_size_approaches_the_truth():
    """H.3's γ_t = η/(n₀ + √t) does not average batches equally, so the iterate is not exact; with
    η = 1, n₀ = 1 the error of the mixture's predictive mean against the exact posterior mixture
    (Titsias' q(u|Z_j) weighted by the DTC evidence) must shrink from 1 pass to 8 passes (the
    prior's leftover weight Π(1-γ_t) and the batch noise both decay), and end below 0.1 of the
    target function's range (≈ 1.3)."""
    model, data = problem()
    method = StructuredPMDGP(model, 256, num_particles=4)
    init_key = jax.random.split(jax.random.key(4), 4)[0]  # the key pmd.run initialises with
    z = np.asarray(method.init(init_key).inducing)
    evidence = np.array([dtc_log_evidence(model, zz, data["x"], data["y"]) for zz in z])
    w = np.exp(evidence - logsumexp(evidence))
    truth = w @ np.array([titsias_predict(model, zz, data["x"], data["y"], TEST_X)[0] for zz in z])
    mean = jax.jit(lambda p: p.predict(jnp.asarray(TEST_X))[0])

    def evaluate(post, key):
        return {"error": float(np.sqrt(np.mean((np.asarray(mean(post)) - truth) ** 2)))}

    result = run(method, data, jax.random.key(4), batch_size=32, num_passes=8, eval_every=256, evaluate=evaluate)
    errors = result.curves["error"]
    assert np.array_equal(np.asarray(result.posterior.inducing), z)
    assert errors[8] < errors[1] and errors[8] < 0.1


def test_bad_configuration_names_the_field():
    model, data = problem()
    with pytest.raises(ConfigError, match="step_size"):
        StructuredPMDGP(model, 256, step_size=2.0)
    with pytest.raises(ConfigError, match="num_particles"):
        StructuredPMDGP(model, 256, num_particles=0)
    with pytest.raises(ConfigError, match="SparseGP"):
        StructuredPMDGP("not a model", 256)
    method = StructuredPMDGP(model, 256, num_particles=2)
    state = jax.jit(method.init)(jax.random.key(0))
    with pytest.raises(ConfigError, match="'x' and 'y'"):
        method.step(jax.random.key(0), state, {"x": jnp.zeros((4, 1))})
    with pytest.raises(ConfigError, match=r"\(B, 1\)"):
        method.step(jax.random.key(0), state, {"x": jnp.zeros((4, 2)), "y": jnp.zeros(4)})

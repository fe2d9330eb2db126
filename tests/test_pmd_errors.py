"""Bad input gets a clear error that names the problem."""

import jax
import jax.numpy as jnp
import pytest

from pmd import PMD, ConfigError, Model, ModelError
from pmd.models.conjugate import ConjugateGaussian


def gaussian_model(**overrides):
    kwargs = dict(
        dim=2,
        log_prior=lambda th: -0.5 * jnp.sum(th**2),
        log_likelihood=lambda th, x: -0.5 * jnp.sum((x - th) ** 2),
        sample_prior=lambda key, n: jax.random.normal(key, (n, 2)),
    )
    kwargs.update(overrides)
    return Model(**kwargs)


def test_likelihood_of_wrong_shape_is_named():
    model = gaussian_model(log_likelihood=lambda th, x: -0.5 * (x - th) ** 2)  # (d,), not a scalar
    algo = PMD(model, data_size=10, num_particles=8, strategy="particles")
    with pytest.raises(ModelError, match=r"log_likelihood must return a scalar.*shape \(2,\)"):
        algo.step(jax.random.key(0), algo.init(jax.random.key(1)), jnp.zeros((4, 2)))


def test_batch_of_wrong_dimension_is_named():
    algo = PMD(ConjugateGaussian(dim=2).model(), data_size=10, num_particles=8)
    with pytest.raises(ModelError, match=r"wrong dimension"):
        algo.step(jax.random.key(0), algo.init(jax.random.key(1)), jnp.zeros((4, 3)))


def test_batch_without_rows_axis_is_named():
    algo = PMD(ConjugateGaussian(dim=2).model(), data_size=10, num_particles=8)
    with pytest.raises(ModelError, match=r"leading batch axis"):
        algo.step(jax.random.key(0), algo.init(jax.random.key(1)), {"x": jnp.zeros((4, 2)), "y": jnp.float32(1)})


def test_prior_of_wrong_shape_is_named_at_construction():
    with pytest.raises(ModelError, match=r"log_prior must map θ of shape \(2,\) to a scalar"):
        gaussian_model(log_prior=lambda th: -0.5 * th**2)


def test_prior_sampler_of_wrong_shape_is_named():
    with pytest.raises(ModelError, match=r"sample_prior.*\(n, 2\)"):
        gaussian_model(sample_prior=lambda key, n: jax.random.normal(key, (n,)))


def test_unknown_variant_is_named():
    with pytest.raises(ConfigError, match=r"unknown variant 'fast'.*robust, paper"):
        PMD(ConjugateGaussian(dim=2).model(), data_size=10, num_particles=8, variant="fast")


def test_unknown_strategy_is_named():
    with pytest.raises(ConfigError, match=r"unknown strategy 'smc'.*particles, kde, hybrid"):
        PMD(ConjugateGaussian(dim=2).model(), data_size=10, num_particles=8, strategy="smc")


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"num_particles": 0}, "num_particles"),
        ({"data_size": -5}, "data_size"),
        ({"ess_floor": 1.5}, "ess_floor"),
        ({"step_size": -0.1}, "step size"),
        ({"step_size": {"kind": "cosine"}}, "step-size kind"),
        ({"bandwidth": "scott"}, "bandwidth rule"),
        ({"strategy": "particles", "particle_schedule": {"kind": "power", "initial": 10}}, "particle_schedule"),
        ({"particle_schedule": {"kind": "power", "initial": 4}}, "paper-variant option"),
        ({"bandwidth": {"kind": "local", "clusters": 0}}, "clusters must be a positive integer"),
        ({"bandwidth": {"kind": "local", "max_h2": 1.0}}, "max_h2"),
        ({"bandwidth": {"kind": "local", "h2": 1.0}}, r"h2 must lie in \(0, 1\), got 1.0"),
        ({"bandwidth": {"kind": "local", "neighbours": 0}}, "neighbours must be positive, got 0"),
        ({"bandwidth": {"kind": "local", "h2": 0.9, "neighbours": 10}}, "not both"),
        ({"bandwidth": {"kind": "local", "width": 2}}, "bad arguments for bandwidth rule 'local'"),
        ({"variant": "paper", "bandwidth": {"kind": "local"}}, "local kernel"),
        ({"max_substeps": 0}, "max_substeps"),
    ],
)
def test_bad_hyperparameters_are_named(kwargs, field):
    args = {"data_size": 10, "num_particles": 8, **kwargs}
    with pytest.raises(ConfigError, match=field):
        PMD(ConjugateGaussian(dim=2).model(), **args)

"""GPJax's sparse variational GP with natural gradients behind pmd-bench's interface.

What a JAX user would take instead of our :class:`baselines.gp.SVIGP`: GPJax 1.0's
``WhitenedVariationalGaussian`` (Hensman, Fusi & Lawrence 2013, whitened) over a ``Prior`` with the
model's RBF kernel, zero mean and jitter, a ``Gaussian`` likelihood at the model's noise, and one
``gpjax.natural_gradients.natural_gradient_step`` (Salimbeni, Eleftheriadis & Hensman 2018; for a
Gaussian likelihood the same affine step as Hensman's) per mini-batch on ``-gpjax.objectives.elbo``,
with the mini-batch rescaled by ``N/B`` through the ``Dataset``'s ``n_total``. The kernel, noise
and inducing inputs stay fixed (section 6), so no Optax step runs. ``Z`` is drawn as SVI-GP draws it
(``M`` random training inputs), so with the same key the two start from the same ``Z`` and ``q``.

The posterior is read back into a :class:`pmd.models.sparse_gp.SparseGPPosterior` (one component;
the whitening factor recomputed from the model, which uses GPJax's jitter).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
from gpjax.natural_gradients import natural_gradient_step, partition_variational
from gpjax.parameters import val

from pmd.interface import ConfigError
from pmd.models.sparse_gp import SparseGPPosterior, whitening
from pmd.schedules import step_size as make_step_size
from pmd.structured.sparse_gp import require_sparse_gp

from ..gp.sod import random_rows, require_data

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GPJaxSVGPState:
    """GPJax's variational partition (the whitened ``q(v)``), its hyperparameter partition (kernel,
    likelihood, ``Z``; fixed) and the step count."""

    variational: Any
    hyper: Any
    step: Array


def _negative_elbo(family, data):
    return -gpx.objectives.elbo(family, data)


def gpjax_prior_and_likelihood(model, dtype):
    """GPJax's ``Prior * Gaussian`` for the sparse GP ``model``: RBF kernel, zero mean, its jitter and noise."""
    kernel = gpx.kernels.RBF(lengthscale=jnp.asarray(model.lengthscale, dtype), variance=jnp.asarray(model.variance, dtype))
    prior = gpx.gps.Prior(mean_function=gpx.mean_functions.Zero(), kernel=kernel, jitter=model.jitter * model.variance)
    return prior * gpx.likelihoods.Gaussian(obs_stddev=jnp.asarray(model.noise_variance**0.5, dtype))


def gpjax_collapsed(model, inducing: Array, data: dict, test_x: Array) -> tuple[Array, Array, Array]:
    """GPJax's collapsed sparse GP (Titsias 2009: ``CollapsedVariationalGaussian``) for fixed ``Z``:
    ``(collapsed ELBO, predictive mean, predictive variance at test_x)``, to set beside
    :func:`pmd.models.sparse_gp.titsias_elbo` and :func:`~pmd.models.sparse_gp.titsias_predict`."""
    family = gpx.variational_families.CollapsedVariationalGaussian(
        model=gpjax_prior_and_likelihood(model, inducing.dtype), inducing_inputs=inducing)
    dataset = gpx.Dataset(X=data["x"], y=data["y"][:, None])
    predictive = family.predict(test_x, dataset)
    return gpx.objectives.collapsed_elbo(family, dataset), predictive.mean, predictive.variance


class GPJaxSVGP:
    """GPJax SVGP with natural-gradient steps (module docstring).

    Args:
        model: the :class:`pmd.models.sparse_gp.SparseGP`.
        data_size: ``N``.
        num_particles: must be 1.
        data: the training set (``Z`` is drawn from its inputs).
        step_size: as for :class:`baselines.gp.SVIGP` (default ``1/(1 + √t)``).
    """

    method_family = "variational inference"
    reference = (
        "GPJax `gpjax.natural_gradients.natural_gradient_step` on `WhitenedVariationalGaussian` "
        "(Hensman, Fusi & Lawrence, UAI 2013)"
    )

    def __init__(self, model, data_size: int, num_particles: int = 1, data: Any = None, step_size: Any = None):
        self.model = require_sparse_gp(model)
        if num_particles != 1:
            raise ConfigError(f"GPJax's SVGP keeps one Gaussian q(u): num_particles must be 1, got {num_particles!r}")
        self.num_particles = 1
        self.data_size = int(data_size)
        self.data = require_data(self.model, data, self.data_size)
        try:
            self.step_size = make_step_size({"kind": "sqrt", "eta": 1.0, "offset": 1.0} if step_size is None
                                            else step_size)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"step_size: {err}") from err
        self._step = jax.jit(self._step_impl)

    def family(self, inducing: Array):
        """GPJax's whitened variational family at inducing inputs ``(M, d)``, ``q(v) = N(0, I)``."""
        return gpx.variational_families.WhitenedVariationalGaussian(
            model=gpjax_prior_and_likelihood(self.model, inducing.dtype), inducing_inputs=inducing)

    def init(self, key: Array) -> GPJaxSVGPState:
        variational, hyper = partition_variational(self.family(random_rows(key, self.data, self.model.num_inducing)["x"]))
        return GPJaxSVGPState(variational, hyper, jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: GPJaxSVGPState, batch: dict) -> tuple[GPJaxSVGPState, dict]:
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def _step_impl(self, key: Array, state: GPJaxSVGPState, batch: dict) -> tuple[GPJaxSVGPState, dict]:
        rho = jnp.asarray(self.step_size(state.step + 1), batch["y"].dtype)
        data = gpx.Dataset(X=batch["x"], y=batch["y"][:, None], n_total=self.data_size)
        variational, loss = natural_gradient_step(state.variational, state.hyper, data, _negative_elbo, rho)
        return GPJaxSVGPState(variational, state.hyper, state.step + 1), {"gamma": rho, "elbo": -loss}

    def posterior(self, state: GPJaxSVGPState) -> SparseGPPosterior:
        family = eqx.combine(state.variational, state.hyper)
        z = val(family.inducing_inputs)
        loc, root = val(family.variational_mean)[:, 0], val(family.variational_root_covariance)
        return SparseGPPosterior(z[None], whitening(self.model, z)[None], jnp.zeros((1,), loc.dtype), loc[None],
                                 root[None], jnp.asarray(self.model.lengthscale, loc.dtype),
                                 jnp.asarray(self.model.variance, loc.dtype))

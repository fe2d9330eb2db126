"""GPJax's sparse variational GP with natural gradients behind pmd-bench's interface, in two rows.

:class:`GPJaxSVGP`, the same-algorithm check, is what a JAX user would take instead of our
:class:`baselines.gp.SVIGP`: GPJax 1.0's ``WhitenedVariationalGaussian`` (Hensman, Fusi &
Lawrence 2013, whitened) over a ``Prior`` with the model's RBF kernel, zero mean and jitter, a
``Gaussian`` likelihood at the model's noise, and one ``gpjax.natural_gradients.natural_gradient_step``
(Salimbeni, Eleftheriadis & Hensman 2018; for a Gaussian likelihood the same affine step as
Hensman's) per mini-batch on ``-gpjax.objectives.elbo``, with the mini-batch rescaled by ``N/B``
through the ``Dataset``'s ``n_total``. The kernel, noise and inducing inputs stay fixed (section
6), so no Optax step runs. ``Z`` is drawn as SVI-GP draws it (``M`` random training inputs), so
with the same key the two start from the same ``Z`` and ``q``.

:class:`GPJaxSVGPLearned` is the peer as its users run it: users of GPJax (and of GPflow and
GPyTorch) learn ``Z`` and the kernel and noise hyperparameters ``θ`` by maximising the same
bound, Hensman, Fusi & Lawrence's (2013, eq. 7; for any likelihood Hensman, Matthews &
Ghahramani, AISTATS 2015) ``Σ_i E_q[log p(y_i | f_i)] - KL(q(u) ‖ p(u))``, a lower bound on
``log p(y | θ)`` at every ``θ`` and ``Z``. Each step is one iteration of GPJax's
``gpjax.fit_natgrads`` (the natural-gradient + Adam scheme of Salimbeni, Eleftheriadis & Hensman,
AISTATS 2018): the natural-gradient step on ``q(v)`` above, at the same step sizes as
:class:`GPJaxSVGP`, then one ``optax.adam`` step on everything else in the family at the updated
``q`` and on the same mini-batch: the inducing inputs ``Z``, the RBF kernel's (isotropic)
lengthscale and variance and the Gaussian likelihood's ``obs_stddev``, in GPJax's unconstrained
(softplus) coordinates. Adam's learning rate is ``1e-2``, as ``optim=ox.adam(1e-2)`` in GPJax's
"Natural Gradients in Practice" example (``docs/examples/natgrads.py``) and in ``fit_natgrads``'
docstring example; GPflow's natural-gradients notebook pairs its ``NaturalGradient`` with the same
``adam_learning_rate = 0.01``. The start is the model's hyperparameters and ``Z`` drawn as
:class:`GPJaxSVGP` draws it, so with the same key the two rows start from the same place. Every
Adam step changes what the whitened ``q(v)`` means (``u = L_θ,Z v``), so ``q`` follows the moving
``Z`` and kernel with the lag of the natural-gradient steps.

The posterior is read back into a :class:`pmd.models.sparse_gp.SparseGPPosterior` (one component
at the family's ``Z`` and kernel, whitening factor ``chol(K_zz + εI)`` with GPJax's absolute jitter
``ε = model.jitter · model.variance``), so the learned row predicts with its learned kernel.
:meth:`GPJaxSVGP.fitted_model` gives the model at the family's hyperparameters, at which the
sparse-GP experiment evaluates a row's full-data Hensman bound.

Work (:func:`pmd.interface.work`): GPJax's natural-gradient step differentiates the batch ELBO
(``jax.value_and_grad`` in expectation coordinates; the check that may shrink the step factorises
matrices but evaluates no likelihood), so :class:`GPJaxSVGP` evaluates ``B`` likelihood terms and
their gradients a step; :class:`GPJaxSVGPLearned`'s Adam step differentiates the batch ELBO once
more, ``2B`` of each.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import gpjax as gpx
import jax
import jax.numpy as jnp
import optax
from gpjax.natural_gradients import natural_gradient_step, partition_variational
from gpjax.parameters import val

from pmd.interface import ConfigError, work
from pmd.models.sparse_gp import SparseGP, SparseGPPosterior, rbf
from pmd.schedules import step_size as make_step_size
from pmd.structured.sparse_gp import require_sparse_gp

from ..gp.sod import random_rows, require_data
from .numpyro_svi import _require_positive

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class GPJaxSVGPState:
    """GPJax's variational partition (the whitened ``q(v)``), its hyperparameter partition (kernel,
    likelihood, ``Z``; fixed unless learned), the step count and Adam's state (``()`` when fixed)."""

    variational: Any
    hyper: Any
    step: Array
    opt: Any = ()


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

    handles = ("sparse_gp",)  # the target it runs on (workflow.methods.TARGETS)
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
        """``Z`` = ``M`` random training inputs (as SVI-GP draws them), ``q(v) = N(0, I)``."""
        return self.start(random_rows(key, self.data, self.model.num_inducing)["x"])

    def start(self, inducing: Array) -> GPJaxSVGPState:
        """The state at inducing inputs ``inducing (M, d)`` and the model's hyperparameters, ``q(v) = N(0, I)``."""
        variational, hyper = partition_variational(self.family(inducing))
        return GPJaxSVGPState(variational, hyper, jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: GPJaxSVGPState, batch: dict) -> tuple[GPJaxSVGPState, dict]:
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def _step_impl(self, key: Array, state: GPJaxSVGPState, batch: dict) -> tuple[GPJaxSVGPState, dict]:
        rho = jnp.asarray(self.step_size(state.step + 1), batch["y"].dtype)
        variational, loss = natural_gradient_step(state.variational, state.hyper, self.dataset(batch),
                                                  _negative_elbo, rho)
        rows = batch["y"].shape[0]
        return (dataclasses.replace(state, variational=variational, step=state.step + 1),
                {"gamma": rho, "elbo": -loss, **work(rows, rows)})

    def dataset(self, batch: dict) -> gpx.Dataset:
        """The mini-batch as GPJax's ``Dataset``, rescaled to ``N`` by its ``n_total``."""
        return gpx.Dataset(X=batch["x"], y=batch["y"][:, None], n_total=self.data_size)

    def posterior(self, state: GPJaxSVGPState) -> SparseGPPosterior:
        family = eqx.combine(state.variational, state.hyper)
        prior = family.model.prior
        z = val(family.inducing_inputs)
        lengthscale, variance = val(prior.kernel.lengthscale), val(prior.kernel.variance)
        jitter = prior.jitter * jnp.eye(z.shape[0], dtype=z.dtype)
        chol_k = jnp.linalg.cholesky(rbf(z, z, lengthscale, variance) + jitter)
        loc, root = val(family.variational_mean)[:, 0], val(family.variational_root_covariance)
        return SparseGPPosterior(z[None], chol_k[None], jnp.zeros((1,), loc.dtype), loc[None], root[None],
                                 lengthscale, variance)

    def fitted_model(self, state: GPJaxSVGPState) -> SparseGP:
        """The sparse GP at the family's kernel and noise (the model itself, up to round-off, when
        nothing is learned), with GPJax's absolute jitter; not traceable (Python floats)."""
        family = eqx.combine(state.variational, state.hyper)
        kernel = family.model.prior.kernel
        variance = float(val(kernel.variance))
        return dataclasses.replace(self.model, lengthscale=float(val(kernel.lengthscale)), variance=variance,
                                   noise_variance=float(val(family.model.likelihood.obs_stddev)) ** 2,
                                   jitter=family.model.prior.jitter / variance)


class GPJaxSVGPLearned(GPJaxSVGP):
    """GPJax SVGP learning ``Z`` and the kernel and noise by Adam beside the natural-gradient steps
    on ``q(v)``, one ``gpjax.fit_natgrads`` iteration per mini-batch (module docstring).

    Args:
        model, data_size, num_particles, data, step_size: as for :class:`GPJaxSVGP` (the model's
            hyperparameters are the start).
        learning_rate: Adam's learning rate on the unconstrained hyperparameters and ``Z``
            (default ``1e-2``, GPJax's example's).
    """

    method_family = "variational inference"
    reference = (
        "GPJax `gpjax.fit_natgrads`' iteration: `natural_gradient_step` on `WhitenedVariationalGaussian`, then "
        "`optax.adam(1e-2)` on Z, lengthscale, variance and noise (Hensman, Fusi & Lawrence, UAI 2013, eq. 7; "
        "Salimbeni, Eleftheriadis & Hensman, AISTATS 2018)"
    )

    def __init__(self, model, data_size: int, num_particles: int = 1, data: Any = None, step_size: Any = None,
                 learning_rate: float = 1e-2):
        super().__init__(model, data_size, num_particles, data, step_size)
        self.learning_rate = _require_positive("learning_rate", learning_rate)
        self.optimizer = optax.adam(self.learning_rate)

    def start(self, inducing: Array) -> GPJaxSVGPState:
        # every array strongly typed: Adam's update makes the weakly typed constant of GPJax's Zero
        # mean strong, and a state whose types change between steps recompiles the runner's scan
        state = super().start(inducing)
        hyper = jax.tree_util.tree_map(lambda a: jnp.asarray(a, a.dtype), state.hyper)
        return dataclasses.replace(state, hyper=hyper, opt=self.optimizer.init(eqx.filter(hyper, eqx.is_array)))

    def _step_impl(self, key: Array, state: GPJaxSVGPState, batch: dict) -> tuple[GPJaxSVGPState, dict]:
        new, info = super()._step_impl(key, state, batch)
        data = self.dataset(batch)
        grads = eqx.filter_grad(lambda hyper: _negative_elbo(eqx.combine(new.variational, hyper), data))(state.hyper)
        updates, opt = self.optimizer.update(grads, state.opt, eqx.filter(state.hyper, eqx.is_array))
        rows = batch["y"].shape[0]
        return (dataclasses.replace(new, hyper=eqx.apply_updates(state.hyper, updates), opt=opt),
                {**info, **work(2 * rows, 2 * rows)})

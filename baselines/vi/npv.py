"""Nonparametric variational inference (Gershman, Hoffman & Blei, ICML 2012), full-data and stochastic.

The variational family is a uniform mixture of ``m`` isotropic Gaussians,
``q(θ) = 1/m Σ_i N(θ; μ_i, σ_i² I)``, fitted by maximising GHB12's second-order approximation of
the ELBO (their ``L2``, eq. 10):

    L2 = 1/m Σ_i [f(μ_i) + σ_i²/2 · tr ∇²f(μ_i)]  -  1/m Σ_i log(1/m Σ_j N(μ_i; μ_j, (σ_i² + σ_j²) I)),

``f(θ) = log p(θ) + Σ_n log p(x_n|θ)`` the log joint. The first term is the second-order Taylor
expansion of ``E_q f``; the second is their Jensen lower bound on the mixture's entropy.

* :class:`NPV` optimises ``L2`` on the whole data set (passed as ``data=``) with L-BFGS
  (``optax.lbfgs`` with a zoom line search, jittable), ``iterations`` per ``step``; the runner's
  batch is checked and ignored, and ``info["visited"]`` counts ``N`` per objective evaluation.
* :class:`StochasticNPV` is the "SGD NPV" of Dai et al. (2016, sec. 6): the same ``L2`` with ``f``
  estimated on the mini-batch as ``log p(θ) + N · mean_b log p(x_b|θ)`` (unbiased, since ``L2`` is
  linear in ``f``), one optax step per mini-batch.

GHB12 alternate between the means (on the first-order ``L1``, to avoid third derivatives) and the
variances (on ``L2``); here automatic differentiation gives the exact gradient of ``L2`` in all
parameters, which are optimised jointly. A useful identity, tested: ``L2`` is invariant to
translating the means and gains ``d log c`` when means and widths are scaled by ``c``, so on a
Gaussian posterior ``N(μ*, P⁻¹ I)`` every stationary point has mixture mean exactly ``μ*`` and
mixture covariance of trace exactly ``d / P``.

Work (``info["evals"]``, ``info["grad_evals"]``; :func:`pmd.interface.work`): one value and
gradient of ``L2`` on ``R`` rows (:func:`l2_work`) evaluates ``f`` and its gradient at the ``m``
means (``R·m`` gradients), the Hessian trace at the ``m`` means (``jax.hessian`` is forward over
reverse: ``d`` gradients of each term, ``R·m·d``) and, for the gradient of that trace, reverse mode
through those ``d`` passes (counted as ``d`` gradients more, ``R·m·d``): ``R·m·(1 + 2d)``
gradients, each also an evaluation. :class:`StochasticNPV` makes one per step on the batch
(``R = B``); :class:`NPV` one per L-BFGS call of the objective on all ``N`` rows: the zoom line
search's steps (each a value and gradient) plus the first iteration's own call, the same count
``info["visited"]`` gives in rows.

Both start from ``m`` prior draws with the normal-reference width of those draws
(:class:`pmd.bandwidth.Silverman`) and return a :class:`MixturePosterior`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import optax
from jax.scipy.special import logsumexp

from pmd.bandwidth import Silverman
from pmd.interface import FullDataStep, require_positive_int, work
from pmd.kde import pairwise_sq_distances
from pmd.posterior import MixturePosterior

from .._common import minibatch_log_joint, require_common, require_full_data, stochastic_optimizer

Array = jax.Array


def second_order_elbo(log_joint: Callable[[Array], Array], params: dict) -> Array:
    """GHB12's ``L2`` (eq. 10) of the mixture ``params = {"means" (m, d), "log_var" (m,)}``."""
    means, log_var = params["means"], params["log_var"]
    m, d = means.shape
    var = jnp.exp(log_var)
    f = jax.vmap(log_joint)(means)
    trace_hessian = jax.vmap(lambda mu: jnp.trace(jax.hessian(log_joint)(mu)))(means)
    expected = jnp.mean(f + 0.5 * var * trace_hessian)
    pair_var = var[:, None] + var[None, :]
    log_n = -0.5 * pairwise_sq_distances(means, means) / pair_var - 0.5 * d * jnp.log(2.0 * math.pi * pair_var)
    entropy_bound = -jnp.mean(logsumexp(log_n, axis=1) - math.log(m))
    return expected + entropy_bound


def l2_work(rows: Any, m: int, d: int) -> dict:
    """The work of value-and-gradients of ``L2`` on ``rows`` rows in all (``N`` per call of the full
    objective, ``B`` for a mini-batch's) with ``m`` means in ``d`` dimensions: ``rows·m·(1 + 2d)``
    gradients and as many evaluations (module docstring)."""
    count = jnp.asarray(rows, jnp.float32) * (m * (1 + 2 * d))
    return work(count, count)


def _init_params(model, key: Array, m: int) -> dict:
    """``m`` prior draws, each with the normal-reference width of the draws."""
    means = model.sample_prior(key, m)
    chol = Silverman()(means, jnp.zeros((m,), means.dtype))
    var = jnp.trace(chol @ chol.T) / means.shape[1]
    return {"means": means, "log_var": jnp.full((m,), jnp.log(var), means.dtype)}


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class NPVState:
    """Mixture parameters ``{"means", "log_var"}``, optimizer state, step count."""

    params: dict
    opt_state: Any
    step: Array  # int32


class _MixtureVI:
    """What both NPV variants share: the prior start, the step wrapper and the posterior."""

    model: Any
    num_particles: int
    optimizer: Any

    def init(self, key: Array) -> NPVState:
        """``m`` prior draws with the normal-reference width (module docstring)."""
        params = _init_params(self.model, key, self.num_particles)
        return NPVState(params, self.optimizer.init(params), jnp.asarray(0, jnp.int32))

    def step(self, key: Array, state: NPVState, batch: Any) -> tuple[NPVState, dict]:
        """One optimisation step (see the subclass); the batch is checked as PMD checks it."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: NPVState) -> MixturePosterior:
        """The uniform mixture ``1/m Σ_i N(μ_i, σ_i² I)``."""
        means = state.params["means"]
        uniform = jnp.full((means.shape[0],), -math.log(means.shape[0]), means.dtype)
        return MixturePosterior(means, uniform, jnp.exp(0.5 * state.params["log_var"]))


class NPV(FullDataStep, _MixtureVI):
    """Full-data NPV: ``L2`` maximised by L-BFGS (GHB12; module docstring).

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, the mixture components.
        data: the whole data set (a pytree with ``data_size`` rows).
        iterations: L-BFGS iterations per ``step``.
        memory_size: L-BFGS history length.
    """

    method_family = "nonparametric VI"
    reference = "Gershman, Hoffman & Blei, ICML 2012"

    def __init__(self, model, data_size: int, num_particles: int, data: Any = None, iterations: int = 1,
                 memory_size: int = 10):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.data = require_full_data(self.model, data, self.data_size)
        self.iterations = require_positive_int("iterations", iterations)
        self.optimizer = optax.lbfgs(memory_size=require_positive_int("memory_size", memory_size))
        self._log_joint = minibatch_log_joint(self.model, self.data_size)  # on all rows: the full sum
        self._step = jax.jit(self._step_impl)

    def objective(self, params: dict, data: Any = None) -> Array:
        """``L2`` on the whole data set (``data``; default: the one given at construction)."""
        data = self.data if data is None else data
        return second_order_elbo(lambda th: self._log_joint(th, data), params)

    def _step_impl(self, key: Array, state: NPVState, batch: Any, data: Any) -> tuple[NPVState, dict]:
        """``iterations`` L-BFGS iterations on the full-data ``-L2`` of ``data`` (``step``: pmd.interface.FullDataStep)."""
        def loss(params):
            return -self.objective(params, data)

        value_and_grad = optax.value_and_grad_from_state(loss)

        def iteration(carry, _):
            params, opt_state = carry
            fresh = ~jnp.isfinite(optax.tree.get(opt_state, "value"))  # no stored value: one extra call
            value, grad = value_and_grad(params, state=opt_state)
            updates, opt_state = self.optimizer.update(grad, opt_state, params, value=value, grad=grad,
                                                       value_fn=loss)
            calls = optax.tree.get(opt_state, "num_linesearch_steps") + fresh.astype(jnp.int32)
            return (optax.apply_updates(params, updates), opt_state), (calls, value)

        (params, opt_state), (calls, values) = jax.lax.scan(
            iteration, (state.params, state.opt_state), None, length=self.iterations)
        rows = self.data_size * jnp.sum(calls)
        info = {"visited": rows, "elbo2": -values[-1], **l2_work(rows, *state.params["means"].shape)}
        return NPVState(params, opt_state, state.step + 1), info


class StochasticNPV(_MixtureVI):
    """"SGD NPV" (Dai et al. 2016): ``L2`` on mini-batches, optimised by optax (module docstring).

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, the mixture components.
        optimizer, learning_rate, tau, kappa: as for :class:`baselines.SVI`.
    """

    method_family = "nonparametric VI"
    reference = "Gershman, Hoffman & Blei, ICML 2012; its SGD form from Dai, He, Dai & Song, AISTATS 2016, section 6"

    def __init__(self, model, data_size: int, num_particles: int, optimizer: str = "adam",
                 learning_rate: float = 0.01, tau: float = 1.0, kappa: float = 0.0):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.optimizer, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa)
        self._log_joint = minibatch_log_joint(self.model, self.data_size)
        self._step = jax.jit(self._step_impl)

    def objective(self, params: dict, batch: Any) -> Array:
        """The mini-batch estimate of ``L2``."""
        return second_order_elbo(lambda th: self._log_joint(th, batch), params)

    def _step_impl(self, key: Array, state: NPVState, batch: Any) -> tuple[NPVState, dict]:
        """One optimizer step on the mini-batch ``L2`` (deterministic: ``key`` unused)."""
        value, grads = jax.value_and_grad(self.objective)(state.params, batch)
        neg = jax.tree_util.tree_map(jnp.negative, grads)
        updates, opt_state = self.optimizer.update(neg, state.opt_state, state.params)
        t = state.step + 1
        rows = jax.tree_util.tree_leaves(batch)[0].shape[0]
        info = {"elbo2": value, "learning_rate": self.learning_rate(t), **l2_work(rows, *state.params["means"].shape)}
        return NPVState(optax.apply_updates(state.params, updates), opt_state, t), info

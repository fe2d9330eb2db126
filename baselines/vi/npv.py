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

Work (``info["evals"]``, ``info["grad_evals"]``, ``info["hvp_evals"]``; :func:`pmd.interface.work`,
charged by :data:`pmd.work.UNITS`): one value and gradient of ``L2`` on ``R`` rows (:func:`l2_work`)
evaluates ``f`` and its gradient at the ``m`` means (``R·m`` values and gradients), the Hessian
trace at the ``m`` means (``jax.hessian`` is forward over reverse: ``d`` Hessian-vector products of
each term, ``R·m·d``) and, for the gradient of that trace, reverse mode through those ``d`` passes
(counted as ``d`` Hessian-vector products more, ``R·m·d``): ``R·m·2d`` in all. :class:`StochasticNPV` makes one per step on the batch
(``R = B``); :class:`NPV` one per L-BFGS call of the objective on all ``N`` rows: the zoom line
search's steps (each a value and gradient) plus the first iteration's own call, the same count
``info["visited"]`` gives in rows.

Both return a :class:`MixturePosterior`, and both record the first step at which the parameters
went non-finite: ``posterior`` then raises ``FloatingPointError`` naming it (and
:class:`StochasticNPV`'s step size), instead of returning NaN components.

**Defaults from the model: the Laplace start.** With ``init="laplace"`` (:class:`NPV`'s default,
and :class:`StochasticNPV`'s when ``learning_rate`` is None) the whole data set (``data=``) is
read once, at construction: :func:`baselines._common.laplace_approximation` gives the mode ``θ̂``
of the full-data log joint and ``Λ = -∇² log p(θ̂|X)`` there (Bishop 2006, sec. 4.4), its reads the
method's ``start_work``. The components start with the width ``σ² = h²/λ_max(Λ)``, ``h²``
Silverman's normal-reference factor ``(4/((d + 2) m))^{2/(d+4)}`` (1986, eq. 4.14; the width the
prior start gives its draws), taken along the posterior's narrowest direction so that it fits
inside every direction, and their means at ``m`` draws of ``N(θ̂, Λ⁻¹ - σ² I)``: the mixture's
covariance is then the Laplace one, ``Λ⁻¹`` (GHB12 leave the start open). The optimiser works on
the means in the coordinates ``μ_i = θ̂ + s ⊙ u_i``, ``s = 1/sqrt(diag Λ)`` the Laplace conditional
sds (the mean-field whitening of :class:`baselines.SVI`; a full whitening would make the
components anisotropic, another family), so that Adam's steps, of the size of its rate whatever
the gradient (Kingma & Ba 2015, sec. 2.1), move every mean by a fraction of its posterior sd on
any model: :class:`StochasticNPV`'s default rate is SVI's after its Laplace start,
``0.01 (1 + t)^-0.55``. On the 3-d test regression (tests/baselines_helpers.py) one pass then ends
within 0.08 sds of the mean and 0.06 in log sd (400 components, seeds 0-4), where the prior start with a
constant Adam rate 0.01 in the units of ``θ`` ends 94 sds off. ``init="prior"`` (and, for
:class:`StochasticNPV`, an explicit ``learning_rate`` with ``init`` left at None) keeps the
method as it was: ``m`` prior draws with the normal-reference width of those draws
(:class:`pmd.bandwidth.Silverman`), the rate in the units of ``θ``, the data not read. A
:class:`StochasticNPV` with neither ``data=`` nor a ``learning_rate`` is refused
(:class:`pmd.ConfigError`).
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

from .._common import (first_nonfinite, laplace_start, minibatch_log_joint, refuse_diverged, require_choice,
                       require_common, require_full_data, resolve_init, stochastic_optimizer, INITS)

Array = jax.Array
# StochasticNPV's default (learning_rate, kappa) after each start (module docstring), with τ = 1:
# after the Laplace start the rate is in the means' whitened coordinates
_DEFAULTS = {"laplace": (0.01, 0.55), "prior": (0.01, 0.0)}


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
    objective, ``B`` for a mini-batch's) with ``m`` means in ``d`` dimensions: ``rows·m`` values and
    gradients, ``rows·m·2d`` Hessian-vector products (module docstring)."""
    count = jnp.asarray(rows, jnp.float32) * m
    return work(count, count, hvp_evals=count * (2 * d))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class NPVState:
    """Mixture parameters ``{"means", "log_var"}`` (the means in the start's coordinates),
    optimizer state, step count, the first step whose parameters went non-finite (-1 while none has)."""

    params: dict
    opt_state: Any
    step: Array  # int32
    diverged_at: Array  # int32


class _MixtureVI:
    """What both NPV variants share: the start, the step wrapper and the posterior."""

    # what it maximises (GHB12's approximation of the ELBO), so the tuning protocol scores it by the ELBO
    # (workflow.tuning.elbo_criterion), not by a held-out predictive
    maximises = "elbo"

    model: Any
    num_particles: int
    optimizer: Any
    step_size: Any  # t -> the step size of step t (None: L-BFGS's line search)

    def _start(self, method: str, setting: str, data: Any) -> None:
        """The means' coordinates ``μ = θ̂ + s ⊙ u`` (``s`` the Laplace conditional sds) after the
        Laplace start, ``μ = u`` after the prior start (module docstring)."""
        self.start_work, self.laplace, d = (0.0, 0.0), None, self.model.dim
        self.shift, self.scale = jnp.zeros((d,)), jnp.ones((d,))
        if self.init_from == "laplace":
            self.laplace = laplace_start(method, setting, self.model, data, self.data_size)
            self.shift, self.scale, self.start_work = self.laplace.mode, self.laplace.conditional_sd, self.laplace.work

    def mixture(self, params: dict) -> dict:
        """``{"means" (m, d) in θ, "log_var" (m,)}`` of the optimised parameters."""
        return {"means": self.shift + params["means"] * self.scale, "log_var": params["log_var"]}

    def init(self, key: Array) -> NPVState:
        """``m`` components whose mixture has the Laplace covariance, or ``m`` prior draws with the
        normal-reference width of the draws (module docstring)."""
        m, d = self.num_particles, self.model.dim
        if self.laplace is None:
            means = self.model.sample_prior(key, m)
            chol = Silverman()(means, jnp.zeros((m,), means.dtype))
            var = jnp.trace(chol @ chol.T) / d
        else:
            # σ² = h²/λ_max(Λ), h² Silverman's (1986, eq. 4.14) normal-reference factor; the means
            # ~ N(θ̂, Λ⁻¹ - σ² I), so that the mixture's covariance is Λ⁻¹
            cov = self.laplace.chol @ self.laplace.chol.T
            var = (4.0 / ((d + 2.0) * m)) ** (2.0 / (d + 4.0)) / jnp.linalg.eigvalsh(self.laplace.precision)[-1]
            z = jax.random.normal(key, (m, d), dtype=cov.dtype)
            means = self.shift + z @ jnp.linalg.cholesky(cov - var * jnp.eye(d, dtype=cov.dtype)).T
        params = {"means": (means - self.shift) / self.scale,
                  "log_var": jnp.full((m,), jnp.log(var), means.dtype)}
        return NPVState(params, self.optimizer.init(params), jnp.asarray(0, jnp.int32), jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: NPVState, batch: Any) -> tuple[NPVState, dict]:
        """One optimisation step (see the subclass); the batch is checked as PMD checks it."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: NPVState) -> MixturePosterior:
        """The uniform mixture ``1/m Σ_i N(μ_i, σ_i² I)``; ``FloatingPointError`` naming the step
        (and the step size) if the parameters went non-finite."""
        refuse_diverged(type(self).__name__, state.diverged_at, self.step_size)
        params = self.mixture(state.params)
        uniform = jnp.full((self.num_particles,), -math.log(self.num_particles), params["means"].dtype)
        return MixturePosterior(params["means"], uniform, jnp.exp(0.5 * params["log_var"]))

    @staticmethod
    def _advance(state: NPVState, params: dict, opt_state: Any) -> NPVState:
        t = state.step + 1
        leaves = jnp.concatenate([leaf.ravel() for leaf in jax.tree_util.tree_leaves(params)])
        return NPVState(params, opt_state, t, first_nonfinite(state.diverged_at, t, leaves))


class NPV(FullDataStep, _MixtureVI):
    """Full-data NPV: ``L2`` maximised by L-BFGS (GHB12; module docstring).

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, the mixture components.
        data: the whole data set (a pytree with ``data_size`` rows).
        iterations: L-BFGS iterations per ``step``.
        memory_size: L-BFGS history length.
        init: ``"laplace"`` (default) or ``"prior"``, the start (module docstring).
    """

    method_family = "nonparametric VI"
    reference = "Gershman, Hoffman & Blei, ICML 2012"

    step_size = None  # L-BFGS's line search

    def __init__(self, model, data_size: int, num_particles: int, data: Any = None, iterations: int = 1,
                 memory_size: int = 10, init: str = "laplace"):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.data = require_full_data(self.model, data, self.data_size)
        self.iterations = require_positive_int("iterations", iterations)
        self.optimizer = optax.lbfgs(memory_size=require_positive_int("memory_size", memory_size))
        self.init_from = require_choice("init", init, INITS)
        self._start("NPV", "init", self.data)
        self._log_joint = minibatch_log_joint(self.model, self.data_size)  # on all rows: the full sum
        self._step = jax.jit(self._step_impl)

    def objective(self, params: dict, data: Any = None) -> Array:
        """``L2`` on the whole data set (``data``; default: the one given at construction) of the
        optimised parameters (:meth:`mixture`)."""
        data = self.data if data is None else data
        return second_order_elbo(lambda th: self._log_joint(th, data), self.mixture(params))

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
        return self._advance(state, params, opt_state), info


class StochasticNPV(_MixtureVI):
    """"SGD NPV" (Dai et al. 2016): ``L2`` on mini-batches, optimised by optax (module docstring).

    Args:
        model, data_size: as for :class:`pmd.PMD`.
        num_particles: ``m``, the mixture components.
        optimizer, learning_rate, tau, kappa: as for :class:`baselines.SVI`; ``learning_rate`` and
            ``kappa`` None take the start's default: ``0.01 (1 + t)^-0.55`` in the whitened
            coordinates after the Laplace start, a constant 0.01 after the prior start.
        init: ``"laplace"`` or ``"prior"``; None: ``"laplace"`` when ``learning_rate`` is None, else
            ``"prior"`` (module docstring).
        data: the whole data set, which the Laplace start reads once, at construction.
    """

    method_family = "nonparametric VI"
    reference = "Gershman, Hoffman & Blei, ICML 2012; its SGD form from Dai, He, Dai & Song, AISTATS 2016, section 6"

    def __init__(self, model, data_size: int, num_particles: int, optimizer: str = "adam",
                 learning_rate: float | None = None, tau: float = 1.0, kappa: float | None = None,
                 init: str | None = None, data: Any = None):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.init_from = resolve_init(init, learning_rate)
        default_rate, default_kappa = _DEFAULTS[self.init_from]
        learning_rate = default_rate if learning_rate is None else learning_rate
        kappa = default_kappa if kappa is None else kappa
        self.optimizer, self.learning_rate = stochastic_optimizer(optimizer, learning_rate, tau, kappa)
        self.step_size = self.learning_rate
        self._start("StochasticNPV", "learning_rate", data)
        self._log_joint = minibatch_log_joint(self.model, self.data_size)
        self._step = jax.jit(self._step_impl)

    def objective(self, params: dict, batch: Any) -> Array:
        """The mini-batch estimate of ``L2`` of the optimised parameters (:meth:`mixture`)."""
        return second_order_elbo(lambda th: self._log_joint(th, batch), self.mixture(params))

    def _step_impl(self, key: Array, state: NPVState, batch: Any) -> tuple[NPVState, dict]:
        """One optimizer step on the mini-batch ``L2`` (deterministic: ``key`` unused)."""
        value, grads = jax.value_and_grad(self.objective)(state.params, batch)
        neg = jax.tree_util.tree_map(jnp.negative, grads)
        updates, opt_state = self.optimizer.update(neg, state.opt_state, state.params)
        t = state.step + 1
        rows = jax.tree_util.tree_leaves(batch)[0].shape[0]
        info = {"elbo2": value, "learning_rate": self.learning_rate(t), **l2_work(rows, *state.params["means"].shape)}
        return self._advance(state, optax.apply_updates(state.params, updates), opt_state), info

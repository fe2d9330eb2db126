"""Stochastic gradient Langevin dynamics (Welling & Teh, ICML 2011).

Equation (4) of Welling & Teh:

    Δθ_t = ε_t/2 · (∇ log p(θ_t) + N/n Σ_{i=1..n} ∇ log p(x_ti|θ_t)) + η_t,   η_t ~ N(0, ε_t I),

with the step size ``ε_t = a (b + t)^(-γ)`` of their section 3. The mini-batch gradient is
``jax.grad`` of ``log p(θ) + N · mean_b log p(x_b|θ)`` (identical to ``N/n Σ``).

* :class:`SGLD` is one chain, as in the paper and in Dai et al.'s comparison: after a burn-in every
  ``thin``-th state is retained, and the posterior is the last ``num_particles`` retained states
  with equal weights (the same memory as PMD's particles). The burn-in is by default the first
  half of the run, whatever its length (``burn_in=0.5``: the warm-up of Stan's and of Gelman et
  al.'s BDA3, sec. 11.4, which discard the first half of every chain); an integer is a number of
  steps (H.1 of Dai et al.: 1000), refused when the run is not longer (when ``num_steps`` is given,
  and by :func:`pmd.run`, which knows the run's length).
* :class:`ParallelSGLD` runs ``num_particles`` independent chains in lockstep on the same
  mini-batch (what a JAX user would write with ``vmap``); its posterior is the chains' current
  states, so it needs no burn-in buffer.

**Defaults from the model** (``data=``, the whole data set, read once at construction, as SVI's
Laplace start reads it). With the step size left at ``a=None``, both methods take
:func:`baselines._common.laplace_approximation`: the mode ``θ̂`` of the full-data log joint and the
precision ``Λ = -∇² log p(θ̂|X)`` there (Bishop 2006, sec. 4.4), whose data reads are the method's
``start_work``.

* The step size. On a Gaussian with precision ``Λ`` (eigenvalues ``λ``), eq. (4) with the full-data
  gradient is along each eigenvector the AR(1) recursion ``θ_{t+1} - θ̂ = φ (θ_t - θ̂) + sqrt(ε) ξ_t``,
  ``φ = 1 - ελ/2``, with stationary variance ``1/(λ (1 - ελ/4))``: stable only for ``ε < 4/λ_max``
  (``|φ| < 1``; naive discretisations of the Langevin diffusion need not converge, Roberts & Tweedie
  1996), free of overshoot (``φ > 0``: no direction jumps past the mode) only for ``ε < 2/λ_max``.
  The default is ``ε_1 = a (b + 1)^(-γ) = c/λ_max``, ``c = 1`` (:data:`CURVATURE_STEP`), half the
  overshoot limit: the stiffest direction starts with ``φ = 1/2`` (it forgets its state within a
  few steps) and a variance bias ``1/(1 - c/4) = 4/3``, which the decay of ``ε_t`` shrinks (1.03
  at ``ε_t = ε_1/8.6``, where the second half of a 200-step run starts at ``b = 1``, ``γ = 0.55``). The
  mini-batch gradient adds about ``ελN/(4n)`` of the variance for batches of ``n`` (Welling & Teh
  sec. 4's ``α``, with the scores' covariance ``≈ Λ/N`` near the mode; Vollmer, Zygalakis & Teh
  2016), which no ``c`` removes within a short run: smaller ``c`` freezes the chain, larger widens
  it (docs/findings.md, 2026-11-26: ``c`` from 0.1 to 1.5 on the 3-d test regression).
* What it leaves. Directions of precision ``λ < λ_max`` move by ``ελ/2`` a step: on a posterior of
  condition number 100 the chain hardly leaves the mode along the flat one (sds 0.2 of the exact
  after 2 passes, in the same note). A fixed preconditioner, the Laplace covariance ``M = Λ⁻¹``
  (``θ += ε/2 M∇ + N(0, εM)``, ``ε_1 = c``), removes that (sds 1.3 of the exact there) but is
  another method, with an ``O(d²)`` step where Table 1 of Dai et al. 2016 counts SGLD's as
  ``Ω(d)``: SGLD stays Welling & Teh's eq. (4), the method Dai et al. compare with.
* The start: :class:`SGLD` at the mode, its buffer (the posterior until a state is retained) ``m``
  draws of the Laplace Gaussian ``N(θ̂, Λ⁻¹)``; :class:`ParallelSGLD` its chains at ``m`` such
  draws. The prior start of Dai et al. (every method starts at ``q̃_1 = p``) spends the first,
  largest steps travelling to the posterior, where a step fitted to its curvature can overshoot.

An explicit ``a`` keeps the method as it always was: the prior start, the data not read. ``a=None``
without ``data=`` is refused (:class:`pmd.ConfigError`, a ``ValueError``) rather than guessed: a
constant ``a = 0.01`` diverges at step 43 on the 3-d test regression (tests/baselines_helpers.py).

Both record the first step at which the state went non-finite (``diverged_at``, -1 while it has
not), and ``posterior`` of such a state raises ``FloatingPointError`` naming that step and its
step size, instead of returning NaN draws.

BlackJAX writes the same update as ``θ + h ∇ log p + sqrt(2h) ξ``: its ``step_size`` ``h`` is
``ε/2`` here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import work
from pmd.posterior import ParticlePosterior

from .._common import (Laplace, PolynomialDecay, RetainedChain, SampleBuffer, first_nonfinite, laplace_start,
                       minibatch_log_joint, polynomial_decay, refuse_diverged, require_burn_in, require_common,
                       require_num_steps)

Array = jax.Array
# c of the default first step ε_1 = c/λ_max (module docstring): half the step 2/λ_max past which eq. (4) overshoots
CURVATURE_STEP = 1.0


def default_start(method: str, model, data_size: int, a: float | None, b: float, gamma: float,
                  data: Any) -> tuple[PolynomialDecay, Laplace | None]:
    """The step size ``ε_t = a (b + t)^(-γ)`` and, when ``a`` is None, the Laplace start it is set
    from: ``a = c (b + 1)^γ / λ_max(Λ)``, so that ``ε_1 = c/λ_max`` (module docstring)."""
    step_size = polynomial_decay(("a", "b", "gamma"), 1.0 if a is None else a, b, gamma)
    if a is not None:
        return step_size, None
    laplace = laplace_start(method, "a", model, data, data_size)
    lambda_max = float(jnp.linalg.eigvalsh(laplace.precision)[-1])
    return replace(step_size, a=CURVATURE_STEP * (step_size.b + 1.0) ** step_size.gamma / lambda_max), laplace


def langevin_update(key: Array, position: Array, grad: Array, eps: Array) -> Array:
    """Welling & Teh eq. (4): ``θ + ε/2 · ∇ log p̂(θ) + N(0, ε I)`` for any leading shape."""
    noise = jax.random.normal(key, position.shape, dtype=position.dtype)
    return position + 0.5 * eps * grad + jnp.sqrt(eps) * noise


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SGLDState:
    """The chain's current state, the retained samples, the step count and the first non-finite step."""

    position: Array  # (d,)
    buffer: SampleBuffer
    step: Array  # int32
    diverged_at: Array  # int32, -1 while every state has been finite

    @classmethod
    def start(cls, position: Array, buffer: SampleBuffer, step: Array) -> "SGLDState":
        return cls(position, buffer, step, jnp.asarray(-1, jnp.int32))


class SGLD(RetainedChain):
    """One SGLD chain (Welling & Teh 2011, eq. 4) with burn-in and thinning.

    Args:
        model: the :class:`pmd.Model`.
        data_size: ``N``.
        num_particles: ``m``, the retained samples kept (the posterior's size).
        a, b, gamma: the step size ``ε_t = a (b + t)^(-γ)`` (``γ = 0``: constant ``a``); ``a=None``
            sets ``ε_1 = 1/λ_max`` from the curvature at the mode and starts there (module
            docstring; needs ``data``).
        burn_in: a float in (0, 1): the fraction of the run's retained states discarded (default:
            the first half); an int: the steps discarded before the first retained one (H.1: 1000).
        thin: retain every ``thin``-th state after burn-in.
        num_steps: the run length, when known, to reject a burn-in that retains nothing.
        data: the whole data set, read once when ``a`` is None (the Laplace start).
    """

    method_family = "stochastic-gradient MCMC"
    reference = "Welling & Teh, ICML 2011"

    state_type = SGLDState.start

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        a: float | None = None,
        b: float = 1.0,
        gamma: float = 0.55,
        burn_in: int | float = 0.5,
        thin: int = 1,
        num_steps: int | None = None,
        data: Any = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.burn_in, self.thin, self.num_steps = require_burn_in(burn_in, thin, num_steps, fraction_ok=True)
        self.step_size, self.laplace = default_start("SGLD", self.model, self.data_size, a, b, gamma, data)
        self.start_work = (0.0, 0.0) if self.laplace is None else self.laplace.work
        # an integer burn-in skips steps; a fractional one retains from the start and drops the
        # first fraction of the retained states in ``posterior``
        self.burn_steps, self.discard = (0, self.burn_in) if isinstance(self.burn_in, float) else (self.burn_in, 0.0)
        self._grad = jax.grad(minibatch_log_joint(self.model, self.data_size))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> SGLDState:
        """The chain at the mode and ``m`` draws of the Laplace Gaussian in the buffer when the
        defaults came from the data, else at a prior draw with ``m`` prior draws (module docstring)."""
        if self.laplace is None:
            return super().init(key)
        return SGLDState.start(self.laplace.mode, SampleBuffer.from_prior(self.laplace.sample(key, self.num_particles)),
                               jnp.asarray(0, jnp.int32))

    def check_num_steps(self, num_steps: int) -> None:
        """Refuse a run of ``num_steps`` steps that an integer ``burn_in`` would leave empty
        (:func:`pmd.run` calls this with the run's length)."""
        require_num_steps(self.burn_in, num_steps)

    def posterior(self, state: SGLDState) -> ParticlePosterior:
        """The last ``m`` retained states after burn-in, equally weighted; ``FloatingPointError`` if
        the chain went non-finite."""
        refuse_diverged("SGLD", state.diverged_at, self.step_size)
        return state.buffer.posterior(self.discard)

    def _step_impl(self, key: Array, state: SGLDState, batch: Any) -> tuple[SGLDState, dict]:
        t = state.step + 1
        eps = self.step_size(t).astype(state.position.dtype)
        position = langevin_update(key, state.position, self._grad(state.position, batch), eps)
        keep = (t > self.burn_steps) & ((t - self.burn_steps) % self.thin == 0)
        new = SGLDState(position=position, buffer=state.buffer.retain(position, keep), step=t,
                        diverged_at=first_nonfinite(state.diverged_at, t, position))
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        return new, {"step_size": eps, "retained": keep, **work(size, size)}  # the batch's gradient at one point


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ParallelSGLDState:
    """The ``m`` chains' current states, the step count and the first non-finite step."""

    positions: Array  # (m, d)
    step: Array  # int32
    diverged_at: Array  # int32, -1 while every state has been finite


class ParallelSGLD:
    """``num_particles`` independent SGLD chains (Welling & Teh 2011, eq. 4) advanced together.

    Every chain sees the same mini-batch and its own Langevin noise. The posterior is the chains'
    current states, equally weighted: ``m`` draws that are independent across chains.

    Args:
        model, data_size, num_particles: as for :class:`SGLD` (``m`` chains).
        a, b, gamma: the step size ``ε_t = a (b + t)^(-γ)``; ``a=None`` as for :class:`SGLD`.
        data: the whole data set, read once when ``a`` is None (the Laplace start).
    """

    method_family = "stochastic-gradient MCMC"
    reference = "Welling & Teh, ICML 2011 (independent chains)"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        a: float | None = None,
        b: float = 1.0,
        gamma: float = 0.55,
        data: Any = None,
    ):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.step_size, self.laplace = default_start("ParallelSGLD", self.model, self.data_size, a, b, gamma, data)
        self.start_work = (0.0, 0.0) if self.laplace is None else self.laplace.work
        self._grads = jax.vmap(jax.grad(minibatch_log_joint(self.model, self.data_size)), in_axes=(0, None))
        self._step = jax.jit(self._step_impl)

    def init(self, key: Array) -> ParallelSGLDState:
        """``m`` chains started at independent draws of the Laplace Gaussian when the defaults came
        from the data, else of the prior (module docstring)."""
        sample = self.model.sample_prior if self.laplace is None else self.laplace.sample
        return ParallelSGLDState(sample(key, self.num_particles), jnp.asarray(0, jnp.int32), jnp.asarray(-1, jnp.int32))

    def step(self, key: Array, state: ParallelSGLDState, batch: Any) -> tuple[ParallelSGLDState, dict]:
        """One Langevin step (eq. 4) of every chain on the shared mini-batch."""
        self.model.check_batch(batch)
        return self._step(key, state, batch)

    def posterior(self, state: ParallelSGLDState) -> ParticlePosterior:
        """The chains' current states, equally weighted; ``FloatingPointError`` if one went non-finite."""
        refuse_diverged("ParallelSGLD", state.diverged_at, self.step_size)
        return ParticlePosterior.equally_weighted(state.positions)

    def _step_impl(self, key: Array, state: ParallelSGLDState, batch: Any) -> tuple[ParallelSGLDState, dict]:
        t = state.step + 1
        eps = self.step_size(t).astype(state.positions.dtype)
        positions = langevin_update(key, state.positions, self._grads(state.positions, batch), eps)
        size = jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles  # the batch at every chain
        return ParallelSGLDState(positions, t, first_nonfinite(state.diverged_at, t, positions)), {
            "step_size": eps, **work(size, size)}

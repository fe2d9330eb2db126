"""BlackJAX's SMC samplers behind pmd-bench's interface: the SMC a user would pick instead of PMD.

Two samplers, both with BlackJAX's HMC kernel (``blackjax.hmc``) as the MCMC move:

* :class:`TemperedSMC`: adaptive tempered SMC (Del Moral, Doucet & Jasra 2006; the adaptive
  temperature of Jasra, Stephens, Doucet & Tsagaris 2011) on the full data set, one tempering
  stage per ``step``;
* :class:`DataTemperedSMC`: data-tempered SMC over partial posteriors (Chopin 2002), the streaming
  peer of :class:`baselines.OnePassSMC`, one mini-batch of new data points per ``step``.

The MCMC move. HMC rather than random-walk Metropolis because every pmd-bench model is a JAX
function, so gradients are free to a user, and HMC's cost per independent draw grows far more
slowly with the dimension (``d^{1/4}`` leapfrog steps against ``d`` proposals; Beskos et al.
2013, Roberts & Rosenthal 2001). It is tuned from the particles, so a black-box user tunes nothing per posterior:

* the inverse mass matrix is the weighted covariance of the cloud that the move targets, so the
  dynamics run in whitened coordinates (Buchholz, Chopin & Jacob 2021, sec. 3.1 use its diagonal;
  the full matrix also whitens correlated posteriors), with a jitter of ``MASS_JITTER`` times each
  coordinate's own variance (:func:`pmd.bandwidth.stable_cholesky`). A jitter sized to the mean
  variance widens a coordinate 10⁴ times narrower than another by orders of
  magnitude (posteriordb's kilpisjarvi: a slope beside an intercept), and the moves there are
  all rejected;
* the trajectory length is ``trajectory_length`` whitened units, default ``π/2``: a quarter period
  of the dynamics of a whitened Gaussian, which maps a point to an independent one (a half period
  maps ``θ`` to its reflection ``2μ - θ`` and leaves the error of the resampled cloud in place:
  with five leapfrog steps of the adapted size instead, a trajectory of 3.3 at the start in
  d = 5, the between-run error of the data-tempered mean was 1.14 times its ESS-based standard
  error, against 0.96 with ``π/2``);
* the leapfrog step size ``ε`` starts at ``d^{-1/4}`` (the optimal scaling of Beskos et al. 2013)
  and after every move is multiplied by ``exp(ā - 0.65)``, ``ā`` the particles' mean acceptance
  rate and 0.65 the asymptotically optimal one (Beskos et al. 2013), so it grows while moves are
  cheap and shrinks when they fail; the number of leapfrog steps is
  ``ceil(trajectory_length / ε)``, at most ``MAX_INTEGRATION_STEPS``;
* each particle draws its own step size uniformly in ``[0.8, 1.2] ε`` for each move (Neal 2011,
  sec. 5.4.2: jittering avoids the periodic trajectories a fixed step can hit).

``inverse_mass_matrix``, ``step_size`` and ``num_integration_steps`` are per-move arguments of
BlackJAX's kernels (``mcmc_parameters``), so the state carries ``ε`` and each ``step`` passes
them. ``blackjax.inner_kernel_tuning`` is not used: its update function sees the new SMC state
and the move's info but not the parameters of the move, so it cannot adapt ``ε`` multiplicatively.

Work (:func:`pmd.interface.work`), from BlackJAX's code (1.7) and the move's info: a resample-move
starts every particle's HMC chain with a value and gradient of the target (``blackjax.hmc.init``)
and each leapfrog step takes one more (``velocity_verlet``), every one over all ``N`` rows (the
partial posteriors mask rows after evaluating them): ``N·(m + Σ L)`` gradients, ``Σ L`` the
leapfrog steps of all particles and moves, read from the move's ``num_integration_steps``
(:meth:`_HMCMoves._move_work`). Under ``vmap`` a particle whose trajectory is shorter waits for the
longest; the count is the algorithm's ``Σ L``, not ``m · max L``. Each sampler adds the
evaluations of its weights (the class docstrings).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import blackjax
import jax
import jax.numpy as jnp
from blackjax.smc import adaptive_tempered, partial_posteriors_path, resampling
from blackjax.smc.tempered import TemperedSMCState

from pmd.bandwidth import stable_cholesky, weighted_cov
from pmd.interface import ConfigError, FullDataStep, require_fraction, require_positive_int, work
from pmd.posterior import ParticlePosterior
from pmd.weights import cap_step_size, effective_sample_size, normalize

from .._common import first_diverged, first_nonfinite, require_common, require_full_data

Array = jax.Array

TARGET_ACCEPTANCE = 0.65  # Beskos, Pillai, Roberts, Sanz-Serna & Stuart (2013)
STEP_JITTER = 0.2  # per-particle step sizes uniform in [1 - 0.2, 1 + 0.2] times the adapted one
MAX_INTEGRATION_STEPS = 100  # caps the cost of a move if the step size collapses
MASS_JITTER = 1e-6  # added to the cloud covariance's diagonal, relative to each coordinate's variance
MAX_START_ROUNDS = 100  # rounds of m prior draws that may fill the tempered start (TemperedSMC.init)
MAX_BATCH_STAGES = 100  # tempering stages one batch may take (DataTemperedSMC); the last takes the rest


def rows_read(evals: Array, num_particles: int) -> Array:
    """The data rows a step read, from its likelihood terms: ``evals / m``, every particle
    evaluated on the same rows together (the convention of the runner's ``visited``: one read of
    a row serves all ``m`` particles). A stage that weighs all ``N`` rows twice and moves with
    ``Σ L`` leapfrog gradients over the particles reads ``N·(2 + (m + Σ L)/m)`` rows, not ``N``."""
    return jnp.round(evals / num_particles).astype(jnp.int32)


class _HMCMoves(FullDataStep):
    """The checks both samplers share and the tuned HMC move (module docstring)."""

    def __init__(self, model, data_size: Any, num_particles: Any, data: Any, num_mcmc_steps: Any,
                 trajectory_length: Any):
        self.model, self.data_size, self.num_particles = require_common(model, data_size, num_particles)
        self.data = require_full_data(self.model, data, self.data_size)
        self.num_mcmc_steps = require_positive_int("num_mcmc_steps", num_mcmc_steps)
        if isinstance(trajectory_length, bool) or not isinstance(trajectory_length, (int, float)) \
                or not trajectory_length > 0:
            raise ConfigError(f"trajectory_length must be a positive number, got {trajectory_length!r}")
        self.trajectory_length = float(trajectory_length)
        self._hmc = blackjax.hmc.build_kernel()

    def _initial_step_size(self, dtype) -> Array:
        return jnp.asarray(self.model.dim ** -0.25, dtype)

    def _move_parameters(self, key: Array, particles: Array, log_weights: Array, step_size: Array) -> dict:
        """HMC parameters for a move targeting the distribution of the weighted cloud.

        Leaves of leading size 1 are shared by all particles, leaves of size ``m`` are per particle
        (BlackJAX's convention, ``blackjax.smc.from_mcmc.unshared_parameters_and_step_fn``).
        """
        m = particles.shape[0]
        factor = stable_cholesky(weighted_cov(particles, log_weights), MASS_JITTER)
        cov = factor @ factor.T
        steps = step_size * jax.random.uniform(key, (m,), particles.dtype, 1.0 - STEP_JITTER, 1.0 + STEP_JITTER)
        leapfrogs = jnp.clip(jnp.ceil(self.trajectory_length / steps), 1, MAX_INTEGRATION_STEPS)
        return {
            "step_size": steps,
            "inverse_mass_matrix": cov[None],
            "num_integration_steps": leapfrogs.astype(jnp.int32),
        }

    def _move_work(self, update_info) -> Array:
        """Gradients of one resample-move, ``N·(m + Σ L)`` (module docstring)."""
        leapfrogs = jnp.sum(update_info.num_integration_steps.astype(jnp.float32))
        return self.data_size * (self.num_particles + leapfrogs)

    @staticmethod
    def _adapt(step_size: Array, update_info) -> tuple[Array, Array]:
        """The next step size from this move's mean acceptance rate; returns both."""
        acceptance = jnp.mean(update_info.acceptance_rate)
        return step_size * jnp.exp(acceptance - TARGET_ACCEPTANCE), acceptance


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class TemperingState:
    """BlackJAX's tempered-SMC state (particles, normalised weights, temperature), the HMC step
    size in whitened units, the start's likelihood evaluations not yet reported (the first stage
    reports them) and the first stage whose weights went non-finite (-1 while none has)."""

    sampler: TemperedSMCState
    step_size: Array
    start_evals: Array
    stages: Array  # int32, the stages run
    diverged_at: Array  # int32


class TemperedSMC(_HMCMoves):
    """Adaptive tempered SMC on the full data (``blackjax.adaptive_tempered_smc``).

    The target path is ``π_λ(θ) ∝ p(θ) p(x_{1:N}|θ)^λ`` from the prior (``λ = 0``) to the posterior
    (``λ = 1``) (Del Moral, Doucet & Jasra 2006, sec. 3.3.2). Each stage chooses ``λ'`` by
    bisection so that the increments ``p(x|θ_i)^{λ' - λ}`` have an ESS of ``target_ess · m``
    (Jasra et al. 2011), resamples (systematically), moves every particle with ``num_mcmc_steps``
    HMC steps that leave ``π_λ`` invariant, and reweights the moved particles by those increments.
    BlackJAX solves for ``λ'`` on the particles before resampling as if they were equally weighted,
    so the ESS reached after the move is above the target (0.82-0.85 m in the tests for a target of
    0.5) and it takes a few more stages than the target suggests; the weights stay exact.

    The start is the prior restricted to the likelihood's support, ``p(θ) 1{p(x|θ) > 0}``: prior
    draws where ``log p(x_{1:N}|θ)`` is ``-∞`` (an ARMA model's non-invertible coefficients, say)
    are redrawn, up to ``MAX_START_ROUNDS`` rounds of ``m`` draws. It is the path's limit
    ``λ → 0⁺``, so every later stage targets the same ``π_λ``; BlackJAX started at the prior itself
    weights such a draw by ``exp((λ' - λ) · -∞)`` with ``λ' - λ = 0`` while it solves for ``λ'``,
    ``0 · ∞ = NaN``, and every weight is NaN from the first stage on (posteriordb's arma: 549 of
    1,000 prior draws). The start's ``m·N`` evaluations per round are reported with the first
    stage's work. A stage whose weights still go non-finite is recorded (``diverged_at``) and
    ``posterior`` raises ``FloatingPointError`` naming it: NaN weights are not a posterior.

    One ``step`` is one stage; it reads all ``N`` data points again and again (two weighings, each
    leapfrog step), so the data set is passed as ``data=``, the runner's mini-batch is only
    checked, and ``info["visited"]`` is the rows the stage read (:func:`rows_read`). Once
    ``λ = 1`` further steps change nothing and report ``visited = 0``. The posterior is the
    weighted particles (BlackJAX keeps normalised linear weights; they are logged here).

    Work of a stage (:func:`pmd.interface.work`): the bisection for ``λ'`` evaluates the
    log-likelihood of all ``N`` rows at the ``m`` particles once (``ess_solver``), the new weights
    evaluate it again at the moved particles, and the move takes ``N·(m + Σ L)`` gradients (module
    docstring): ``grad_evals = N·(m + Σ L)``, ``evals = 2·N·m + grad_evals`` (plus the start's on
    the first stage); 0 once ``λ = 1``.

    Args:
        model, data_size, num_particles: as for :class:`pmd.PMD` (``m`` particles).
        data: the whole data set.
        target_ess: the ESS fraction each stage keeps (default 0.5, the usual choice).
        num_mcmc_steps: HMC steps per particle per stage (default 10). Enough that a move forgets
            its starting point: resampling duplicates particles and only the moves separate them.
        trajectory_length: the HMC trajectory in whitened units (default ``π/2``, module docstring).
    """

    method_family = "sequential Monte Carlo"
    reference = "BlackJAX `blackjax.adaptive_tempered_smc` (Del Moral, Doucet & Jasra, JRSS B 2006; Jasra et al. 2011)"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        data: Any = None,
        target_ess: float = 0.5,
        num_mcmc_steps: int = 10,
        trajectory_length: float = math.pi / 2,
    ):
        super().__init__(model, data_size, num_particles, data, num_mcmc_steps, trajectory_length)
        self.target_ess = require_fraction("target_ess", target_ess)
        if not 0 < self.target_ess < 1:
            raise ConfigError(f"target_ess must lie strictly between 0 and 1, got {target_ess!r}")
        self._step = jax.jit(self._step_impl)

    def log_likelihood(self, theta: Array, data: Any = None) -> Array:
        """``Σ_n log p(x_n|θ)`` over the whole data set (``data``; default: the one given at construction)."""
        data = self.data if data is None else data
        return jnp.sum(jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, data))

    def init(self, key: Array) -> TemperingState:
        """``m`` draws of the prior restricted to the likelihood's support, equally weighted, at
        ``λ = 0`` (class docstring)."""
        particles, rounds = self._support_draws(key)
        sampler = adaptive_tempered.init(particles)._replace(tempering_param=jnp.zeros((), particles.dtype))
        evals = rounds.astype(particles.dtype) * self.num_particles * self.data_size
        return TemperingState(sampler, self._initial_step_size(particles.dtype), evals, jnp.asarray(0, jnp.int32),
                              jnp.asarray(-1, jnp.int32))

    def _support_draws(self, key: Array) -> tuple[Array, Array]:
        """Rounds of ``m`` prior draws, each draw with a finite full-data log-likelihood filling the
        next empty slot, until all ``m`` are filled or ``MAX_START_ROUNDS`` rounds have run (the
        slots left then keep their last draws); returns the draws and the rounds run."""
        m = self.num_particles

        def draw(k):
            theta = self.model.sample_prior(k, m)
            return theta, jnp.isfinite(jax.vmap(self.log_likelihood)(theta))

        def body(carry):
            k, particles, filled, rounds = carry
            k, k_draw = jax.random.split(k)
            theta, ok = draw(k_draw)
            # the j-th valid draw of this round goes to the j-th empty slot
            slot = jnp.cumsum(~filled) - 1  # index among the empty slots
            rank = jnp.cumsum(ok) - 1  # index among the valid draws
            source = jnp.searchsorted(rank, slot, side="left")  # first valid draw of that rank
            take = ~filled & (slot < jnp.sum(ok))
            chosen = theta[jnp.clip(source, 0, m - 1)]
            return k, jnp.where(take[:, None], chosen, particles), filled | take, rounds + 1

        k0, k_rest = jax.random.split(key)
        theta, ok = draw(k0)
        carry = (k_rest, theta, ok, jnp.asarray(1, jnp.int32))
        _, particles, _, rounds = jax.lax.while_loop(
            lambda c: ~jnp.all(c[2]) & (c[3] < MAX_START_ROUNDS), body, carry)
        return particles, rounds

    def posterior(self, state: TemperingState) -> ParticlePosterior:
        """The weighted particles; ``FloatingPointError`` naming the stage if the weights went
        non-finite (class docstring)."""
        stage = first_diverged(state.diverged_at)
        if stage is not None:
            raise FloatingPointError(
                f"BlackJAX's adaptive tempered SMC diverged: its weights went non-finite at stage {stage} (a "
                "particle whose log-likelihood is -inf or NaN, or an HMC move that left the support)")
        return ParticlePosterior(state.sampler.particles, jnp.log(state.sampler.weights))

    def _stage(self, key: Array, state: TemperingState, data: Any) -> tuple[TemperingState, dict]:
        k_params, k_stage = jax.random.split(key)
        sampler = state.sampler
        params = self._move_parameters(k_params, sampler.particles, jnp.log(sampler.weights), state.step_size)
        kernel = adaptive_tempered.build_kernel(self.model.log_prior, lambda theta: self.log_likelihood(theta, data),
                                                self._hmc, blackjax.hmc.init, resampling.systematic, self.target_ess)
        sampler, info = kernel(k_stage, sampler, self.num_mcmc_steps, params)
        step_size, acceptance = self._adapt(state.step_size, info.update_info)
        grads = self._move_work(info.update_info)
        stages = state.stages + 1
        diverged_at = first_nonfinite(state.diverged_at, stages, sampler.weights)
        evals = state.start_evals + 2.0 * self.data_size * self.num_particles + grads
        return TemperingState(sampler, step_size, jnp.zeros_like(state.start_evals), stages, diverged_at), {
            "visited": rows_read(evals, self.num_particles),
            "temperature": sampler.tempering_param,
            "acceptance": acceptance,
            "ess": effective_sample_size(jnp.log(sampler.weights)),
            **work(evals, grads),
        }

    def _finished(self, key: Array, state: TemperingState) -> tuple[TemperingState, dict]:
        dtype = state.step_size.dtype
        return state, {
            "visited": jnp.asarray(0, jnp.int32),
            "temperature": state.sampler.tempering_param,
            "acceptance": jnp.asarray(jnp.nan, dtype),
            "ess": effective_sample_size(jnp.log(state.sampler.weights)),
            **work(0),
        }

    def _step_impl(self, key: Array, state: TemperingState, batch: Any, data: Any) -> tuple[TemperingState, dict]:
        """One tempering stage (a no-op once ``λ = 1``)."""
        return jax.lax.cond(state.sampler.tempering_param < 1.0, lambda k, s: self._stage(k, s, data), self._finished,
                            key, state)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class DataTemperingState:
    """Particles, their normalised log-weights, the order in which data points join the target,
    how many have joined, and the HMC step size in whitened units."""

    particles: Array  # (m, d)
    log_weights: Array  # (m,)
    order: Array  # (N,) int32, a permutation of the rows
    seen: Array  # int32
    step_size: Array


class DataTemperedSMC(_HMCMoves):
    """Data-tempered SMC over partial posteriors (Chopin 2002, "IBIS"), with BlackJAX's
    partial-posteriors path (``blackjax.partial_posteriors_smc``) for the resample-move, and a
    batch tempered in stages where it would leave too few particles.

    The path is ``π_t(θ) ∝ p(θ) Π_{n ∈ S_t} p(x_n|θ)`` with ``S_t`` the data points seen after
    ``t`` steps, kept as a ``data_mask`` over the whole data set. Step ``t``:

    1. takes the next ``B`` rows (``B`` the batch size) of a fixed random order of the rows, drawn
       at ``init``. The runner's batch is only checked and sized: the path's mask is over the
       method's own copy of the data, and a fixed order makes every datum join exactly once, as
       the runner's pass would; the rows the runner drew are not the ones added;
    2. brings in their log-likelihood ``ℓ_i = Σ_{new n} log p(x_n|θ_i)`` in stages, along
       ``π_{t-1}(θ) exp(φ ℓ(θ))`` from ``φ = 0`` to ``φ = 1`` (likelihood tempering within a data
       batch; Del Moral, Doucet & Jasra 2006, sec. 3.3.2, on the data path of Chopin 2002). A
       stage adds the largest ``Δφ`` up to the rest of the batch that keeps the conditional ESS of
       the increments ``Δφ·ℓ_i`` at ``threshold`` (:func:`pmd.weights.cap_step_size`; Zhou,
       Johansen & Aston 2016 for the conditional ESS; the adaptive exponent of Jasra et al. 2011).
       A stage that stops short of ``φ = 1`` then resamples (systematically) and moves every
       particle with ``num_mcmc_steps`` HMC steps that leave its target, ``π_{t-1}`` times the
       batch at ``φ``, invariant, and ``ℓ`` is evaluated again at the moved particles. A batch
       whose whole likelihood keeps the ESS takes one stage and no move, as in IBIS;
    3. after the last stage (``φ = 1``, the target ``π_t``), resamples and moves if the ESS is
       below ``threshold · m``, as IBIS does: a stage's conditional ESS can keep ``threshold``
       while the ESS of weights that were not uniform falls below it. The last stage is the one
       whose rest of the batch keeps the conditional ESS, the ``MAX_BATCH_STAGES``-th, or one for
       which the bisection finds no positive ``Δφ`` that keeps it; the last two take the rest of
       the batch at once.

    A particle where the batch's log-likelihood is ``-∞`` or NaN (an ARMA model's non-invertible
    coefficients, say) leaves the cloud at the stage's start: its weight under
    ``π_{t-1} exp(Δφ ℓ)`` is 0 for every ``Δφ > 0``, the path's limit ``Δφ → 0⁺`` is
    ``π_{t-1}`` restricted to the batch's support, and the exponent is chosen on the particles
    left (the conditional ESS counts only those). Without this, no positive ``Δφ`` kept the
    conditional ESS when more than ``1 - threshold`` of the particles fell outside (posteriordb's
    arma: 549 of 1,000 prior draws), and the whole batch came in at once, leaving one particle.

    Why stages. Without them a first batch that the prior draws explain badly leaves one particle
    (posteriordb's diamonds, 26 coefficients: ESS 1.00 of 1,000 after the first 50 rows), its
    weighted covariance, the HMC's mass matrix, is then degenerate, the moves cannot separate the
    copies, and the run ends thousands of posterior sds off with nothing to show it. With stages
    every move starts from a cloud of ``threshold · m`` effective particles at least.

    The moves target the posterior of ALL data seen so far (and the batch at its exponent), which
    is why the method takes ``data=``. One pass: once all ``N`` rows have joined, steps change
    nothing and report ``info["visited"] = 0``, as :class:`baselines.OnePassSMC` does; until then a
    step's ``visited`` is the rows its batch and its stages' moves read (:func:`rows_read`). The
    posterior is the weighted particles. ``info``: ``ess`` the ESS the batch's whole likelihood
    would leave on the cloud it arrived at (the IBIS criterion), ``moves`` the stage moves,
    ``resampled`` whether there was one, ``acceptance`` their mean acceptance rate.

    Why not ``blackjax.partial_posteriors_smc``'s step as it stands: given a new mask it resamples,
    moves with a kernel invariant for the NEW partial posterior ``π_t`` and then weights the moved
    particles by ``π_t / π_{t-1}``. Those are not importance weights for what the particles then
    follow (they would be if the move left ``π_{t-1}`` invariant, or if the weight were taken
    before the move; Del Moral et al. 2006, sec. 3.3.2): after a well-mixing move the particles
    target ``π_t² / π_{t-1}``, the last batch counted twice (measured on the 2-d conjugate
    Gaussian, N = 100, B = 10: posterior variances 0.91-0.93 of the exact ones, as predicted by
    ``P_t / (P_t + B/σ²) = 0.91``). Its step also resamples at every step, with no ESS threshold,
    and forms the increment as a difference of two full-data log posteriors, which loses float32
    precision when ``N`` is large. So the weights are done here (the increment summed over the new
    rows only, in log space) and the path's step is called for the resample-move only, with the
    mask already at the stage's target (the same mask before and after: a resample-move under that
    target with weight 1). The mask holds each row's exponent: 1 for the rows seen, ``φ`` for the
    batch's, 0 for the rest.

    Work of a step (:func:`pmd.interface.work`): the new rows' log-likelihood at every particle,
    ``m·B`` (all ``B`` rows of a straddling batch), once and again after each move; each move adds
    its ``N·(m + Σ L)`` gradients (module docstring) and the path's weights (the stage's target
    over itself), two full-data log posteriors at the ``m`` moved particles, ``2·N·m``
    evaluations as the code asks for them (the same mask twice: XLA may merge the two). A step
    after the pass is skipped (``lax.cond``) and evaluates nothing. (Under
    :func:`pmd.runner.run_batched`'s ``vmap`` a ``cond`` runs both branches and the stages run
    until every run's batch is in; the counts are those of the algorithm.)

    Args:
        model, data_size, num_particles: as for :class:`pmd.PMD` (``m`` particles).
        data: the whole data set.
        threshold: the ESS fraction a batch's stage keeps, and below which the cloud is resampled
            and moved (default 0.5, as :class:`baselines.OnePassSMC`).
        num_mcmc_steps, trajectory_length: the HMC move, as for :class:`TemperedSMC`.
    """

    method_family = "sequential Monte Carlo"
    reference = "BlackJAX `blackjax.partial_posteriors_smc` (Chopin, Biometrika 2002)"

    def __init__(
        self,
        model,
        data_size: int,
        num_particles: int,
        data: Any = None,
        threshold: float = 0.5,
        num_mcmc_steps: int = 10,
        trajectory_length: float = math.pi / 2,
    ):
        super().__init__(model, data_size, num_particles, data, num_mcmc_steps, trajectory_length)
        self.threshold = require_fraction("threshold", threshold)
        self._step = jax.jit(self._step_impl)

    def partial_log_posterior(self, data_mask: Array, data: Any = None):
        """BlackJAX's ``partial_logposterior_factory`` with each row's exponent in the mask:
        ``θ -> log p(θ) + Σ_{n: mask_n > 0} mask_n log p(x_n|θ)`` over ``data`` (default: the data
        set given at construction). Rows with exponent 0 are left out, not multiplied (``0·-∞``)."""
        data = self.data if data is None else data

        def log_posterior(theta: Array) -> Array:
            loglik = jax.vmap(self.model.log_likelihood, in_axes=(None, 0))(theta, data)
            return self.model.log_prior(theta) + jnp.sum(jnp.where(data_mask > 0, data_mask * loglik, 0.0))

        return log_posterior

    def init(self, key: Array) -> DataTemperingState:
        """``m`` prior draws with equal weights, no data seen, and the order the rows will join."""
        k_prior, k_order = jax.random.split(key)
        m = self.num_particles
        particles = self.model.sample_prior(k_prior, m)
        order = jax.random.permutation(k_order, self.data_size).astype(jnp.int32)
        return DataTemperingState(particles, jnp.full((m,), -jnp.log(m), particles.dtype), order,
                                  jnp.asarray(0, jnp.int32), self._initial_step_size(particles.dtype))

    def posterior(self, state: DataTemperingState) -> ParticlePosterior:
        """The weighted particles."""
        return ParticlePosterior(state.particles, state.log_weights)

    def data_mask(self, order: Array, seen: Array, joining: Any = 0, exponent: Any = 1.0) -> Array:
        """The path's mask: 1 for the first ``seen`` rows of ``order``, ``exponent`` for the
        ``joining`` rows after them (a batch part way in), 0 elsewhere."""
        rank = jnp.arange(self.data_size)
        exponent = jnp.asarray(exponent)
        value = jnp.where(rank < seen, 1.0, jnp.where(rank < seen + joining, exponent, 0.0)).astype(exponent.dtype)
        return jnp.zeros((self.data_size,), exponent.dtype).at[order].set(value)

    def _resample_move(self, key: Array, particles: Array, log_weights: Array, mask: Array, step_size: Array,
                       data: Any):
        k_params, k_move = jax.random.split(key)
        params = self._move_parameters(k_params, particles, log_weights, step_size)
        kernel = partial_posteriors_path.build_kernel(
            self._hmc, blackjax.hmc.init, resampling.systematic, self.num_mcmc_steps, params,
            lambda data_mask: self.partial_log_posterior(data_mask, data),
        )
        sampler = partial_posteriors_path.PartialPosteriorsSMCState(particles, jnp.exp(log_weights), mask)
        sampler, info = kernel(k_move, sampler, mask)
        step_size, acceptance = self._adapt(step_size, info.update_info)
        return (sampler.particles, normalize(jnp.log(sampler.weights)), step_size, acceptance,
                self._move_work(info.update_info))

    def _step_impl(self, key: Array, state: DataTemperingState, batch: Any,
                   data: Any) -> tuple[DataTemperingState, dict]:
        """Bring in the next ``B`` rows of ``order`` in stages (class docstring); once every row
        has joined, skip the step (``lax.cond``)."""
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        fresh = jnp.clip(self.data_size - state.seen, 0, size)
        return jax.lax.cond(fresh > 0, lambda: self._read(key, state, fresh, size, data),
                            lambda: self._after_pass(state, fresh))

    def _read(self, key: Array, state: DataTemperingState, fresh: Array, size: int,
              data: Any) -> tuple[DataTemperingState, dict]:
        slots = jnp.arange(size)
        rows = state.order[jnp.minimum(state.seen + slots, self.data_size - 1)]
        new_data = jax.tree_util.tree_map(lambda a: a[rows], data)

        def batch_loglik(particles: Array) -> Array:  # ℓ_i, the fresh rows' log-likelihood at each particle
            return jnp.sum(jnp.where(slots < fresh, self.model.batch_log_likelihood(particles, new_data), 0.0), axis=1)

        loglik = batch_loglik(state.particles)
        dtype = state.log_weights.dtype
        floor = self.threshold * self.num_particles
        zero = jnp.asarray(0.0, jnp.float32)

        def stage(carry):
            k, particles, log_w, loglik, phi, step_size, stages, moves, accepted, evals, grads = carry
            rest = 1.0 - phi
            inside = jnp.isfinite(loglik)
            log_w = normalize(jnp.where(inside, log_w, -jnp.inf))  # the limit Δφ → 0⁺
            delta = cap_step_size(log_w, loglik, rest, self.threshold)
            # the last allowed stage, or one no positive exponent fits, takes the rest
            delta = jnp.where((delta > 0) & (stages < MAX_BATCH_STAGES - 1), delta, rest)
            short = delta < rest
            phi = jnp.where(short, phi + delta, 1.0)
            log_w = normalize(jnp.where(inside, log_w + delta * loglik, -jnp.inf))  # no -∞ + NaN
            k, k_move = jax.random.split(k)

            def move():
                mask = self.data_mask(state.order, state.seen, fresh, phi)
                moved, w, adapted, acc, g = self._resample_move(k_move, particles, log_w, mask, step_size, data)
                return moved, w, batch_loglik(moved), adapted, acc, g

            def stay():
                return particles, log_w, loglik, step_size, jnp.asarray(jnp.nan, dtype), zero

            moving = short | (effective_sample_size(log_w) < floor)
            particles, log_w, loglik, step_size, acc, g = jax.lax.cond(moving, move, stay)
            moved = moving.astype(jnp.float32)
            evals = evals + moved * (2.0 * self.data_size * self.num_particles + loglik.shape[0] * size) + g
            return (k, particles, log_w, loglik, phi, step_size, stages + 1, moves + moving.astype(jnp.int32),
                    accepted + jnp.where(moving, acc, 0.0), evals, grads + g)

        carry = (key, state.particles, state.log_weights, loglik, jnp.asarray(0.0, dtype), state.step_size,
                 jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32), jnp.asarray(0.0, dtype),
                 jnp.asarray(loglik.shape[0] * size, jnp.float32), zero)
        _, particles, log_w, _, _, step_size, _, moves, accepted, evals, grads = jax.lax.while_loop(
            lambda c: c[4] < 1.0, stage, carry)
        new = DataTemperingState(particles, log_w, state.order, state.seen + fresh, step_size)
        info = {"visited": rows_read(evals, self.num_particles), "ess": effective_sample_size(state.log_weights + loglik),
                "moves": moves, "resampled": moves > 0,
                "acceptance": jnp.where(moves > 0, accepted / jnp.maximum(moves, 1), jnp.nan),
                **work(evals, grads)}
        return new, info

    def _after_pass(self, state: DataTemperingState, fresh: Array) -> tuple[DataTemperingState, dict]:
        dtype = state.log_weights.dtype
        info = {"visited": fresh, "ess": effective_sample_size(state.log_weights), "moves": jnp.asarray(0, jnp.int32),
                "resampled": jnp.asarray(False), "acceptance": jnp.asarray(jnp.nan, dtype)}
        return state, {**info, **work(0)}

"""Particle Mirror Descent (Algorithm 1 of Dai, He, Dai & Song, AISTATS 2016).

Stochastic mirror descent in density space: each step solves the prox-mapping (eq. 2)
``q_{t+1} ∝ q_t^{1-γ_t} p^{γ_t} p(x_t|θ)^{Nγ_t}`` inexactly with weighted particles. Every update
is one formula over a particle set with a *base* log-density ratio ``b_i = log p(θ_i) - log π(θ_i)``
for the density ``π`` the particles were drawn from: ``log α ← log α + γ (b + N ℓ̄ - log α)``.
Prior particles have ``b = 0`` (eq. 5); fresh draws from the KDE ``q̃_t`` have ``log α = 0`` and
``b = log p - log q̃_t`` (eq. 7); particles kept after a draw keep their ``b`` (section 3.3's hybrid).
Mini-batches (Remark 2 of Theorem 2) use ``N · mean_b log p(x_b|θ)``. Strategies: ``"particles"``
never redraws, ``"kde"`` redraws at every step, ``"hybrid"`` redraws when the ESS falls below
``redraw_below`` of the particles.

Two variants share that update (``variant``):

``"robust"`` — the default, the most accurate PMD we could justify (measured in the README):

* **Streaming start.** With ``γ_t = 1/t`` the iterate after ``t`` steps is
  ``p · exp(N/t Σ_{s≤t} ℓ̄_s)``: the first batches' likelihood raised to the power ``N/(tB)``, a
  posterior far narrower than the true one, centred wherever those few points put it. Particles
  cannot follow such a target (the ESS cap of the paper variant makes the clock crawl instead,
  and each redraw in that phase moves mode masses at random). At the end of the first pass the
  same iterate is ``p · Π_n p(x_n|θ)``, the posterior, which is also where Bayes' rule applied
  batch by batch ends. So during the first ``N`` data points the robust variant multiplies the
  iterate by each batch's likelihood (``log α ← log α + Σ_b log p(x_b|θ)``: the partial
  posteriors of one-pass SMC, never narrower than the posterior), and from there on it takes
  the mirror-descent steps of eq. (2) with ``γ_t`` from the schedule's clock ``t = V/B`` for ``V``
  rows visited (for ``γ_t = 1/t``: ``γ = B / V``, Theorem 5's iterate, exactly: the average of
  the passes' log-likelihoods).
* **Exact pass ends.** A batch that straddles a pass end (``B`` not dividing ``N``: the runner's
  batches run on into the next pass's permutation) is taken row by row in segments, the rows up to
  the pass end and those after it (a per-row mask on the batch's log-likelihoods): the first
  pass's rows are streamed, later ones a prox step of ``γ = (r/B) γ_{V/B}`` for their ``r`` rows
  (``r/V`` for ``γ_t = 1/t``), so after every whole pass the iterate is the posterior and the
  pass-end moves run there, for any ``N`` and ``B``. Measured on the conjugate model (N = 210,
  B = 20): the mean is within the Monte Carlo error (0.01-0.02 sd) of Theorem 5's iterate after 1, 2
  and 5 passes, where spreading a straddling batch's first-pass rows' weight over the whole batch
  left it 0.35, 0.19 and 0.07 posterior sd off.
* **Sub-stepped ESS cap.** Theorem 6 caps ``γ_t`` by ``Δ/M``; its practical form keeps the
  conditional ESS of every reweighting above ``ess_floor``. Instead of shrinking the step (which
  re-weights batches unevenly and leaves a tempered iterate), a step that would break the floor
  is taken in sub-steps on the same batch with a redraw between them: two prox steps ``γ_1, γ_2``
  on the same ``g_t`` compose to one of ``1 - (1-γ_1)(1-γ_2)``, and likelihood increments add,
  so the step reaches exactly the iterate it was scheduled to reach (adaptive tempering within
  a step, Jasra et al. 2011). At most ``max_substeps`` sub-steps; ``info["uncapped"]`` reports
  a step that needed more and took its remainder uncapped.
* **A kernel that keeps the iterate's moments and modes** (:mod:`pmd.local_kernel`): redraws come
  from a per-cluster Liu-West kernel (weighted k-means, each cluster's centres shrunk towards its
  mean so that its KDE has the cluster's mean and covariance): no inflation by ``H`` at each
  redraw, and no kernel as wide as the distance between two modes.
* The posterior is the weighted particles (eq. 4).
* Known limit (measured, docs/findings.md "At paper scale"): each reweight-and-redraw cycle of the
  streaming start loses spread of order ``d/m`` and the losses compound with the number of
  cycles, so a first pass of thousands of steps in tens of dimensions (1.6M rows, d = 51) leaves
  a cloud too narrow to follow the partial posteriors, stuck far from the posterior (off within
  the first hundred steps: ``benchmarks/trace_logistic_first_pass.py``).
* **Moves on the iterate's own target** (:mod:`pmd.rejuvenation`), on by default whenever PMD is
  given the data (``data=``; the workflow always gives it): after steps 2, 4, 8, ... of the first
  pass the cloud is resampled and moved by 5 MALA steps on the partial posterior of exactly the
  rows seen (Chopin's IBIS; ``step`` then needs ``rows=``, the batch's row indices, which
  :func:`pmd.run` passes), and at the end of passes 1, 2, 4, ... on the posterior itself, scaled
  by the target's Laplace covariance (minus its inverse Hessian at the cloud's mean; along a
  direction where that Hessian does not curve downwards, as between two modes, the cloud's variance
  along it). Each round then ends
  with 2 sweeps of an independence sampler whose proposal is the KDE iterate of the other half of
  the particles, so that particles cross between modes and a mode's mass converges to the
  target's instead of keeping the one the first pass's weights gave it
  (``{**DEFAULT_MOVES, "independence": 0}`` leaves them out). Only there is the
  iterate known, so only there does a kernel that keeps the target invariant keep the iterate
  invariant. The remedy for the limit above; the rows each move reads are counted in
  ``info["visited"]`` (``O(log N)`` reads of the rows seen in the first pass, ``O(log passes)``
  full reads after it). ``rejuvenate=None`` is the streaming update alone (the only choice
  without the data; the ``pmd_stream`` rows of the workflow), ``rejuvenate={...}`` another
  schedule. What the moves buy, measured (README, docs/findings.md, 2026-11-25): at paper scale
  (1.6M rows, d = 51) the mean error falls from tens of reference sd to below 0.1; on the
  posteriordb suite from 4 of 7 i.i.d. posteriors within the suite's goal (0.5 reference sd
  of the mean, 0.3 of the log sd) to 7 of 7 (12 of 12
  solved); the conjugate model's variance shortfall goes; on the mixture at the paper's settings
  both are at the exact-draw floor (level within the seeds' spread).

``"paper"`` — Algorithm 1 as published, kept for the reproduction of the paper's figures:

* Default step size ``γ_t = 1/t`` from the first step.
* Every resampling (KDE) step is capped by the conditional ESS (``ess_floor``, default 0.5). A
  capped step advances the schedule's clock only by ``γ_used/γ_scheduled``, so capping delays the
  schedule instead of spending it. ``info["exponent"]`` is the likelihood weight
  ``λ_t = 1 - Π(1-γ_s)`` (1: the full likelihood). Weighted-particle steps are not capped unless
  ``particle_ess_floor`` is set (default 0.5 for ``"hybrid"``).
* ``"hybrid"``: ``kde_steps`` KDE steps, then the last draw is frozen and weighted-particle steps
  follow, redrawn from the KDE whenever the ESS falls below ``redraw_below``.
* The ``m_t`` locations of a KDE step are drawn with stratified component indices (each is still
  marginally a draw from ``q̃_t``, as eq. 6 requires).
* The kernel is a global rule of :mod:`pmd.bandwidth` (default Silverman's at half scale); the
  posterior is the weighted KDE (eq. 6) while KDE steps run, else the weighted particles.
* The growing particle schedule ``m_t`` applies to the KDE draws; a buffer of ``num_particles``
  slots holds them and unused slots carry ``-inf`` log-weight, so shapes stay static under ``jit``.

What each choice buys is measured in ``tests/test_pmd_*.py`` and the README.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import jax
import jax.numpy as jnp

from .bandwidth import bandwidth_rule
from .interface import ConfigError, require_fraction, require_positive_int, step_data, work
from .kde import Kernel, density_pairs, kernel_log_density, kernel_sample
from .local_kernel import LocalShrinkage
from .model import Model
from .posterior import KDEPosterior, ParticlePosterior
from .rejuvenation import DEFAULT_MOVES, LogTarget, MALAMoves, initial_step_size
from .schedules import particle_count, step_size
from .weights import cap_step_size, effective_sample_size, normalize

Array = jax.Array
STRATEGIES = ("particles", "kde", "hybrid")
VARIANTS = ("robust", "paper")
DEFAULT_BANDWIDTH = {"robust": {"kind": "local", "clusters": 4, "scale": 1.0},
                     "paper": {"kind": "silverman", "scale": 0.5}}
# The paper variant as the reproduction runs it (section 3.3's hybrid; workflow configs' pmd_paper).
PAPER = {"variant": "paper", "strategy": "hybrid", "kde_steps": 1, "redraw_below": 0.5,
         "particle_ess_floor": 0.5}


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class PMDState:
    """Particles, their log-weights and base ratios, the kernel, the step count and clocks."""

    positions: Array  # (M, d)
    log_weights: Array  # (M,), normalised; -inf for unused slots
    base: Array  # (M,), log p(θ) - log π(θ) for the density π the particles came from
    kernel: Kernel  # the kernel of the last redraw's KDE
    step: Array  # int32, number of steps taken
    clock: Array  # the step-size schedule's iteration (paper: advances by γ_used / γ_scheduled)
    exponent: Array  # λ_t: q̃_t ∝ p · exp(N Σ_s w_s ℓ̄_s) with Σ_s w_s = λ_t (1 = no tempering left)
    from_prior: Array  # bool: the current q̃ is the prior itself (before the first KDE step)
    seen: Array  # robust: int32, rows visited over all passes (the streaming start runs while below N)
    order: Array  # rejuvenate with first_pass: the first pass's row indices in the order seen, else (0,)
    mala_step: Array  # robust with moves: the MALA step size ε of the next round (adapted between rounds)


class PMD:
    """Particle Mirror Descent with the interface shared by every method (see ``pmd.interface``).

    Args:
        model: the :class:`pmd.Model`.
        data_size: ``N``, the number of data points (the likelihood is raised to ``Nγ``).
        num_particles: ``m``, the particles held (the final ``m_t`` of a growing schedule).
        variant: ``"robust"`` (default) or ``"paper"`` (module docstring).
        strategy: ``"particles"`` | ``"kde"`` | ``"hybrid"`` (default).
        step_size: a number, ``{"kind": "harmonic" | "sqrt" | "constant" | "theorem6", ...}`` or a
            callable ``t -> γ_t`` (default ``γ_t = 1/t``).
        bandwidth: the redraw kernel: ``{"kind": "local", "clusters": K, "scale": c}``
            (:class:`pmd.local_kernel.LocalShrinkage`, the robust default) or a rule of
            :func:`pmd.bandwidth.bandwidth_rule` (the paper's default: Silverman at half scale).
        particle_schedule: None (constant ``m``) or ``{"kind": "power", "initial": m_1, ...}``
            (paper variant).
        ess_floor: conditional-ESS fraction every reweighting keeps (robust: every sub-step; paper:
            every KDE step; 0 switches the cap off).
        particle_ess_floor: paper variant: the same for weighted-particle steps (default: 0.5 for
            ``"hybrid"``, 0 for ``"particles"``).
        kde_steps: paper ``"hybrid"``: how many KDE steps before the particles are frozen.
        redraw_below: ``"hybrid"``: redraw from the KDE when the ESS falls below this fraction of
            the particles (default 0.5; 0 never redraws after the paper variant's KDE steps).
        max_substeps: robust variant: the most sub-steps (each possibly with a redraw) one step takes.
        rejuvenate: robust variant: ``"auto"`` (default: ``pmd.rejuvenation.DEFAULT_MOVES`` when
            ``data`` is given, else none), None (no moves), or ``{"kind": "mala", "steps": k}``:
            MALA moves on the full-data posterior at the end of every pass, or of passes 1, 2, 4, ...
            with ``"at": "doubling"``; ``"first_pass": true`` adds moves on the partial posteriors of
            the first pass, ``"precondition": "hessian"`` the Laplace preconditioner
            (:mod:`pmd.rejuvenation`).
        data: the data set the runner's batches are rows of; the moves read it.
    """

    method_family = "particle mirror descent"
    reference = "Dai, He, Dai & Song, AISTATS 2016, Algorithm 1"

    def __init__(
        self,
        model: Model,
        data_size: int,
        num_particles: int,
        variant: str = "robust",
        strategy: str = "hybrid",
        step_size: Any = None,
        bandwidth: Any = None,
        particle_schedule: Any = None,
        ess_floor: float = 0.5,
        particle_ess_floor: float | None = None,
        kde_steps: int = 1,
        redraw_below: float = 0.5,
        max_substeps: int = 64,
        rejuvenate: Any = "auto",
        data: Any = None,
    ):
        if not isinstance(model, Model):
            raise ConfigError(f"model must be a pmd.Model, got {type(model).__name__}")
        if variant not in VARIANTS:
            raise ConfigError(f"unknown variant {variant!r}; expected one of {', '.join(VARIANTS)}")
        if strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {strategy!r}; expected one of {', '.join(STRATEGIES)}")
        self.model = model
        self.variant = variant
        self.data_size = require_positive_int("data_size", data_size)
        self.num_particles = require_positive_int("num_particles", num_particles)
        self.strategy = strategy
        self.ess_floor = require_fraction("ess_floor", ess_floor, high=0.999)
        if particle_ess_floor is None:
            particle_ess_floor = 0.5 if strategy == "hybrid" else 0.0
        self.particle_ess_floor = require_fraction("particle_ess_floor", particle_ess_floor, high=0.999)
        self.kde_steps = require_positive_int("kde_steps", kde_steps)
        self.redraw_below = require_fraction("redraw_below", redraw_below)
        self.max_substeps = require_positive_int("max_substeps", max_substeps)
        if strategy == "particles" and particle_schedule is not None:
            raise ConfigError("particle_schedule applies to KDE draws; strategy='particles' keeps "
                              "num_particles fixed prior particles")
        if variant == "robust" and particle_schedule is not None:
            raise ConfigError("particle_schedule is a paper-variant option (variant='paper')")
        try:
            self.particles = particle_count(particle_schedule, self.num_particles)
            self.gamma = step_size_or_default(step_size, self.particles, model.dim)
            self.bandwidth = kernel_rule(DEFAULT_BANDWIDTH[variant] if bandwidth is None else bandwidth)
        except ValueError as err:
            raise ConfigError(str(err)) from err
        if variant == "paper" and isinstance(self.bandwidth, LocalShrinkage) and strategy != "particles":
            raise ConfigError("the local kernel keeps no density for the paper variant's KDE posterior: "
                              "use variant='robust' or a rule of pmd.bandwidth")
        self.moves, self.data = None, None
        if isinstance(rejuvenate, str) and rejuvenate == "auto":
            rejuvenate = DEFAULT_MOVES if variant == "robust" and data is not None else None
        if rejuvenate is not None:
            if variant != "robust":
                raise ConfigError("rejuvenate is an option of variant='robust'")
            if data is None:
                raise ConfigError("rejuvenate needs data=: the moves evaluate the full-data posterior")
            try:
                self.moves = MALAMoves.from_spec(rejuvenate)
            except (TypeError, ValueError) as err:
                raise ConfigError(str(err)) from err
            rows = {jnp.shape(x)[0] for x in jax.tree_util.tree_leaves(data)}
            if rows != {self.data_size}:
                raise ConfigError(f"rejuvenate: data has {sorted(rows)} rows, data_size is {self.data_size}")
            self.data = jax.tree_util.tree_map(jnp.asarray, data)
        self._step = jax.jit(self._robust_step if variant == "robust" else self._paper_step)
        self._init = jax.jit(self._initial_state)  # op by op, the kernel's fit takes seconds to dispatch

    # -- the interface -------------------------------------------------------------------------
    def init(self, key: Array) -> PMDState:
        """``q̃_1 = p`` (Algorithm 1, line 3): ``m`` prior draws, equally weighted. The robust variant
        draws from the prior and fits its first kernel at its first redraw, so its initial state
        holds the whole cloud's one-cluster kernel, reported (``info["bandwidth"]``) until then and
        never drawn from: the per-mode fit's k-means would add 1-2 s of compilation on a 2-core CPU
        to every new object (docs/findings.md, 2026-11-27)."""
        return self._init(key)

    def _initial_state(self, key: Array) -> PMDState:
        m = self.num_particles
        k_prior, k_kernel = jax.random.split(key)
        positions = self.model.sample_prior(k_prior, m)
        active = m if self.strategy == "particles" or self.variant == "robust" else self.particles(1)
        log_w = normalize(jnp.where(jnp.arange(m) < active, 0.0, -jnp.inf).astype(positions.dtype))
        zero = jnp.asarray(0.0, positions.dtype)
        return PMDState(
            positions=positions,
            log_weights=log_w,
            base=jnp.zeros((m,), positions.dtype),
            kernel=self._kernel(k_kernel, positions, log_w, 1.0, cluster=self.variant != "robust"),
            step=jnp.asarray(0, jnp.int32),
            clock=zero,
            exponent=zero,
            from_prior=jnp.asarray(True),
            seen=jnp.asarray(0, jnp.int32),
            order=jnp.zeros((self.data_size if self._tracks_rows else 0,), jnp.int32),
            mala_step=jnp.asarray(initial_step_size(self.model.dim), positions.dtype),
        )

    @property
    def _tracks_rows(self) -> bool:
        return self.moves is not None and self.moves.first_pass

    @property
    def batchable(self) -> bool:
        """Whether :func:`pmd.run_batched` may vectorise repetitions: not with moves. Measured
        (docs/findings.md, 2026-11-25): the ``vmap`` of the scan with the moves' loops inside a
        ``cond`` wedges XLA's CPU runtime at ``m = 1000`` (every thread idle, no result), with
        the pass-end moves as with the first-pass ones; one repetition at a time runs."""
        return self.moves is None

    @property
    def wants_rows(self) -> bool:
        """Whether ``step`` needs the batch's row indices (``rows=``): the first-pass moves target the
        partial posterior of exactly the rows seen. The runner passes them to a method that says so."""
        return self._tracks_rows

    @property
    def pads_batches(self) -> bool:
        """Whether ``step`` takes a padded batch (``num_valid=``): the robust variant's segments end at
        the batch's last row that is data (:meth:`_robust_step`), so a run's short last batch runs in
        the same compiled program as the others (:mod:`pmd.interface`)."""
        return self.variant == "robust"

    @property
    def wants_data(self) -> bool:
        """Whether ``step`` reads the whole data set (``data=``): the moves target the full-data posterior."""
        return self.moves is not None

    def step(self, key: Array, state: PMDState, batch: Any, rows: Array | None = None,
             data: Any = None, num_valid: Array | int | None = None) -> tuple[PMDState, dict]:
        """One PMD iteration on a mini-batch (Algorithm 1, lines 5-15); ``rows``: the batch's row
        indices in the data set, needed by ``rejuvenate`` with ``first_pass``; ``data``: the data
        set the moves read (default: the one given at construction; :mod:`pmd.interface`);
        ``num_valid``: the robust variant only, the batch's first ``num_valid`` rows are data and the
        rest padding (:attr:`pads_batches`; default all of them)."""
        size = self.model.check_batch(batch)
        if num_valid is not None and not self.pads_batches:
            raise ConfigError("num_valid (a padded batch) is an option of variant='robust'")
        if num_valid is not None and not isinstance(num_valid, jax.core.Tracer) and not 1 <= int(num_valid) <= size:
            raise ConfigError(f"num_valid must count the batch's data rows, from 1 to its {size} rows; got {num_valid}")
        if self._tracks_rows:
            if rows is None:
                raise ConfigError("rejuvenate with first_pass moves on the rows seen so far: step needs the "
                                  "batch's row indices (rows=; pmd.run passes them)")
            if jnp.shape(rows) != (size,):
                raise ConfigError(f"rows must hold the batch's {size} row indices, got shape {jnp.shape(rows)}")
        data = step_data(self, data) if self.moves is not None else None
        if self.variant == "paper":
            return self._step(key, state, batch, rows, data)
        valid = jnp.asarray(size if num_valid is None else num_valid, jnp.int32)
        return self._step(key, state, batch, rows, data, valid)

    def posterior(self, state: PMDState) -> ParticlePosterior:
        """Paper variant: the weighted KDE ``q̃_{t+1}`` (eq. 6) while KDE steps run; otherwise the
        weighted particles (eq. 4)."""
        kde_running = self.strategy == "kde" or (self.strategy == "hybrid" and int(state.step) <= self.kde_steps)
        if self.variant == "paper" and kde_running:
            return KDEPosterior(state.kernel.centres, state.log_weights, state.kernel.chols[0])
        return ParticlePosterior(state.positions, state.log_weights)

    # -- shared pieces -------------------------------------------------------------------------
    def _kernel(self, key: Array, positions: Array, log_w: Array, gamma, cluster: bool = True) -> Kernel:
        if isinstance(self.bandwidth, LocalShrinkage):
            return self.bandwidth(key, positions, log_w, cluster)
        return Kernel.shared(positions, self.bandwidth(positions, log_w, gamma))

    def _draw(self, key: Array, kernel: Kernel, log_w: Array, count) -> tuple[Array, Array, Array]:
        """``m`` stratified draws from the KDE ``q̃``: positions, base ``log p - log q̃``, uniform log α
        over the first ``count`` slots."""
        m = self.num_particles
        new = kernel_sample(key, kernel, log_w, m, stratified=True)
        base = self.model.log_prior_many(new) - kernel_log_density(new, kernel, log_w)
        uniform = jnp.where(jnp.arange(m) < count, 0.0, -jnp.inf).astype(new.dtype)
        return new, base, uniform

    def _kde_pairs(self, kernel: Kernel) -> float:
        """The kernel pairs one :meth:`_draw` evaluates (:data:`pmd.work.WORK`'s ``kde_pairs``):
        ``q̃``'s log-density at its ``m`` draws (:func:`pmd.kde.density_pairs`)."""
        centres, dim = kernel.centres.shape
        return float(density_pairs(self.num_particles, centres, kernel.chols.shape[0], dim))

    def _mean_loglik(self, positions: Array, batch: Any) -> Array:
        return jnp.mean(self.model.batch_log_likelihood(positions, batch), axis=1)

    # -- the robust variant --------------------------------------------------------------------
    def _robust_step(self, key: Array, state: PMDState, batch: Any, rows: Array | None,
                     data: Any, valid: Array) -> tuple[PMDState, dict]:
        """One step on a batch of ``B`` rows, taken segment by segment: a segment is the batch's rows
        up to the next pass end (``(⌊V/N⌋ + 1) N`` for ``V`` rows visited) or to the batch's end, so that a
        batch which straddles a pass end (``B`` not dividing ``N``, or ``B > N``) reaches Theorem 5's
        iterate exactly at the pass end and the pass-end moves see the posterior itself. A segment of
        ``r`` first-pass rows multiplies the iterate by their likelihood; one of ``r`` later rows ending
        at ``V'`` rows visited is the prox step of eq. (2) with ``g = log p + (N/r) Σ_rows log p(x|θ)``
        and ``γ = (r/B) γ_{V'/B}``, for ``γ_t = 1/t`` the ``r/V'`` that gives
        ``p · exp(N/V' Σ_{visits} log p(x|θ))`` (Theorem 5's iterate) from ``V' - r`` rows' iterate.
        Only the first ``valid`` rows are data (a padded batch, :attr:`pads_batches`): the segments
        end there, and ``B`` stays the batch's size, the clock's unit."""
        size = jax.tree_util.tree_leaves(batch)[0].shape[0]
        dtype = state.positions.dtype
        n = self.data_size
        m = self.num_particles
        always = self.strategy == "kde"
        never = self.strategy == "particles"
        keys_per_segment = self.max_substeps + 1  # sub-steps 0..max_substeps-1, then the moves
        position_in_batch = jnp.arange(size)

        def reweight(k_segment, positions, log_w, base, kernel, mask, weight, streaming, gamma):
            """The segment's rows (``mask``) into the iterate, in sub-steps that keep the conditional
            ESS above ``ess_floor`` with a redraw between them. Streaming adds ``weight ·`` the rows'
            mean log-likelihood (their sum) once (``remaining``: the fraction to go); a prox step
            takes ``1-γ`` to the target ``Π(1-γ_i) = 1-γ`` (``remaining``: that product still to
            apply, as a ratio): two prox steps ``γ_1, γ_2`` on one ``g`` compose to one of
            ``1 - (1-γ_1)(1-γ_2)``."""
            def loglik_of(pos):  # weight · the segment's mean row log-likelihood, (m,)
                per_row = jnp.where(mask, self.model.batch_log_likelihood(pos, batch), 0.0)
                return weight * jnp.mean(per_row, axis=1)

            def direction(log_w, base, loglik):
                prox = base + loglik - jnp.where(jnp.isfinite(log_w), log_w, 0.0)
                return jnp.where(jnp.isfinite(log_w), jnp.where(streaming, loglik, prox), 0.0)

            def body(carry):
                positions, log_w, base, kernel, loglik, remaining, i, redraws = carry
                k = jax.random.fold_in(key, k_segment + i)
                low = effective_sample_size(log_w) < self.redraw_below * m
                redraw = ~never & (low | (always & (i == 0)))

                def fresh_draw():
                    k_kernel, k_draw = jax.random.split(k)
                    kern = self._kernel(k_kernel, positions, log_w, gamma)
                    pos, b, lw = self._draw(k_draw, kern, log_w, m)
                    return pos, lw, b, kern, loglik_of(pos)

                positions, log_w, base, kernel, loglik = jax.lax.cond(
                    redraw, fresh_draw, lambda: (positions, log_w, base, kernel, loglik))
                log_w = normalize(drop_impossible(log_w, loglik))
                loglik = jnp.where(jnp.isfinite(loglik), loglik, 0.0)
                step_max = jnp.where(streaming, remaining, 1.0 - remaining)
                last = i == self.max_substeps - 1
                dirn = direction(log_w, base, loglik)
                s = jnp.where(last, step_max, cap_step_size(log_w, dirn, step_max, self.ess_floor))
                log_w = normalize(jnp.where(jnp.isfinite(log_w), log_w + s * dirn, -jnp.inf))
                remaining = jnp.where(streaming, remaining - s, remaining / (1.0 - s))
                return positions, log_w, base, kernel, loglik, remaining, i + 1, redraws + redraw

            def unfinished(carry):
                remaining, i = carry[5], carry[6]
                todo = jnp.where(streaming, remaining > 1e-6, remaining < 1.0 - 1e-6)
                return (i == 0) | (todo & (i < self.max_substeps))

            carry = (positions, log_w, base, kernel, loglik_of(positions),
                     jnp.where(streaming, 1.0, 1.0 - gamma).astype(dtype), jnp.asarray(0), jnp.asarray(0))
            positions, log_w, base, kernel, _, _, substeps, redraws = jax.lax.while_loop(unfinished, body, carry)
            return positions, log_w, base, kernel, substeps, redraws

        order = state.order
        if self._tracks_rows:  # rows past the first pass fall outside `order` and are dropped
            slot = jnp.where(position_in_batch < valid, state.seen + position_in_batch, order.shape[0])  # padding: dropped
            order = order.at[slot].set(rows.astype(jnp.int32), mode="drop")

        def segment(carry):
            (positions, log_w, base, kernel, visited, done, exponent, gamma_step, mala_step,
             substeps, uncapped, redraws, moved, acceptance, read, moved_count, index, evals, grads, hvps, kdes) = carry
            streaming = visited < n
            pass_end = (visited // n + 1) * n
            end = jnp.minimum(valid, done + pass_end - visited)
            count = end - done
            after = visited + count
            mask = (position_in_batch >= done) & (position_in_batch < end)
            scheduled = self.gamma((after / size).astype(dtype))
            gamma = jnp.where(streaming, 0.0, count / size * scheduled).astype(dtype)
            weight = jnp.where(streaming, size, n * (size / count)).astype(dtype)
            k_segment = index * keys_per_segment
            positions, log_w, base, kernel, sub, drawn = reweight(
                k_segment, positions, log_w, base, kernel, mask, weight, streaming, gamma)
            evals = evals + ((1 + drawn) * size * m).astype(jnp.float32)  # the batch at m particles, then after each redraw
            kdes = kdes + drawn * self._kde_pairs(kernel)
            exponent = jnp.where(streaming, after / n, (1.0 - gamma) * exponent + gamma).astype(dtype)
            if self.moves is not None:  # where the iterate is a posterior: pass ends, and first-pass points
                partial = self.moves.due_in_first_pass(state.step + 1, after < n)
                move = self.moves.due(visited // n, after // n) | partial
                rows_target = jnp.where(partial, after, n)
                moves = self.moves.moves_in(partial)

                def rejuvenate():
                    k_move = jax.random.split(jax.random.fold_in(key, k_segment + self.max_substeps))[0]
                    target = LogTarget(self.model, data, self.moves.block_rows(m))
                    pos, logp, rate = self.moves(k_move, positions, log_w, target, rows_target, mala_step,
                                                 order=order if self._tracks_rows else None,
                                                 kernel=lambda k, p, w: self._kernel(k, p, w, gamma), moves=moves)
                    uniform = jnp.zeros((m,), dtype) - jnp.log(jnp.asarray(m, dtype))
                    base_new = self.model.log_prior_many(pos) - logp
                    # the kernel stays the last redraw's (the next redraw fits its own, so a fit here
                    # would only be reported: one more k-means in the compiled program)
                    return pos, uniform, base_new, kernel, rate, self.moves.adapt(mala_step, rate)

                positions, log_w, base, kernel, acceptance, mala_step = jax.lax.cond(
                    move, rejuvenate, lambda: (positions, log_w, base, kernel, acceptance, mala_step))
                moved = moved | move
                read = read + move * self.moves.reads_per_round(moves) * rows_target.astype(jnp.int32)
                moved_count = moved_count + move * moves
                counts = self.moves.work(rows_target, m, self.model.dim, moves, kernel.chols.shape[0])
                evals, grads, hvps, kdes = (total + jnp.where(move, counts[name], 0.0) for total, name in (
                    (evals, "evals"), (grads, "grad_evals"), (hvps, "hvp_evals"), (kdes, "kde_pairs")))
            return (positions, log_w, base, kernel, after, end, exponent, gamma_step + gamma * (1.0 - gamma_step),
                    mala_step, substeps + sub, uncapped | (sub >= self.max_substeps), redraws + drawn, moved,
                    acceptance, read, moved_count, index + 1, evals, grads, hvps, kdes)

        carry = (state.positions, state.log_weights, state.base, state.kernel, state.seen,
                 jnp.asarray(0, jnp.int32), state.exponent, jnp.asarray(0.0, dtype), state.mala_step,
                 jnp.asarray(0), jnp.asarray(False), jnp.asarray(0), jnp.asarray(False),
                 jnp.asarray(jnp.nan, dtype), jnp.asarray(0, jnp.int32), jnp.asarray(0, jnp.int32), jnp.asarray(0),
                 jnp.asarray(0.0, jnp.float32), jnp.asarray(0.0, jnp.float32), jnp.asarray(0.0, jnp.float32),
                 jnp.asarray(0.0, jnp.float32))
        (positions, log_w, base, kernel, seen, _, exponent, gamma, mala_step, substeps, uncapped, redraws, moved,
         acceptance, read, moved_count, _, evals, grads, hvps, kdes) = jax.lax.while_loop(lambda c: c[5] < valid,
                                                                                          segment, carry)
        clock = (seen / size).astype(dtype)
        new = PMDState(
            positions=positions,
            log_weights=log_w,
            base=base,
            kernel=kernel,
            step=state.step + 1,
            clock=clock,
            exponent=exponent,
            from_prior=state.from_prior & (redraws == 0),
            seen=seen,
            order=order,
            mala_step=mala_step,
        )
        info = {
            "gamma": gamma,
            "gamma_scheduled": jnp.asarray(self.gamma(clock), dtype),
            "ess": effective_sample_size(log_w),
            "exponent": exponent,
            "num_active": jnp.sum(jnp.isfinite(log_w)),
            "bandwidth": kernel_scale(kernel),
            "redraw": redraws > 0,
            "redraws": redraws,
            "substeps": substeps,
            "uncapped": uncapped,
            **work(evals, grads, hvp_evals=hvps, kde_pairs=kdes),
        }
        if self.moves is not None:
            info.update(moved=moved, acceptance=acceptance, mala_moves=moved_count, visited=valid + read)
        return new, info

    # -- the paper variant ---------------------------------------------------------------------
    def _redraw(self, key: Array, state: PMDState, t: Array) -> tuple[Array, Array, Array]:
        """Draw from ``q̃_t`` (the prior before the first KDE step): positions, base, uniform log α."""
        m = self.num_particles

        def from_prior(_):
            positions = self.model.sample_prior(key, m)
            uniform = jnp.where(jnp.arange(m) < self.particles(t), 0.0, -jnp.inf).astype(positions.dtype)
            return positions, jnp.zeros((m,), positions.dtype), uniform

        def from_kde(_):
            return self._draw(key, state.kernel, state.log_weights, self.particles(t))

        return jax.lax.cond(state.from_prior, from_prior, from_kde, None)

    def _paper_step(self, key: Array, state: PMDState, batch: Any, rows: Array | None,
                    data: Any) -> tuple[PMDState, dict]:
        del rows, data  # the paper variant has no moves
        t = state.step + 1
        if self.strategy == "particles":
            redraw = jnp.asarray(False)
            positions, base, prev = state.positions, state.base, state.log_weights
        elif self.strategy == "kde":
            redraw = jnp.asarray(True)
            positions, base, prev = self._redraw(key, state, t)
        else:  # the hybrid's last redraw (t = kde_steps + 1) becomes the frozen particle set
            degenerate = effective_sample_size(state.log_weights) < self.redraw_below * jnp.sum(
                jnp.isfinite(state.log_weights))
            redraw = (t <= self.kde_steps + 1) | degenerate
            positions, base, prev = jax.lax.cond(
                redraw,
                lambda: self._redraw(key, state, t),
                lambda: (state.positions, state.base, state.log_weights),
            )
        loglik = self.data_size * self._mean_loglik(positions, batch)
        prev = drop_impossible(prev, loglik)
        loglik = jnp.where(jnp.isfinite(loglik), loglik, 0.0)
        active = jnp.isfinite(prev)
        direction = jnp.where(active, base + loglik - jnp.where(active, prev, 0.0), 0.0)
        scheduled = jnp.asarray(self.gamma(state.clock + 1.0), positions.dtype)
        if self.strategy == "particles" and self.particle_ess_floor == 0:
            gamma = scheduled  # nothing to cap: skip the bisection
        else:
            floor = jnp.where(redraw, self.ess_floor, self.particle_ess_floor)
            gamma = cap_step_size(prev, direction, scheduled, floor)
        log_w = normalize(jnp.where(active, prev + gamma * direction, -jnp.inf))
        new = PMDState(
            positions=positions,
            log_weights=log_w,
            base=base,
            # fixed particles never draw from a KDE: their kernel is left as it was
            kernel=state.kernel if self.strategy == "particles" else self._kernel(key, positions, log_w, gamma),
            step=t,
            clock=state.clock + gamma / scheduled,
            exponent=(1.0 - gamma) * state.exponent + gamma,
            from_prior=state.from_prior & ~redraw,
            seen=state.seen,
            order=state.order,
            mala_step=state.mala_step,
        )
        info = {
            "gamma": gamma,
            "gamma_scheduled": scheduled,
            "ess": effective_sample_size(log_w),
            "exponent": new.exponent,
            "num_active": jnp.sum(active),
            "bandwidth": kernel_scale(new.kernel),
            "redraw": redraw,
            # the batch at m particles, and a redraw's KDE density at its draws
            **work(jax.tree_util.tree_leaves(batch)[0].shape[0] * self.num_particles,
                   kde_pairs=jnp.where(redraw & ~state.from_prior, self._kde_pairs(state.kernel), 0.0)),
        }
        return new, info


def drop_impossible(log_w: Array, loglik: Array) -> Array:
    """Give zero weight to particles whose batch likelihood is zero or undefined (``-inf``/NaN:
    e.g. posteriordb's ARMA(1,1) overflows in float32 far in its prior's tails): their weight is zero
    after any step ``γ > 0``, and keeping them would put ``0 · (-inf)`` into the step-size search."""
    return jnp.where(jnp.isfinite(loglik), log_w, -jnp.inf)


def kernel_scale(kernel: Kernel) -> Array:
    """The RMS kernel standard deviation ``sqrt(tr H / d)``, averaged over the clusters."""
    d = kernel.chols.shape[-1]
    return jnp.mean(jnp.sqrt(jnp.einsum("kij,kij->k", kernel.chols, kernel.chols) / d))


def kernel_rule(spec: Any):
    """The redraw kernel: ``{"kind": "local", ...}`` (:class:`pmd.local_kernel.LocalShrinkage`) or
    any rule of :func:`pmd.bandwidth.bandwidth_rule`."""
    if isinstance(spec, Mapping) and spec.get("kind") == "local":
        args = {k: v for k, v in spec.items() if k != "kind"}
        try:
            rule = LocalShrinkage(**args)
        except TypeError as err:
            raise ValueError(f"bad arguments for bandwidth rule 'local': {args} ({err})") from err
        if rule.h2 is not None and rule.neighbours is not None:
            raise ValueError("bandwidth rule 'local': give h2 (a fixed width) or neighbours (a floor on the rule's), not both")
        if rule.neighbours is not None and not (isinstance(rule.neighbours, (int, float)) and rule.neighbours > 0):
            raise ValueError(f"bandwidth rule 'local': neighbours must be positive, got {rule.neighbours!r}")
        if not isinstance(rule.clusters, int) or rule.clusters < 1:
            raise ValueError(f"bandwidth rule 'local': clusters must be a positive integer, got {rule.clusters!r}")
        for name in ("max_h2", "h2"):
            value = getattr(rule, name)
            if value is not None and not (isinstance(value, (int, float)) and 0 < value < 1):
                raise ValueError(f"bandwidth rule 'local': {name} must lie in (0, 1), got {value!r}")
        return rule
    return bandwidth_rule(spec)


def step_size_or_default(spec: Any, particles, dim: int):
    """The step-size schedule, ``γ_t = 1/t`` when none is given."""
    return step_size({"kind": "harmonic", "eta": 1.0} if spec is None else spec, particles=particles, dim=dim)

"""MALA moves that keep PMD's iterate invariant where that iterate is known (the robust variant's
``rejuvenate``: ``DEFAULT_MOVES`` whenever PMD is given ``data=``, or ``{"kind": "mala", ...}``).

Where: with ``γ_t = B / points visited`` (the robust variant's clock), the iterate after the
streaming start is Theorem 5's ``q_t ∝ p · exp(N / visited · Σ_{visited} log p(x|θ))``. The runner
visits the data as chained random permutations, so when a pass ends every datum has been visited
equally often and the iterate is the posterior ``π(θ) ∝ p(θ) Π_n p(x_n|θ)`` itself (a batch that
straddles a pass end is taken in two segments, the moves between them: ``PMD._robust_step``).
During the first pass (the streaming start) the iterate after ``n`` rows is the partial posterior
``p(θ) Π_{rows seen} p(x|θ)``. There, and only there, a
Markov kernel that leaves the iterate's target invariant leaves the iterate invariant, and can undo
what reweighting and redraws cannot: a particle cloud that has lost spread is moved back towards
the target's own shape. This is the resample-move step of Gilks & Berzuini (2001); placed on the
partial posteriors of a growing data set it is Chopin's (2002) IBIS.

When (``at``, ``first_pass``): ``at="every_pass"`` (default) moves at the end of every pass;
``at="doubling"`` only at the end of passes 1, 2, 4, 8, ... (``O(log passes)`` rounds: a posterior
that is one datum, a time series, ends a pass at every step). ``first_pass=True`` also moves after
steps 2, 4, 8, ... of the first pass, on the partial posterior of exactly the rows seen (the runner
hands PMD each batch's row indices; the state keeps the first pass's order). Measured at paper
scale (1.59M rows, d = 51, m = 1000, docs/findings.md): without first-pass moves the cloud is 3.5
partial-posterior sd off after 10,000 rows and 40 sd at the end of the first pass, since each
reweight-and-redraw cycle loses spread and the losses compound over thousands of steps; a doubling
schedule costs at most ``2 N`` row reads per move and catches the cloud before it is lost.
``first_pass_steps`` (default: ``steps``) sets the MALA moves of those first-pass rounds alone, the
number fixed before the round, so each round is still a composition of π-invariant kernels; measured
(docs/findings.md 2026-11-26): 2 instead of 5 cut the rows the default read at
N = 2·10⁵, d = 11 by 15% and left the pass-1 error at 0.043 against 0.029 reference sd (one seed), so it is an
option, not the default.

The kernel: the weighted particles are resampled (stratified), then ``steps`` Metropolis-adjusted
Langevin moves (Roberts & Tweedie 1996) preconditioned by ``A = R Rᵀ``:
``θ' = θ + ε²/2 · A ∇log π(θ) + ε R z``, accepted with the Metropolis-Hastings ratio. ``A`` is
(``precondition``) the cloud's weighted covariance (``"cloud"``, default) or the inverse of minus
the target's Hessian at the cloud's weighted mean (``"hessian"``, the Laplace covariance; along a
direction where that Hessian does not curve downwards, as between two modes, the cloud's variance
along it: :func:`hessian_root`). A cloud that has collapsed in
some direction cannot re-expand under its own covariance (measured: 11.3 sd off at the end of the
paper-scale first pass with ``"cloud"``, 0.5 with ``"hessian"``). ``ε`` starts at
``1.65 d^{-1/6}`` (Roberts & Rosenthal 1998: optimal for a Gaussian target whose covariance is the
preconditioner, acceptance 0.574) and is fixed for the ``steps`` moves of a round, so that each move
is a π-invariant kernel given ``ε``; between rounds it is scaled by ``exp(acceptance - 0.574)`` (the
round's mean acceptance, PMD's state carries it to the next round). Adapting it within a round from
the population's acceptance would make each move's ``ε`` depend on the states being moved, and the moves
are then not invariant (``tests/test_pmd_rejuvenation.py``: five moves of exact draws of a
2-d conjugate posterior inflated the variance by 3.8 ± 0.5% at m = 2 and 2.4 ± 0.2% at m = 8, against
-0.5 ± 0.5% and +0.2 ± 0.2% with ``ε`` frozen). Each move reads the target's rows (``log π`` and its
gradient at the proposals), the Hessian one more read; the runner counts them as data visited.

Crossing between modes (``independence``): MALA's moves stay within a mode, so without
more a mode's mass is the one the first pass's importance weights gave it, and it varies from run to
run (``m = 1000``, 40 seeds, ``benchmarks/bench_mode_balance.py``: sd 0.032 on the Welling-Teh mixture
and 0.050 on a symmetric one, against 0.016 for 1000 independent draws; with 2 sweeps, 0.018 and
0.015, which is why ``DEFAULT_MOVES`` has them). ``independence = k`` ends each round with ``k``
sweeps of an independence Metropolis-Hastings sampler whose proposal is the KDE iterate itself (eq. 6, PMD's own redraw
kernel) fitted to the other half of the population (:func:`independence_sweeps`): its density is
computable, so the move is exact against the current target (prior × likelihood of the rows seen),
and ``π/q̃`` weighs each mode by its evidence. Chosen over a tempered proposal (a ladder of
intermediate targets, each a full read) and over re-weighting the modes by estimated evidences (a
mode's evidence from its particles is itself an importance-sampling estimate with the error it is
meant to remove, and it needs the modes labelled).

After the moves the particles are equally weighted draws of the target; their base ratio
``log p - log π`` is ``-Σ log p(x|θ)`` up to a constant, which cancels in normalised weights.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp

from .bandwidth import stable_cholesky, weighted_cov
from .kde import Kernel, density_pairs, kernel_log_density, kernel_sample
from .model import Model
from .weights import stratified_draw

Array = jax.Array
KernelRule = Callable[[Array, Array, Array], Kernel]  # (key, positions, log weights) -> the KDE's kernel
OPTIMAL_ACCEPTANCE = 0.574  # MALA, Roberts & Rosenthal (1998)
# On a CPU the moves' log-likelihood sums read about this many particle-rows per block when ``chunk``
# is not given (:meth:`MALAMoves.block_rows`): 4 MB of float32 per ``m × chunk`` array.
BLOCK_PARTICLE_ROWS = 2**20
# The robust variant's moves when PMD is given the data (``rejuvenate="auto"``, pmd/algorithm.py):
# IBIS on the first pass's partial posteriors, Laplace-preconditioned, and O(log passes) rounds on
# the full posterior after it. Measured against no moves on the mixture, logistic regression, the
# posteriordb suite and the conjugate model (README, docs/findings.md 2026-11-25).
# Each round ends with 2 independence sweeps, which put the modes' masses right (``independence``,
# module docstring; measured on both mixtures and the posteriordb suite, docs/findings.md 2026-11-26).
DEFAULT_MOVES = {"kind": "mala", "steps": 5, "at": "doubling", "first_pass": True, "precondition": "hessian",
                 "independence": 2}


@dataclass(frozen=True)
class MALAMoves:
    """``steps`` preconditioned MALA moves on the iterate's target (module docstring)."""

    steps: int = 10
    chunk: int | None = None  # data rows per block of the log-likelihood sums (memory: m × chunk); None: block_rows
    jitter: float = 1e-6
    at: str = "every_pass"  # or "doubling": at the end of passes 1, 2, 4, 8, ...
    first_pass: bool = False  # also after steps 2, 4, 8, ... of the first pass (partial posteriors)
    first_pass_steps: int | None = None  # MALA moves in those first-pass rounds (None: ``steps``)
    precondition: str = "cloud"  # or "hessian": the target's inverse Hessian at the cloud's mean
    independence: int = 0  # sweeps of the independence sampler after the MALA moves (:func:`independence_sweeps`)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> "MALAMoves":
        """``{"kind": "mala", "steps": k, ...}`` with the fields of this class; raises ``ValueError``
        naming a bad field."""
        if not isinstance(spec, Mapping) or spec.get("kind") != "mala":
            raise ValueError(f"rejuvenate must be {{'kind': 'mala', 'steps': k}}, got {spec!r}")
        args = {k: v for k, v in spec.items() if k != "kind"}
        known = ("steps", "chunk", "jitter", "at", "first_pass", "first_pass_steps", "precondition", "independence")
        unknown = sorted(set(args) - set(known))
        if unknown:
            raise ValueError(f"rejuvenate: unknown fields {unknown}; known: {', '.join(known)}")
        moves = cls(**args)
        if moves.at not in ("every_pass", "doubling"):
            raise ValueError(f"rejuvenate: at must be 'every_pass' or 'doubling', got {moves.at!r}")
        if moves.precondition not in ("cloud", "hessian"):
            raise ValueError(f"rejuvenate: precondition must be 'cloud' or 'hessian', got {moves.precondition!r}")
        if not isinstance(moves.first_pass, bool):
            raise ValueError(f"rejuvenate: first_pass must be true or false, got {moves.first_pass!r}")
        for name in ("steps", "chunk"):
            value = getattr(moves, name)
            if name == "chunk" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"rejuvenate: {name} must be a positive integer, got {value!r}")
        if moves.first_pass_steps is not None and (isinstance(moves.first_pass_steps, bool) or not isinstance(
                moves.first_pass_steps, int) or not 1 <= moves.first_pass_steps <= moves.steps):
            raise ValueError(f"rejuvenate: first_pass_steps must be an integer from 1 to steps ({moves.steps}) or "
                             f"null, got {moves.first_pass_steps!r}")
        if isinstance(moves.independence, bool) or not isinstance(moves.independence, int) or moves.independence < 0:
            raise ValueError(f"rejuvenate: independence must be a non-negative integer, got {moves.independence!r}")
        return moves

    def block_rows(self, num_particles: int, backend: str | None = None) -> int:
        """Rows per block of the log-likelihood sums at ``m = num_particles`` on ``backend`` (default:
        JAX's default backend): ``chunk`` if given; else 4,096, and on a CPU ``min(4096, ⌊2²⁰/m⌋)``
        (:data:`BLOCK_PARTICLE_ROWS`). Why about 2²⁰ particle-rows on a CPU: a block's ``m × chunk``
        arrays then stay near its caches; at m = 1,000 (logistic regression, d = 21, N = 10⁶, this
        2-core CPU) blocks of 512-1,024 rows read the value and gradient about a fifth faster than
        blocks of 4,096, and the default's first pass at N = 2·10⁵ ran in 7.4-8.4 s against 9.6-9.8 s;
        at m ≤ 250 the 4,096 cap reads as fast as any smaller block (docs/findings.md 2026-11-29,
        "The moves' block size"). Not on an accelerator: there each block is a few kernel launches
        whatever its size, so smaller blocks would multiply the launches (not measured there yet)."""
        if self.chunk is not None:
            return self.chunk
        if (backend or jax.default_backend()) != "cpu":
            return 4096
        return max(1, min(4096, BLOCK_PARTICLE_ROWS // num_particles))

    def moves_in(self, first_pass: Array) -> Array:
        """The MALA moves of a round: ``first_pass_steps`` in a first-pass round, else ``steps``."""
        return jnp.where(first_pass, self.steps if self.first_pass_steps is None else self.first_pass_steps,
                         self.steps)

    def reads_per_round(self, moves: Array) -> Array:
        """Full reads of the target's rows one round of ``moves`` MALA moves makes: the gradient at
        the start and at every proposal, the Hessian's (one read, ``d`` forward passes) when it
        preconditions, and the value at every independence sweep's proposals."""
        return moves + 1 + (self.precondition == "hessian") + self.independence

    def work(self, rows: Array, num_particles: int, dim: int, moves: Array, clusters: int = 1) -> dict[str, Array]:
        """The counts of one round of ``moves`` MALA moves over ``rows`` rows
        (:data:`pmd.work.WORK`): every particle's value and gradient at its start and at each
        proposal (``evals``, ``grad_evals``), with ``precondition="hessian"`` the Hessian at one
        point (``d`` forward-over-reverse passes: ``d`` Hessian-vector products per row,
        ``hvp_evals``), and each independence sweep's value at ``m`` proposals (``evals``) and its
        two halves' KDE densities, ``m - ⌊m/2⌋`` centres of ``clusters`` kernels at ``2⌊m/2⌋``
        points each (``kde_pairs``, :func:`pmd.kde.density_pairs`)."""
        rows = jnp.asarray(rows, jnp.float32)
        per_particle = rows * num_particles * (jnp.asarray(moves, jnp.float32) + 1)
        hessian = self.precondition == "hessian"
        independence = rows * num_particles * self.independence
        half = num_particles // 2
        kde = (self.independence * 2 * density_pairs(2 * half, num_particles - half, clusters, dim)
               if num_particles >= 2 else 0)
        return {"evals": per_particle + independence, "grad_evals": per_particle, "hvp_evals": hessian * rows * dim,
                "kde_pairs": jnp.asarray(kde, jnp.float32)}

    def due(self, done_before: Array, done_after: Array) -> Array:
        """Whether rows that took the whole passes done from ``done_before`` to ``done_after``
        (integers: ``rows visited // N``) end a pass at which this schedule moves."""
        if self.at == "every_pass":
            return done_after > done_before

        def level(done):  # -1 before the first pass ends, then floor(log2(passes done))
            done = jnp.asarray(done, jnp.float32)
            return jnp.where(done >= 1, jnp.floor(jnp.log2(jnp.maximum(done, 1.0)) + 1e-6), -1.0)

        return level(done_after) > level(done_before)

    def due_in_first_pass(self, steps_taken: Array, streaming_after: Array) -> Array:
        """With ``first_pass``: after steps 2, 4, 8, ... while the first pass is still under way
        (its end is a pass end, moved by :meth:`due`)."""
        t = steps_taken.astype(jnp.int32)
        return self.first_pass & streaming_after & (t >= 2) & ((t & (t - 1)) == 0)

    def adapt(self, step_size: Array, acceptance: Array) -> Array:
        """The next round's ``ε`` from this round's mean acceptance: ``ε · exp(acceptance - 0.574)``."""
        return step_size * jnp.exp(acceptance - OPTIMAL_ACCEPTANCE)

    def __call__(self, key: Array, positions: Array, log_weights: Array, target: "LogTarget",
                 count: Array, step_size: Array | None = None, order: Array | None = None,
                 kernel: KernelRule | None = None, moves: Array | None = None) -> tuple[Array, Array, Array]:
        """Resample, then ``moves`` MALA moves (default ``steps``; at most ``steps``, the number fixed
        before the round starts) on ``target`` over its first ``count`` rows (of ``order``, if given)
        with the step size ``ε = step_size`` (default :func:`initial_step_size`) for every move, then
        ``independence`` sweeps of :func:`independence_sweeps` with proposals from ``kernel``'s KDE:
        ``(positions, log target at them, mean acceptance over the MALA moves)``."""
        m, d = positions.shape
        k_resample, k_moves = jax.random.split(key)
        cloud = weighted_cov(positions, log_weights)
        if self.precondition == "hessian":
            mean = jnp.sum(jax.nn.softmax(log_weights)[:, None] * positions, axis=0)
            root, inverse_root = hessian_root(-target.hessian(mean, count, order), cloud, self.jitter)
        else:
            root, inverse_root = cholesky_root(cloud, self.jitter)
        x = positions[stratified_draw(k_resample, log_weights, m)]

        def evaluate(th):
            return target.value_and_grad(th, count, order)

        def drift(th, grad, eps):  # θ + ε²/2 · A ∇log π(θ), A = R Rᵀ
            return th + 0.5 * eps**2 * (grad @ root) @ root.T

        def log_proposal(to, frm, grad_frm, eps):  # log q(to | frm) up to a constant
            z = (to - drift(frm, grad_frm, eps)) @ inverse_root.T
            return -0.5 * jnp.sum(z**2, axis=1) / eps**2

        keys = jax.random.split(k_moves, self.steps)

        def move(j, carry, eps):
            """Move ``j`` (1, ..., ``moves``); ``j = 0`` evaluates the start, so that the target's read
            appears once in the compiled program (compilation dominates small problems)."""
            x, logp, grad, accepted = carry
            k_z, k_u = jax.random.split(keys[jnp.maximum(j - 1, 0)])
            z = jax.random.normal(k_z, x.shape, x.dtype)
            start = j == 0
            prop = jnp.where(start, x, drift(x, grad, eps) + eps * z @ root.T)
            logp_prop, grad_prop = evaluate(prop)
            log_ratio = (logp_prop + log_proposal(x, prop, grad_prop, eps)
                         - logp - log_proposal(prop, x, grad, eps))
            log_ratio = jnp.where(jnp.isfinite(log_ratio), log_ratio, -jnp.inf)
            accept = start | (jnp.log(jax.random.uniform(k_u, (m,), x.dtype)) < log_ratio)
            x = jnp.where(accept[:, None], prop, x)
            logp = jnp.where(accept, logp_prop, logp)
            grad = jnp.where(accept[:, None], grad_prop, grad)
            return x, logp, grad, accepted + jnp.where(start, 0.0, jnp.mean(accept.astype(x.dtype)))

        eps = jnp.asarray(initial_step_size(d) if step_size is None else step_size, x.dtype)
        moves = jnp.asarray(self.steps if moves is None else moves, jnp.int32)
        unset = jnp.zeros((m,), x.dtype), jnp.zeros_like(x)  # replaced at j = 0
        x, logp, _, accepted = jax.lax.fori_loop(0, moves + 1, partial(move, eps=eps),
                                                 (x, *unset, jnp.zeros((), x.dtype)))
        if self.independence and m >= 2:
            if kernel is None:
                raise ValueError("independence sweeps draw from a KDE: pass kernel=, (key, θ, log α) -> Kernel")
            x, logp, _ = independence_sweeps(jax.random.fold_in(key, 2), x, logp, target, count, order, kernel,
                                             self.independence)
        return x, logp, accepted / moves


def independence_sweeps(key: Array, x: Array, logp: Array, target: "LogTarget", count: Array,
                        order: Array | None, kernel: KernelRule, sweeps: int) -> tuple[Array, Array, Array]:
    """``sweeps`` sweeps of the independence Metropolis-Hastings sampler (Tierney 1994) on ``target``
    over its first ``count`` rows, with proposals from the KDE of the other half of the population:
    ``(positions, log target at them, mean acceptance)``.

    The population is split at random into halves ``A`` and ``B``. Every particle ``θ`` of ``A``
    proposes ``θ' ~ q̃_B``, the KDE (eq. 6) that ``kernel`` fits to ``B`` (PMD's own redraw kernel:
    per mode Liu-West), an independent draw for each particle, accepted with probability
    ``min(1, π(θ') q̃_B(θ) / (π(θ) q̃_B(θ')))`` (Tierney 1994); then ``B`` moves the same way with the
    KDE of the moved ``A``.

    Why: MALA's moves stay within a mode, so after them a mode's mass is still the one the first
    pass's importance weights gave it. ``q̃`` covers every mode the population holds, and
    the ratio ``π/q̃`` weighs each mode by its evidence under the exact target: where the cloud holds a
    mode's share ``a ≥ p`` against the target's ``p`` and matches the target's shape within each mode,
    a particle's mode is a two-state chain with ``P(to the other) = 1 - a`` and ``P(back) =
    p(1-a)/(1-p)``, whose second eigenvalue is ``(a - p)/(1 - p)``: its mode after a sweep is nearly
    independent of its mode before it, and the masses converge to the target's. A KDE's mismatch
    within a mode lowers the acceptance and slows this: measured on the Welling-Teh mixture (1000
    exact draws weighted to put 0.8 on a mode whose mass is 0.541; 8 keys), one round of the default's
    moves leaves 0.766 without sweeps and 0.638, 0.561, 0.542 after 1, 2, 3 sweeps (acceptance 0.86).

    Why halves: a proposal built from the particles being moved (a KDE with a kernel on each) ties
    the proposal to the state, and the move is not invariant (measured: 2 sweeps of 8 exact draws of
    a 2-d Gaussian posterior, a KDE fitted to all 8, leave 0.67 of the variance; from the other half,
    0.997 ± 0.008). ``q̃_B`` is a fixed density given ``B``, so if the population is i.i.d. from ``π``
    the move keeps ``A`` i.i.d. ``π`` given ``B`` (and the next half's move likewise), exactly, at any
    ``m``; the draws of ``θ'`` are independent (not stratified) for the same reason. Costs one read of
    the target's rows per sweep (the value at ``m`` proposals) and the KDE of ``m/2`` centres at ``m``
    points per half."""
    m = x.shape[0]
    half = m // 2
    k_perm, k_sweeps = jax.random.split(key)
    perm = jax.random.permutation(k_perm, m)  # resampled duplicates sit together: halves must mix them
    x, logp = x[perm], logp[perm]

    def update(carry, k):
        """The first ``half`` particles move with the KDE of the rest, then go to the back: the next
        update moves the other half (for odd ``m``, one particle sits out each sweep, in turn). One
        half-update per scan step keeps one copy of the kernel fit in the compiled program."""
        x, logp = carry
        movers, logp_movers, others = x[:half], logp[:half], x[half:]
        k_kernel, k_draw, k_u = jax.random.split(k, 3)
        uniform = jnp.full(others.shape[:1], -jnp.log(others.shape[0]), others.dtype)
        kern = kernel(k_kernel, others, uniform)
        proposals = kernel_sample(k_draw, kern, uniform, half)
        logp_proposals = target.value(proposals, count, order)
        log_q = kernel_log_density(jnp.concatenate([proposals, movers]), kern, uniform)
        log_ratio = logp_proposals - log_q[:half] - logp_movers + log_q[half:]
        log_ratio = jnp.where(jnp.isfinite(log_ratio), log_ratio, -jnp.inf)
        accept = jnp.log(jax.random.uniform(k_u, (half,), movers.dtype)) < log_ratio
        moved = jnp.where(accept[:, None], proposals, movers)
        return ((jnp.concatenate([others, moved]), jnp.concatenate([logp[half:], jnp.where(accept, logp_proposals,
                                                                                          logp_movers)])),
                jnp.sum(accept))

    keys = jax.vmap(jax.random.split)(jax.random.split(k_sweeps, sweeps)).reshape(2 * sweeps)  # A's, B's, per sweep
    (x, logp), accepted = jax.lax.scan(update, (x, logp), keys)
    return x, logp, jnp.sum(accepted) / (2 * half * sweeps)


def initial_step_size(dim: int) -> float:
    """MALA's ``ε = 1.65 d^{-1/6}``: optimal for a Gaussian target whose covariance is the
    preconditioner (Roberts & Rosenthal 1998, acceptance 0.574)."""
    return 1.65 * dim ** (-1.0 / 6.0)


def cholesky_root(cov: Array, jitter: float) -> tuple[Array, Array]:
    """``(L, L⁻¹)``: the (jittered) Cholesky factor of ``cov`` and its inverse."""
    chol = stable_cholesky(cov, jitter)
    return chol, jax.scipy.linalg.solve_triangular(chol, jnp.eye(cov.shape[0], dtype=chol.dtype), lower=True)


def hessian_root(precision: Array, fallback_cov: Array, jitter: float) -> tuple[Array, Array]:
    """``(R, R⁻¹)`` with ``R Rᵀ = V diag(s) Vᵀ`` from the eigendecomposition ``precision = V Λ Vᵀ``
    (minus the target's Hessian at the cloud's mean): ``s_k = 1/λ_k`` along every direction of
    positive curvature, and along a direction where the log density does not curve downwards
    (``λ_k ≤ 0``) the cloud's own variance there, ``s_k = v_kᵀ Σ v_k + jitter`` (``Σ = fallback_cov``;
    the absolute ``jitter`` is the floor that lets a cloud collapsed along that direction start
    moving, docs/findings.md 2026-11-27, *A limit left in place*). Where
    ``precision`` is positive definite this is ``precision⁻¹``; where an eigenvalue is not finite,
    the Cholesky factor of ``Σ`` and its inverse.

    Why per direction: the curvature at one point can be negative in a few directions while it sets
    the right scale in the others. Between two modes of a multimodal target the log density curves
    upwards along the line that joins them, and there the cloud's spread is the better guess; and a
    Gaussian likelihood in ``(β, log σ)`` is not jointly concave: at a point whose ``β`` is off, the
    direction that moves ``β`` and ``log σ`` together curves upwards while every other keeps the
    curvature of ``XᵀX/σ²`` (Betancourt's SoftAbs metric, 2013, and saddle-free Newton, Dauphin et
    al. 2014, likewise keep the Hessian's scale along every direction and replace only where it
    fails; we take the cloud's variance there rather than ``1/|λ|``, since at a saddle ``|λ|`` is not
    a scale of the target). Measured on posteriordb's diamonds (d = 26, docs/findings.md
    2026-11-27): the Hessian at the cloud's mean had exactly one negative eigenvalue at every
    first-pass round, and falling back to the cloud's covariance in every direction, as this
    function did, left a cloud that had lost spread unable to re-expand: at m = 250, 127 partial-
    posterior sd off at the end of the first pass, against 0.26 with the per-direction scale."""
    lam, vec = jnp.linalg.eigh(0.5 * (precision + precision.T))
    finite = jnp.all(jnp.isfinite(lam))
    positive = lam > 0
    cloud_variance = jnp.einsum("ik,ij,jk->k", vec, fallback_cov, vec) + jitter
    scale = jnp.sqrt(jnp.where(positive, 1.0 / jnp.where(positive, lam, 1.0), cloud_variance))
    chol, chol_inverse = cholesky_root(fallback_cov, jitter)
    root = jnp.where(finite, vec * scale, chol)
    inverse_root = jnp.where(finite, (vec / scale).T, chol_inverse)
    return root, inverse_root


def per_particle_value_and_grad(fn: Callable[[Array], Array], thetas: Array) -> tuple[Array, Array]:
    """``fn(θ) (m,)`` and each particle's gradient ``(m, d)`` in one reverse pass (``fn`` is
    separable over particles, so the gradient of its sum is every particle's own)."""
    def summed(th):
        values = fn(th)
        return jnp.sum(values), values

    (_, values), grad = jax.value_and_grad(summed, has_aux=True)(thetas)
    return values, grad


class LogTarget:
    """``log p(θ) + Σ log p(x_n|θ)`` over the first ``count`` rows of the data (or of ``order``, an
    index array into them), with its gradient per particle and its Hessian at one point.

    The rows are read in blocks of ``chunk`` inside a ``fori_loop`` whose trip count is
    ``⌊count/chunk⌋`` (dynamic), then the partial block at the end, masked, only when ``count`` is not
    a multiple of ``chunk`` (a ``cond``); so a partial posterior of ``n`` rows costs ``n`` rows, not
    ``N``, and memory is ``m × chunk`` whatever ``N``. Each block's gradient is taken inside the loop
    (the particles' log densities are separable), so nothing is differentiated through the loop.
    Why the whole blocks go unmasked: a mask on every block (``where(keep, log p, 0)``) kept XLA from
    fusing the likelihood into its sum over rows and about doubled the time of a read (logistic
    regression, 1,000 particles, d = 21, on this CPU: 1.9 against 0.9 ns per particle-row,
    docs/findings.md 2026-11-29); the price is a second copy of the block's program, for the tail.
    """

    def __init__(self, model: Model, data: Any, chunk: int):
        self.model = model
        self.data = jax.tree_util.tree_map(jnp.asarray, data)
        self.num_data = jax.tree_util.tree_leaves(self.data)[0].shape[0]
        self.chunk = min(chunk, self.num_data)

    def _rows(self, block: Array, order: Array | None, count: Array | None = None) -> Any:
        """Rows ``block·chunk, ...`` of the data (of ``order``); with ``count``, positions at or past it
        are clamped to real rows (masked by the caller)."""
        position = block * self.chunk + jnp.arange(self.chunk)
        if count is not None:
            position = jnp.minimum(position, self.num_data - 1)
        index = position if order is None else order[position]
        return jax.tree_util.tree_map(lambda a: jnp.take(a, index, axis=0), self.data)

    def _sum_blocks(self, block_value: Callable, start, count: Array, order: Array | None):
        """``start + Σ_blocks block_value(rows, keep)``: ``keep`` is ``None`` for a whole block and the
        row mask for the tail."""
        count = count.astype(jnp.int32)
        whole = count // self.chunk

        def body(b, acc):
            return jax.tree_util.tree_map(jnp.add, acc, block_value(self._rows(b, order), None))

        def tail(acc):
            keep = whole * self.chunk + jnp.arange(self.chunk) < count
            return jax.tree_util.tree_map(jnp.add, acc, block_value(self._rows(whole, order, count), keep))

        acc = jax.lax.fori_loop(0, whole, body, start)
        return jax.lax.cond(whole * self.chunk < count, tail, lambda acc: acc, acc)

    def _block_log_likelihood(self, thetas: Array, rows: Any, keep: Array | None) -> Array:
        values = self.model.batch_log_likelihood(thetas, rows)
        return jnp.sum(values if keep is None else jnp.where(keep, values, 0.0), axis=1)

    def value(self, thetas: Array, count: Array, order: Array | None = None) -> Array:
        """Per particle: the log target ``(m,)``."""
        return self._sum_blocks(partial(self._block_log_likelihood, thetas), self.model.log_prior_many(thetas),
                                jnp.asarray(count), order)

    def value_and_grad(self, thetas: Array, count: Array, order: Array | None = None) -> tuple[Array, Array]:
        """Per particle: the log target ``(m,)`` and its gradient ``(m, d)``."""
        def block(rows, keep):
            return per_particle_value_and_grad(lambda th: self._block_log_likelihood(th, rows, keep), thetas)

        start = per_particle_value_and_grad(self.model.log_prior_many, thetas)
        return self._sum_blocks(block, start, jnp.asarray(count), order)

    def hessian(self, theta: Array, count: Array, order: Array | None = None) -> Array:
        """The Hessian ``(d, d)`` of the log target at one point ``θ``."""
        def block(rows, keep):
            return jax.hessian(lambda th: self._block_log_likelihood(th[None], rows, keep)[0])(theta)

        start = jax.hessian(self.model.log_prior)(theta)
        return self._sum_blocks(block, start, jnp.asarray(count), order)

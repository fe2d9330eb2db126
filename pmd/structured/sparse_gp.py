"""Structured Particle Mirror Descent for sparse GPs (Dai et al. 2016, Appendix F.1).

The posterior over the inducing inputs and values is kept as ``q(Z, u) = Σ_j w_j δ(Z_j) q(u|Z_j)``:
``l`` particles ``Z_j`` drawn once from the prior ``p(Z)`` (uniform on the data's box), each carrying
a Gaussian ``q(u|Z_j)`` that the prox step updates in closed form. One step on a mini-batch
``(x_b, y_b)`` of size ``B`` with step size ``γ_t`` (F.1's ``γ_t/n``, as in eq. 5):

* ``q_{t+1}(u|Z) ∝ q_t(u|Z)^{1-γ} p(u|Z)^γ Π_b p(y_b|x_b, u, Z)^{γN/B}``
  (:func:`pmd.models.sparse_gp.prox_update`, in whitened natural parameters);
* ``w_{t+1} ∝ w_t^{1-γ} p(Z)^γ p̃(y_b|x_b, Z)`` with ``p̃`` the normaliser of that product,
  ``log p̃ = A(Λ_{t+1}, h_{t+1}) - (1-γ) A(Λ_t, h_t) - γ A(I, 0) + c_b`` (``A`` the Gaussian log
  partition, :func:`pmd.models.sparse_gp.log_partition`; ``c_b`` the Gaussian likelihood's constant).
  ``p(Z)`` is uniform on the box, a constant that normalisation removes.

F.1 writes ``p̃ = N(y_i | K_im K_mm⁻¹ c, Σ)``, which leaves out the normaliser of the geometric
mean ``q_t^{1-γ} p^γ``; that factor depends on ``Z``, so we keep the exact integral of the prox
objective (16): with it the weights' fixed point is ``w_j ∝ p(y | Z_j)``, the posterior of ``Z``
(checked in ``tests/test_sparse_gp_pmd.py``: one full-data step with ``γ = 1`` gives exactly the
Titsias posterior for each ``Z_j`` and weights ∝ the DTC evidence).

The step size is ``γ_t = η / (n₀ + √t)`` (H.3) or any :func:`pmd.schedules.step_size` spec; H.3.1
starts ``q(u|Z)`` at the prior (``u = 0`` on average) and so do we. By default nothing resamples the
``Z_j``: F.1 keeps them fixed and moves only their weights.

What the iterate is: with ``γ_t = 1/t`` and fixed ``Z_j``, after ``t`` steps of the first pass
``q_t(u|Z) ∝ p(u|Z) Π_{rows seen} p(y|u, Z)^{N/(tB)}`` (the rows seen, their likelihood scaled up
to ``N`` rows) and ``log w_j = A(Λ_j, h_j) + const`` (the weight recursion of the module's first
paragraph keeps ``log w - A`` the same for every particle); at every pass end ``q(u|Z_j)`` is
Titsias' and ``w_j ∝ p(y|Z_j)``. With ``γ_t = 1/√t`` the iterate is a geometric average that
favours the latest batches, exact at no step.

``moves`` (:mod:`pmd.structured.sparse_gp_moves`): at the end of every pass (after the
step in which the rows visited reach a multiple of ``N``) the particles are resampled by weight and
each ``Z_j`` is moved by Metropolis-Hastings steps that leave ``p(Z|y) ∝ p(Z) p(y|Z)`` invariant,
``q(u|Z_j)`` is set to the exact ``p(u|y, Z_j)`` and the weights to uniform; the particles then
carry the base ratio ``b_j = log p(Z_j) - log π(Z_j) = -log p(y|Z_j)`` (up to a constant), and the
weight update is ``w_{t+1} ∝ w_t^{1-γ} exp(γ b) p̃`` (PMD's update for particles drawn from ``π``
rather than the prior, as :mod:`pmd.algorithm` does for its redraws; ``b = 0`` for prior draws,
which is F.1's update). The step then reads the whole data set (``wants_data``).

Work (:func:`pmd.interface.work`): the prox step integrates each batch datum's Gaussian likelihood
in closed form for each particle (its term of the batch statistics ``AᵀA, Aᵀy`` at ``Z_j``):
``evals = B·l`` a step, no gradients (``grad_evals = 0``). A step that moves adds
``(steps + 1)·N·l`` (every row's likelihood at each evidence; a proposal's evidence reads every
row but recomputes only its block's kernel columns, :class:`pmd.models.sparse_gp.DataKernel`) and
reports ``visited = B + (steps + 1)·N`` rows read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import jax
import jax.numpy as jnp

from ..interface import ConfigError, require_positive_int, step_data, work
from ..models.sparse_gp import (DataKernel, SparseGP, SparseGPPosterior, batch_statistics, features, log_partition,
                                posterior_from_natural, prox_update, whitening)
from ..schedules import step_size as make_step_size
from ..weights import effective_sample_size, normalize, stratified_draw
from .sparse_gp_moves import InducingMoves

Array = jax.Array


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class SparseGPState:
    """Particles ``Z_j (l, M, d)``, their whitening factors ``L_j``, the natural parameters
    ``(Λ_j, h_j)`` of ``q(v|Z_j)`` in whitened coordinates with their log partitions ``A_j``, the
    normalised log-weights, the step count, the base ratios ``b_j`` (0 for prior draws; module
    docstring), the rows visited and the mean acceptance of the last round of moves."""

    inducing: Array
    chol_k: Array
    prec: Array
    shift: Array
    log_partition: Array
    log_weights: Array
    step: Array
    base: Array
    visited: Array
    acceptance: Array


def require_sparse_gp(model: Any) -> SparseGP:
    """``model`` if it is a :class:`pmd.models.sparse_gp.SparseGP`, else a :class:`ConfigError`."""
    if not isinstance(model, SparseGP):
        raise ConfigError(f"model must be a pmd.models.sparse_gp.SparseGP, got {type(model).__name__}")
    return model


def prior_state(model: SparseGP, inducing: Array) -> SparseGPState:
    """``q(u|Z_j) = p(u|Z_j)`` (whitened: ``N(0, I)``) for every ``Z_j``, equal weights."""
    p, m = inducing.shape[:2]
    dtype = inducing.dtype
    prec = jnp.broadcast_to(jnp.eye(m, dtype=dtype), (p, m, m))
    shift = jnp.zeros((p, m), dtype)
    return SparseGPState(inducing, jax.vmap(lambda z: whitening(model, z))(inducing), prec, shift,
                         jax.vmap(log_partition)(prec, shift), jnp.full((p,), -jnp.log(p), dtype),
                         jnp.asarray(0, jnp.int32), jnp.zeros((p,), dtype), jnp.asarray(0, jnp.int32),
                         jnp.asarray(0.0, dtype))


def natural_step(model: SparseGP, data_size: int, state: SparseGPState, batch: dict, gamma) -> tuple[SparseGPState, Array]:
    """The prox step on every particle's ``q(u|Z_j)``; returns the new state (weights untouched)
    and each particle's ``log p̃(y_b|x_b, Z_j)`` (module docstring)."""
    x, y = batch["x"], batch["y"]
    scale = data_size / y.shape[0]

    def one(z, chol_k, prec, shift, log_z):
        stats = batch_statistics(model, features(model, z, chol_k, x), y, scale)
        new_prec, new_shift = prox_update(prec, shift, gamma, stats)
        new_log_z = log_partition(new_prec, new_shift)
        prior_log_z = 0.5 * prec.shape[-1] * jnp.log(2.0 * jnp.pi)  # A(I, 0)
        return new_prec, new_shift, new_log_z, new_log_z - (1.0 - gamma) * log_z - gamma * prior_log_z + gamma * stats[2]

    prec, shift, log_z, log_p = jax.vmap(one)(state.inducing, state.chol_k, state.prec, state.shift,
                                              state.log_partition)
    new = replace(state, prec=prec, shift=shift, log_partition=log_z, step=state.step + 1,
                  visited=state.visited + y.shape[0])
    return new, log_p


class StructuredPMDGP:
    """Structured PMD for sparse-GP regression (F.1), with the interface of :mod:`pmd.interface`.

    Args:
        model: the :class:`pmd.models.sparse_gp.SparseGP` (kernel, noise, ``M``, the box of ``Z``).
        data_size: ``N``.
        num_particles: ``l``, particles over ``Z`` (H.3: 16).
        step_size: a :func:`pmd.schedules.step_size` spec; default ``{"kind": "sqrt", "eta": 1,
            "offset": 1}``: ``γ_t = 1/(1 + √t)`` (H.3's form; the paper gives no η, n₀).
        moves: None (default: F.1, the ``Z_j`` fixed) or ``{"steps", "block", "bandwidth",
            "chunk_rows"}``: resample-move of the ``Z_j`` at pass ends
            (:class:`pmd.structured.sparse_gp_moves.InducingMoves`).
        data: the training set ``{"x", "y"}`` the moves read (required with ``moves``; a driver
            may pass it to ``step`` instead, :mod:`pmd.interface`).
    """

    handles = ("sparse_gp",)  # the target it runs on (workflow.methods.TARGETS)
    method_family = "particle mirror descent"
    reference = "Dai, He, Dai & Song, AISTATS 2016, Appendix F.1"

    def __init__(self, model, data_size: int, num_particles: int = 16, step_size: Any = None, moves: Any = None,
                 data: Any = None):
        self.model = require_sparse_gp(model)
        self.data_size = require_positive_int("data_size", data_size)
        self.num_particles = require_positive_int("num_particles", num_particles)
        self.moves = None if moves is None else InducingMoves.from_spec(moves, self.model)
        self.data = None
        if self.moves is not None:
            if data is None:
                raise ConfigError("moves read the whole data set: pass data={'x', 'y'} with moves")
            self.model.check_batch(data)
            self.data = step_data(self, {k: jnp.asarray(data[k]) for k in ("x", "y")})
        spec = {"kind": "sqrt", "eta": 1.0, "offset": 1.0} if step_size is None else step_size
        try:
            self.step_size = make_step_size(spec)
        except (ValueError, TypeError) as err:
            raise ConfigError(f"step_size: {err}") from err
        if not 0 < float(self.step_size(1)) <= 1:
            raise ConfigError(f"step_size must give γ_1 in (0, 1], got {float(self.step_size(1))} from {spec!r}")
        self._step = jax.jit(self._step_impl)
        self._moving_step = jax.jit(self._moving_step_impl)

    def init(self, key: Array) -> SparseGPState:
        """``Z_j ~ p(Z)`` uniform on the box, ``q(u|Z_j)`` the prior, equal weights."""
        return prior_state(self.model, self.model.sample_inducing(key, self.num_particles))

    @property
    def batchable(self) -> bool:
        """Whether :func:`pmd.run_batched` may vectorise repetitions: not with ``moves`` (under ``vmap``
        the pass-end ``cond`` becomes a select that computes both branches, a round of moves at
        every step)."""
        return self.moves is None

    @property
    def wants_data(self) -> bool:
        """Whether ``step`` reads the whole data set (``data=``): with ``moves``."""
        return self.moves is not None

    def step(self, key: Array, state: SparseGPState, batch: dict, data: Any = None) -> tuple[SparseGPState, dict]:
        """One prox step on the mini-batch (module docstring), then, with ``moves`` and at a pass end,
        a round of moves on ``data`` (default: the set given at construction); the key is used by
        the moves only."""
        self.model.check_batch(batch)
        if self.moves is None:
            return self._step(key, state, batch)
        return self._moving_step(key, state, batch, step_data(self, data))

    def posterior(self, state: SparseGPState) -> SparseGPPosterior:
        """The weighted mixture ``Σ_j w_j δ(Z_j) q(u|Z_j)``."""
        return posterior_from_natural(self.model, state.inducing, state.chol_k, state.log_weights, state.prec,
                                      state.shift)

    def _step_impl(self, key: Array, state: SparseGPState, batch: dict) -> tuple[SparseGPState, dict]:
        gamma = jnp.asarray(self.step_size(state.step + 1), state.shift.dtype)
        new, log_p = natural_step(self.model, self.data_size, state, batch, gamma)
        log_w = normalize((1.0 - gamma) * state.log_weights + gamma * state.base + log_p)
        new = replace(new, log_weights=log_w)
        return new, {"gamma": gamma, "ess": effective_sample_size(log_w),
                     **work(batch["y"].shape[0] * self.num_particles)}

    def _moving_step_impl(self, key: Array, state: SparseGPState, batch: dict,
                          data: dict) -> tuple[SparseGPState, dict]:
        """:meth:`_step_impl`, then :meth:`move` where the step ended a pass."""
        new, info = self._step_impl(key, state, batch)
        n = self.data_size
        pass_end = new.visited // n > state.visited // n
        new = jax.lax.cond(pass_end, lambda s: self.move(key, s, data), lambda s: s, new)
        reads = pass_end * (self.moves.steps + 1) * n
        rows = batch["y"].shape[0]
        return new, {**info, "ess": effective_sample_size(new.log_weights), "acceptance": new.acceptance,
                     "visited": rows + reads, **work((rows + reads) * self.num_particles)}

    def move(self, key: Array, state: SparseGPState, data: dict) -> SparseGPState:
        """Resample the particles (stratified), move each ``Z_j`` by ``moves.steps`` π-invariant steps
        and set ``q(u|Z_j) = p(u|y, Z_j)``, equal weights and ``b_j = -log p(y|Z_j)`` (module docstring).

        The chains run one after another, each keeping its kernel against the data (``N × M``
        numbers), in the order of their ancestors, so that chains resampled from the same particle
        start from one product ``Φ = K_mn K_nm`` (:meth:`pmd.models.sparse_gp.DataKernel.build`'s
        ``reuse``; F.1's weights collapse onto one particle over a pass, and then the first round's
        ``l`` chains share one). Chain ``j`` takes the ``j``-th key whatever the order, so the round
        is the one that running the chains in particle order gives."""
        k_resample, k_move = jax.random.split(key)
        l = self.num_particles
        ancestors = stratified_draw(k_resample, state.log_weights, l)
        keys = jax.random.split(k_move, l)
        m = self.model.num_inducing
        dtype = state.shift.dtype

        def chain(carry, j):
            previous, phi, psi = carry
            z = state.inducing[ancestors[j]]
            kernel = DataKernel.build(self.model, z, data, self.moves.chunk_rows,
                                      reuse=(ancestors[j] == previous, phi, psi))
            return (ancestors[j], kernel.phi, kernel.psi), self.moves.move(keys[j], self.model, data, z, kernel)

        order = jnp.argsort(ancestors)
        start = (jnp.asarray(-1, ancestors.dtype), jnp.zeros((m, m), dtype), jnp.zeros((m,), dtype))
        _, moved = jax.lax.scan(chain, start, order)
        z, log_ev, chol, prec, shift, acceptance = (a[jnp.argsort(order)] for a in moved)
        return replace(state, inducing=z, chol_k=chol, prec=prec, shift=shift,
                       log_partition=jax.vmap(log_partition)(prec, shift),
                       log_weights=jnp.full((l,), -jnp.log(l), shift.dtype), base=-(log_ev - jnp.max(log_ev)),
                       acceptance=jnp.mean(acceptance))

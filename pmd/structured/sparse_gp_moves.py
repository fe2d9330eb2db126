"""Resample-move rejuvenation of structured PMD's inducing inputs.

F.1 draws the particles ``Z_j`` once from the prior ``p(Z)`` (uniform on the data's box) and only
reweights them; their weights' fixed point is ``w_j ∝ p(y | Z_j)``, and with many rows the DTC
evidence of 16 box-uniform draws differs by tens to hundreds of nats, so the mixture collapses
onto one ``Z`` (ESS 1) and the other particles buy nothing. The choice here is the one the PMD
paper names for static models (section 5: "To ensure the convergence of static SMC, MCMC is
needed in the rejuvenation step"; it holds against SMC that such a step reads all the data seen),
Gilks & Berzuini's (2001) resample-move, placed where the target of the moves is known exactly:

* **Where.** At a pass end the whole data set has been read, and the target is the posterior of
  the inducing inputs ``π(Z) = p(Z | y) ∝ p(Z) p(y | Z)`` with ``p(y|Z)`` the collapsed DTC
  evidence (:func:`pmd.models.sparse_gp.collapsed_evidence`, ``O(N M (M + d))`` per particle). The
  pass-end iterate of F.1 is this target only for ``γ_t = 1/t`` (its ``q(u|Z)`` is then Titsias'
  and its weights ``∝ p(y|Z_j)``); for other schedules it is an approximation of it. Either way the
  moves target ``π`` itself, so after them the particles are what a resample-move sampler of
  ``π`` leaves, whatever the schedule.
* **The kernel.** The weighted particles are resampled (stratified), then each ``Z_j`` takes
  ``steps`` Metropolis-Hastings steps. A step picks ``block`` of the ``M`` inducing inputs
  uniformly without replacement (a symmetric choice) and redraws each independently from
  ``κ(z) = ½ U(z; box) + ½ N_kde(z)``, ``N_kde(z) = (1/N) Σ_i N(z; x_i, s² I)`` with
  ``s = bandwidth · σ`` (σ the kernel's bandwidth): half the time a training input, as SVI-GP's
  ``Z`` is, jittered so that ``κ`` has a density, half the time the prior. The proposal is accepted
  with probability ``min(1, [p(y|Z') 1_box(Z') Π_{m∈block} κ(z_m)] / [p(y|Z) Π_{m∈block} κ(z'_m)])``
  (Hastings 1970; ``p(Z)`` is constant on the box), so every step leaves ``π`` invariant, and the
  uniform half of ``κ`` makes the chain irreducible on the box. In high dimension the prior's
  volume is part of ``π``: ``κ``'s ratio charges a move from the box onto the data with the log
  density of the kernel's draw over the box's (on the 90-d msd stand-in, median over 64 draws of
  each: 26 nats per inducing input, about 100 for a block of 4), and only an evidence gain larger
  than that is accepted; that is the posterior of F.1's model, not a defect of the kernel.
* **After the moves** ``q(u|Z_j)`` is the exact posterior ``p(u | y, Z_j)`` (Titsias' ``q(u|Z)``,
  natural parameters ``(I + P, r)`` in whitened coordinates, computed with the evidence), the
  particles are equally weighted draws of ``π(Z) p(u|y, Z)``, and PMD's base ratio (the log density
  of the prior over the density the particles were drawn from, as for PMD's redraws in
  :mod:`pmd.algorithm`) becomes ``b_j = log p(Z_j) - log π(Z_j) = -log p(y|Z_j) + const``: later
  weight updates are ``log w ← (1-γ) log w + γ b + log p̃`` (:mod:`pmd.structured.sparse_gp`), and
  with ``γ_t = 1/t`` the weights return to uniform at the next pass end instead of counting the
  evidence twice.

Chosen over an annealed weight schedule (flatter weights over the same 16 box-uniform ``Z`` leave
the best particle's Titsias optimum as the ceiling, and a tempered mixture is not the posterior)
and over a random walk on ``Z`` (in ``M × d`` = 256 × 90 dimensions it would need tiny steps to be
accepted and could not bring an inducing input from the box's corners onto the data).

Cost: a round reads all ``N`` rows ``steps + 1`` times per particle: the kernel against the data
and the evidence of the resampled particles, ``O(l N M (M + d))``, then one read per proposal, which
recomputes only the ``block`` columns of the kept kernel and rows and columns of the unwhitened
statistics (:meth:`pmd.models.sparse_gp.DataKernel.replace`, ``O(l N block (M + d))`` plus ``O(l M³)``
for the evidence), and the KDE term ``O(block N d)``. The particles' chains run one after another
(:meth:`pmd.structured.sparse_gp.StructuredPMDGP.move`), each keeping its kernel's ``N M`` numbers
(H.3.2: 3.8 GB float64). Against every proposal's evidence computed afresh in
``O(N M (M + d))``, at H.3.2's settings (``N`` = 463,715, ``M`` = 1,024, ``d`` = 90, block 4), the
block update is measured in ``benchmarks/bench_inducing_moves.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from jax.scipy.special import logsumexp

from ..interface import ConfigError, require_positive_int
from ..models.sparse_gp import DataKernel, SparseGP, evidence_from_statistics, squared_distances

Array = jax.Array
KEYS = ("steps", "block", "bandwidth", "chunk_rows")


@dataclass(frozen=True)
class InducingMoves:
    """The settings of the moves (module docstring).

    Args:
        steps: Metropolis-Hastings steps per particle and round.
        block: inducing inputs each proposal redraws (``1 ≤ block ≤ M``).
        bandwidth: the KDE half's ``s`` as a multiple of the kernel's bandwidth σ.
        chunk_rows: rows per slice of the evidence's data pass (memory only).
    """

    steps: int
    block: int
    bandwidth: float = 0.1
    chunk_rows: int = 8192

    @classmethod
    def from_spec(cls, spec: Any, model: SparseGP) -> "InducingMoves":
        """Settings from a config mapping; a :class:`ConfigError` names a bad ``moves.<key>``."""
        if not isinstance(spec, dict):
            raise ConfigError(f"moves must be a mapping with keys {', '.join(KEYS)}, got {spec!r}")
        unknown = sorted(set(spec) - set(KEYS))
        if unknown:
            raise ConfigError(f"moves: unknown keys {unknown}; known: {', '.join(KEYS)}")
        for key in ("steps", "block"):
            if key not in spec:
                raise ConfigError(f"moves.{key} is required")
        steps = require_positive_int("moves.steps", spec["steps"])
        block = require_positive_int("moves.block", spec["block"])
        if block > model.num_inducing:
            raise ConfigError(f"moves.block must be at most num_inducing={model.num_inducing}, got {block}")
        bandwidth = spec.get("bandwidth", 0.1)
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float)) or not bandwidth > 0:
            raise ConfigError(f"moves.bandwidth must be a positive number, got {bandwidth!r}")
        chunk = require_positive_int("moves.chunk_rows", spec.get("chunk_rows", 8192))
        return cls(steps, block, float(bandwidth), chunk)

    def proposal_log_density(self, model: SparseGP, points: Array, x: Array) -> Array:
        """``log κ(z)`` for each row of ``points (k, d)`` inside the box (module docstring)."""
        dtype = points.dtype
        lo, hi = jnp.asarray(model.lower, dtype), jnp.asarray(model.upper, dtype)
        s = self.bandwidth * model.lengthscale
        log_uniform = -jnp.sum(jnp.log(hi - lo))
        d = points.shape[1]
        log_kde = (logsumexp(-0.5 * squared_distances(points, x) / s**2, axis=1) - math.log(x.shape[0])
                   - 0.5 * d * math.log(2.0 * math.pi * s**2))
        return jnp.logaddexp(log_uniform, log_kde) - math.log(2.0)

    def propose(self, key: Array, model: SparseGP, x: Array, dtype) -> Array:
        """``block`` independent draws from ``κ``: ``(block, d)``."""
        k_half, k_box, k_row, k_eps = jax.random.split(key, 4)
        d = model.dim
        lo, hi = jnp.asarray(model.lower, dtype), jnp.asarray(model.upper, dtype)
        box = jax.random.uniform(k_box, (self.block, d), dtype, lo, hi)
        rows = jax.random.randint(k_row, (self.block,), 0, x.shape[0])
        kde = x[rows] + self.bandwidth * model.lengthscale * jax.random.normal(k_eps, (self.block, d), dtype)
        return jnp.where(jax.random.bernoulli(k_half, 0.5, (self.block,))[:, None], box, kde)

    def move(self, key: Array, model: SparseGP, data: dict, z: Array,
             kernel: DataKernel | None = None) -> tuple[Array, ...]:
        """``steps`` π-invariant Metropolis-Hastings steps from ``z (M, d)`` (``kernel``: its
        :class:`~pmd.models.sparse_gp.DataKernel`, built here if not given); returns
        ``(Z, log p(y|Z), L, Λ, h, acceptance)``: the final ``Z``, its evidence, whitening factor,
        the natural parameters of ``p(v|y, Z)``, and the fraction of the steps accepted.

        The chain keeps the current ``Z``'s kernel against the data and its statistics
        (:class:`pmd.models.sparse_gp.DataKernel`, built once at the start); a proposal's statistics
        come from :meth:`~pmd.models.sparse_gp.DataKernel.replace` (the block's columns of the
        kernel, rows and columns of ``Φ``), its evidence from :func:`evidence_from_statistics`: the
        same ``p(y|Z')`` as a fresh :func:`~pmd.models.sparse_gp.collapsed_evidence`
        (``tests/test_sparse_gp_moves.py``), at ``O(N·block·(M + d) + M³)`` a step instead of
        ``O(N M (M + d))``. Memory: the kernel's ``N M`` numbers for the chain (run the particles'
        chains one after another, not vectorised, where that is large)."""
        x = jnp.asarray(data["x"])
        lo, hi = jnp.asarray(model.lower, z.dtype), jnp.asarray(model.upper, z.dtype)
        kernel = DataKernel.build(model, z, data, self.chunk_rows) if kernel is None else kernel

        def one(carry, k):
            z, kernel, log_ev, chol, prec, shift, accepted = carry
            k_block, k_new, k_u = jax.random.split(k, 3)
            block = jax.random.choice(k_block, z.shape[0], (self.block,), replace=False)
            new_points = self.propose(k_new, model, x, z.dtype)
            z_new, columns, phi, psi = kernel.replace(model, z, block, new_points)
            new = evidence_from_statistics(model, z_new, phi, psi, kernel.c)
            log_ratio = (new[0] - log_ev + jnp.sum(self.proposal_log_density(model, z[block], x))
                         - jnp.sum(self.proposal_log_density(model, new_points, x)))
            inside = jnp.all((new_points >= lo) & (new_points <= hi))
            # a NaN ratio (a failed Cholesky factor) compares false: the proposal is rejected
            accept = inside & (jnp.log(jax.random.uniform(k_u, dtype=z.dtype)) < log_ratio)
            keep = lambda a, b: jnp.where(accept, a, b)  # noqa: E731
            return (keep(z_new, z), kernel.accept(accept, block, columns, phi, psi),
                    *(keep(a, b) for a, b in zip(new, (log_ev, chol, prec, shift))), accepted + accept), None

        start = (z, kernel, *evidence_from_statistics(model, z, kernel.phi, kernel.psi, kernel.c),
                 jnp.asarray(0, jnp.int32))
        (z, _, log_ev, chol, prec, shift, accepted), _ = jax.lax.scan(one, start, jax.random.split(key, self.steps))
        return z, log_ev, chol, prec, shift, accepted.astype(z.dtype) / self.steps

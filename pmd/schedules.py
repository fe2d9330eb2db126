"""Step-size and particle-count schedules of PMD (Theorems 5 and 6, Appendix H).

Each schedule is a small frozen dataclass called with the 1-based iteration ``t`` (a traced
integer inside ``jit``). :func:`step_size` and :func:`particle_count` build them from config
values (a number, a ``{"kind": ..., ...}`` mapping, or a schedule object).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import jax.numpy as jnp


@dataclass(frozen=True)
class Harmonic:
    """``γ_t = η / t`` (Theorem 5). With ``η = 1`` the weighted-particle log-weights after ``T``
    steps are ``N`` times the average of the ``T`` batch log-likelihoods: over one pass, exactly
    the full-data log-likelihood."""

    eta: float = 1.0

    def __call__(self, t):
        return self.eta / t


@dataclass(frozen=True)
class SqrtDecay:
    """``γ_t = η / (n0 + √t)``, the paper's logistic-regression setting (H.2: ``1/(100+√t)``)."""

    eta: float = 1.0
    offset: float = 100.0

    def __call__(self, t):
        return self.eta / (self.offset + jnp.sqrt(t))


@dataclass(frozen=True)
class Constant:
    """``γ_t = γ``."""

    gamma: float

    def __call__(self, t):
        return jnp.asarray(self.gamma, dtype=jnp.float32) + 0.0 * t


@dataclass(frozen=True)
class ParticleConstant:
    """``m_t = m``."""

    final: int

    def __call__(self, t):
        return jnp.asarray(self.final, dtype=jnp.int32) + 0 * jnp.asarray(t, dtype=jnp.int32)


@dataclass(frozen=True)
class ParticlePower:
    """``m_t = min(m, ⌈m_1 t^p⌉)``: growing particles. Theorem 6 takes ``p = 2 + d/β`` for an
    ``O(1/T)`` rate; H.1 grows the particles and shrinks the bandwidth with them."""

    final: int
    initial: int = 100
    exponent: float = 1.0

    def __call__(self, t):
        grown = jnp.ceil(self.initial * jnp.asarray(t, jnp.float32) ** self.exponent)
        return jnp.minimum(self.final, grown).astype(jnp.int32)


@dataclass(frozen=True)
class Theorem6:
    """``γ_t = min{2/(t+1), Δ / (M m_t^{β/(d+2β)})}`` (Theorem 6). ``M`` bounds ``‖g_t‖∞`` and
    ``Δ⁻¹`` bounds the density from below; both are rarely known, which is why PMD also caps every
    step by the effective sample size (:func:`pmd.weights.cap_step_size`)."""

    particles: Callable
    dim: int
    delta: float = 1.0
    grad_bound: float = 1.0
    beta: float = 1.0

    def __call__(self, t):
        m = jnp.asarray(self.particles(t), jnp.float32)
        cap = self.delta / (self.grad_bound * m ** (self.beta / (self.dim + 2 * self.beta)))
        return jnp.minimum(2.0 / (t + 1.0), cap)


_STEP_SIZES = {"harmonic": Harmonic, "sqrt": SqrtDecay, "constant": Constant}


def step_size(spec: Any, *, particles: Callable | None = None, dim: int | None = None) -> Callable:
    """Build a step-size schedule from a number (constant), a mapping ``{"kind": k, ...}`` with
    ``k`` in harmonic | sqrt | constant | theorem6, or a callable ``t -> γ_t``."""
    if callable(spec):
        return spec
    if isinstance(spec, (int, float)) and not isinstance(spec, bool):
        if not 0 < spec <= 1:
            raise ValueError(f"a constant step size must lie in (0, 1], got {spec}")
        return Constant(float(spec))
    if isinstance(spec, Mapping):
        args = dict(spec)
        kind = args.pop("kind", None)
        if kind == "theorem6":
            return Theorem6(particles=particles, dim=dim, **args)
        if kind not in _STEP_SIZES:
            raise ValueError(f"unknown step-size kind {kind!r}; expected one of "
                             f"{sorted([*_STEP_SIZES, 'theorem6'])}")
        try:
            return _STEP_SIZES[kind](**args)
        except TypeError as err:
            raise ValueError(f"bad arguments for step size {kind!r}: {args} ({err})") from err
    raise ValueError(f"a step size is a number, a mapping with 'kind', or a callable; got {spec!r}")


def particle_count(spec: Any, final: int) -> Callable:
    """Build a particle schedule ending at ``final``: None (constant), ``{"kind": "power",
    "initial": m_1, "exponent": p}``, or a callable ``t -> m_t``."""
    if spec is None:
        return ParticleConstant(final)
    if callable(spec):
        return spec
    if isinstance(spec, Mapping):
        args = dict(spec)
        kind = args.pop("kind", None)
        if kind == "constant":
            return ParticleConstant(final)
        if kind == "power":
            initial = args.get("initial", 100)
            if not 1 <= initial <= final:
                raise ValueError(f"particle schedule: initial={initial} must lie in [1, num_particles={final}]")
            return ParticlePower(final=final, **args)
        raise ValueError(f"unknown particle schedule kind {kind!r}; expected constant | power")
    raise ValueError(f"a particle schedule is None, a mapping with 'kind', or a callable; got {spec!r}")

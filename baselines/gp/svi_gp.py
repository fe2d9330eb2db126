"""SVI for sparse GPs (Hensman, Fusi & Lawrence, "Gaussian processes for big data", UAI 2013).

``q(u) = N(m, S)`` for one fixed set of ``M`` inducing inputs, updated on each mini-batch by a
natural-gradient step of size ``ρ_t`` on the ELBO (their sec. 3.3): for a Gaussian likelihood the
natural gradient step is ``θ ← (1-ρ)θ + ρ θ̂_b``, with ``θ̂_b`` the natural parameters of the
optimal ``q`` for the batch scaled to the data size — the same affine map as F.1's prox step,
:func:`pmd.models.sparse_gp.prox_update` (whitened, as GPJax's ``NaturalGradients`` and GPflow
whiten too). Section 6 fixes every hyperparameter of the sparse GP, so neither the kernel nor
``Z`` is learnt; ``Z`` is ``M`` training inputs drawn at random (Hensman et al. initialise ``Z``
from the data), unless ``inducing="box"`` draws it uniformly on the box like one PMD particle.

The step size is H.3's ``ρ_t = η / (n₀ + √t)`` (any :func:`pmd.schedules.step_size` spec). With
``η/(n₀+√t)`` replaced by ``1/t`` one pass of disjoint batches lands exactly on Titsias' optimal
``q(u)`` (checked in ``tests/test_sparse_gp_baselines.py``).

Work (:func:`pmd.interface.work`): the closed-form step integrates each batch datum's likelihood
once, ``evals = B``, ``grad_evals = 0`` (structured PMD's count with one particle).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from pmd.interface import ConfigError, work
from pmd.models.sparse_gp import svgp_elbo
from pmd.structured.sparse_gp import StructuredPMDGP, SparseGPState, natural_step, prior_state

from .sod import random_rows, require_data

Array = jax.Array
INDUCING = ("data", "box")


class SVIGP(StructuredPMDGP):
    """Natural-gradient SVI on ``q(u)`` for fixed inducing inputs (module docstring).

    Args:
        model, data_size: as for :class:`pmd.structured.sparse_gp.StructuredPMDGP`.
        num_particles: must be 1 (one Gaussian).
        data: the training set (``Z`` is drawn from its inputs when ``inducing="data"``).
        step_size: as for structured PMD.
        inducing: ``"data"`` (default) or ``"box"``.
    """

    method_family = "variational inference"
    reference = "Hensman, Fusi & Lawrence, UAI 2013"

    def __init__(self, model, data_size: int, num_particles: int = 1, data: Any = None, step_size: Any = None,
                 inducing: str = "data"):
        if num_particles != 1:
            raise ConfigError(f"SVI-GP keeps one Gaussian q(u): num_particles must be 1, got {num_particles!r}")
        super().__init__(model, data_size, 1, step_size)
        if inducing not in INDUCING:
            raise ConfigError(f"inducing must be one of {', '.join(INDUCING)}, got {inducing!r}")
        self.inducing = inducing
        self.data = require_data(self.model, data, self.data_size) if inducing == "data" else None
        if inducing == "data":
            if self.model.num_inducing > self.data_size:
                raise ConfigError(f"num_inducing={self.model.num_inducing} exceeds the data's {self.data_size} rows")

    def init(self, key: Array) -> SparseGPState:
        """``Z`` = ``M`` random training inputs (or a uniform draw on the box); ``q(u)`` the prior."""
        if self.inducing == "box":
            return super().init(key)
        return prior_state(self.model, random_rows(key, self.data, self.model.num_inducing)["x"][None])

    def _step_impl(self, key: Array, state: SparseGPState, batch: dict) -> tuple[SparseGPState, dict]:
        rho = jnp.asarray(self.step_size(state.step + 1), state.shift.dtype)
        new, _ = natural_step(self.model, self.data_size, state, batch, rho)
        return new, {"gamma": rho, **work(batch["y"].shape[0])}

    def elbo(self, state: SparseGPState, data: dict) -> Array:
        """Hensman's bound (:func:`pmd.models.sparse_gp.svgp_elbo`) of the current ``q(u)`` on ``data``."""
        post = self.posterior(state)
        return svgp_elbo(self.model, post.inducing[0], post.chol_k[0], post.loc[0], post.scale[0], data,
                         self.data_size)

"""Stochastic-gradient MCMC: SGLD, one chain (Welling & Teh 2011) and parallel chains.

The LDA sampler of this family (SGRLD, Patterson & Teh 2013) lives with the other LDA methods in
:mod:`baselines.lda`, since it runs only on :class:`pmd.models.lda.LDA`.
"""

from .sgld import SGLD, ParallelSGLD, ParallelSGLDState, SGLDState, langevin_update

__all__ = ["SGLD", "ParallelSGLD", "SGLDState", "ParallelSGLDState", "langevin_update"]

"""Sequential Monte Carlo: one-pass SMC over the data (Balakrishnan & Madigan 2006).

The model-specific SMCs built on it are in :mod:`baselines.gp` (over inducing values) and
:mod:`baselines.lda` (over topic assignments); BlackJAX's tempered SMCs are in :mod:`baselines.peers`.
"""

from .one_pass import OnePassSMC, SMCState

__all__ = ["OnePassSMC", "SMCState"]

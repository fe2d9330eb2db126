"""Gibbs samplers by data augmentation: the Welling-Teh mixture (component indicators) and
Bayesian logistic regression (Pólya-Gamma variables, Polson, Scott & Windle 2013)."""

from .mixture import GibbsState, MixtureGibbs
from .polya_gamma import PolyaGammaGibbs

__all__ = ["MixtureGibbs", "GibbsState", "PolyaGammaGibbs"]

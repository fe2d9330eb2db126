"""Variational inference: black-box SVI (Gaussian), NPV (Gershman, Hoffman & Blei 2012) and its
stochastic form, the Jaakkola-Jordan SVI for logistic regression, and SVGD (Liu & Wang 2016) with
OPVI's growing batch (Yang, Liu & Zhang).

The model-specific SVIs are in :mod:`baselines.gp` (Hensman et al. 2013) and :mod:`baselines.lda`
(online VB, Hoffman et al. 2010); NumPyro's SVI is in :mod:`baselines.peers`.
"""

from .jj_svi import JaakkolaJordanSVI
from .npv import NPV, NPVState, StochasticNPV, second_order_elbo
from .svgd import SVGD, SVGDState
from .svi import SVI, SVIState

__all__ = ["SVI", "SVIState", "NPV", "StochasticNPV", "NPVState", "second_order_elbo", "JaakkolaJordanSVI",
           "SVGD", "SVGDState"]

"""The competitors of Particle Mirror Descent in Dai, He, Dai & Song (AISTATS 2016), sec. 6 and H.1.

Every method has :class:`pmd.PMD`'s interface — ``Method(model, data_size=N, num_particles=m,
**hyperparameters)``, ``init``, a pure jitted ``step`` and ``posterior`` — so :func:`pmd.run`, the
metrics and the reports treat them alike. ``METHODS`` maps the workflow's method names to classes.

Grouped by family, as BlackJAX does: :mod:`.sgmcmc` (SGLD), :mod:`.smc` (one-pass SMC), :mod:`.vi`
(SVI, NPV, Jaakkola-Jordan SVI, SVGD/OPVI), :mod:`.bootstrap` (NPL's posterior bootstrap),
:mod:`.gibbs` (mixture and Pólya-Gamma Gibbs); the methods that run on one model only are grouped by that model, :mod:`.gp` (sparse GPs) and :mod:`.lda`;
:mod:`.peers` adds the SMC, SVI and SVGD a user would take from BlackJAX and NumPyro instead.
"""

from .bootstrap import NPLState, PosteriorBootstrap
from .gibbs import GibbsState, MixtureGibbs
from .peers import BlackJAXSVGD, DataTemperedSMC, NumPyroSVI, TemperedSMC
from .sgmcmc import SGLD, ParallelSGLD, ParallelSGLDState, SGLDState, langevin_update
from .smc import OnePassSMC, SMCState
from .vi import NPV, SVGD, NPVState, StochasticNPV, SVGDState, SVI, SVIState, second_order_elbo

METHODS = {
    "sgld": SGLD,
    "sgld_parallel": ParallelSGLD,
    "smc": OnePassSMC,
    "svi": SVI,
    "gibbs": MixtureGibbs,
    "npv": StochasticNPV,
    "npv_full": NPV,
    "blackjax_tempered_smc": TemperedSMC,
    "blackjax_data_smc": DataTemperedSMC,
    "numpyro_svi": NumPyroSVI,
    "npl": PosteriorBootstrap,
    "svgd": SVGD,
    "blackjax_svgd": BlackJAXSVGD,
}

__all__ = [
    "METHODS",
    "SGLD",
    "ParallelSGLD",
    "SGLDState",
    "ParallelSGLDState",
    "langevin_update",
    "OnePassSMC",
    "SMCState",
    "SVI",
    "SVIState",
    "MixtureGibbs",
    "GibbsState",
    "NPV",
    "StochasticNPV",
    "NPVState",
    "second_order_elbo",
    "TemperedSMC",
    "DataTemperedSMC",
    "NumPyroSVI",
    "PosteriorBootstrap",
    "NPLState",
    "SVGD",
    "SVGDState",
    "BlackJAXSVGD",
]

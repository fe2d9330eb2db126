"""The competitors of Particle Mirror Descent in Dai, He, Dai & Song (AISTATS 2016), sec. 6 and H.1.

Every method has :class:`pmd.PMD`'s interface — ``Method(model, data_size=N, num_particles=m,
**hyperparameters)``, ``init``, a pure jitted ``step`` and ``posterior`` — so :func:`pmd.run`, the
metrics and the reports treat them alike. The workflow's names for them are in its registry
(:data:`pmd_bench.workflow.methods.BUILTIN`).

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

__all__ = [
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

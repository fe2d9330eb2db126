"""The competitors of Particle Mirror Descent in Dai, He, Dai & Song (AISTATS 2016), sec. 6 and H.1.

Every method has :class:`pmd.PMD`'s interface — ``Method(model, data_size=N, num_particles=m,
**hyperparameters)``, ``init``, a pure jitted ``step`` and ``posterior`` — so :func:`pmd.run`, the
metrics and the reports treat them alike. ``METHODS`` maps the workflow's method names to classes.
:mod:`baselines.peers` adds the SMC and SVI a user would take from BlackJAX and NumPyro instead.
"""

from .gibbs import GibbsState, MixtureGibbs
from .npv import NPV, MixturePosterior, NPVState, StochasticNPV, second_order_elbo
from .peers import DataTemperedSMC, NumPyroSVI, TemperedSMC
from .sgld import SGLD, ParallelSGLD, ParallelSGLDState, SGLDState, langevin_update
from .smc import OnePassSMC, SMCState
from .svi import SVI, SVIState

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
    "MixturePosterior",
    "second_order_elbo",
    "TemperedSMC",
    "DataTemperedSMC",
    "NumPyroSVI",
]

"""The LDA competitors of structured PMD in section 6 of Dai et al. (2016), one module each:

* :mod:`.online_vb`: online variational Bayes (Hoffman, Blei & Bach 2010), the paper's SVI;
* :mod:`.sgrld`: stochastic gradient Riemannian Langevin dynamics (Patterson & Teh 2013);
* :mod:`.smc`: sequential Monte Carlo for LDA with rejuvenation (Canini, Shi & Griffiths 2009).

Each has the interface of :mod:`pmd.interface` with a :class:`pmd.models.lda.LDA` as its model.
"""

from .online_vb import OnlineVB, OnlineVBState
from .sgrld import SGRLD, SGRLDState
from .smc import LDASMC, LDASMCState

__all__ = ["OnlineVB", "OnlineVBState", "SGRLD", "SGRLDState", "LDASMC", "LDASMCState"]

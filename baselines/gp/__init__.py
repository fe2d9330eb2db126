"""The sparse-GP competitors of structured PMD (Dai et al. 2016, section 6, H.3).

* :class:`SVIGP`: SVI for sparse GPs, natural-gradient steps on ``q(u)`` (Hensman, Fusi &
  Lawrence, UAI 2013);
* :class:`SubsetOfData`: the exact GP on a random subset of the data (Rasmussen & Williams 2006,
  sec. 8.3.1; "SoD" of [35]);
* :class:`OnePassSMCGP`: one-pass SMC over the inducing values, initialised at the SoD solution
  (H.3.2).

Each has the interface of :mod:`pmd.interface` and returns a
:class:`pmd.models.sparse_gp.SparseGPPosterior`, like :class:`pmd.structured.sparse_gp.StructuredPMDGP`.
"""

from .smc_gp import OnePassSMCGP, SMCGPState
from .sod import SubsetOfData
from .svi_gp import SVIGP

__all__ = ["SVIGP", "SubsetOfData", "OnePassSMCGP", "SMCGPState"]

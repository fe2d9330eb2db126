"""Structured PMD (Dai et al. 2016, Appendix F): particles over the latent variables the model's
conditionals cannot integrate, closed forms for the rest. :mod:`.lda`: LDA (F.2); :mod:`.sparse_gp`: sparse GPs (F.1)."""

from .lda import StructuredLDAState, StructuredPMDLDA

__all__ = ["StructuredPMDLDA", "StructuredLDAState"]

"""Bootstrap methods: the posterior bootstrap of nonparametric learning (Fong, Lyddon & Holmes 2019)."""

from .npl import NPLState, PosteriorBootstrap

__all__ = ["PosteriorBootstrap", "NPLState"]

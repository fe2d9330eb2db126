"""pmd: Particle Mirror Descent (Dai, He, Dai & Song, AISTATS 2016) in JAX.

The library has no dependency on the workflow, MLflow or Snakemake: ``Model`` + a method
(``PMD`` or any of ``baselines``) + ``run`` is all a user needs.
"""

from .algorithm import PMD, PMDState
from .interface import ConfigError, InferenceMethod
from .model import Model, ModelError
from .posterior import GaussianPosterior, KDEPosterior, MixturePosterior, ParticlePosterior, Posterior
from .runner import RunResult, run

__version__ = "0.1.0"

__all__ = [
    "PMD",
    "PMDState",
    "ConfigError",
    "InferenceMethod",
    "Model",
    "ModelError",
    "GaussianPosterior",
    "KDEPosterior",
    "MixturePosterior",
    "ParticlePosterior",
    "Posterior",
    "RunResult",
    "run",
    "__version__",
]

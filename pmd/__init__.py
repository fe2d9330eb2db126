"""pmd: Particle Mirror Descent (Dai, He, Dai & Song, AISTATS 2016) in JAX.

The library has no dependency on the workflow, MLflow or Snakemake: ``Model`` + a method
(``PMD`` or any of ``baselines``) + ``run`` is all a user needs.

Numerics: importing ``pmd`` sets JAX's default matmul precision to ``"highest"`` (unless the
environment variable ``JAX_DEFAULT_MATMUL_PRECISION`` chose one). On CPU float32 products are
exact already and nothing changes; on NVIDIA GPUs JAX's default runs float32 products in TF32
(10-bit mantissa), a relative error of about 1e-3 in every ``x·w``. A PMD step multiplies the
batch's mean log-likelihood by ``N γ`` (eq. 5), N up to millions, so such errors move the weights
(measured on an H100: the logistic log-likelihoods off by 1.3e-3 relative, the KDE iterate's mean
and NPV's stationary point off their exact values). The whole process, the user's own model
included, gets full float32 products; set the variable to ``"default"`` to take TF32 back.
"""

import os as _os

import jax as _jax

if "JAX_DEFAULT_MATMUL_PRECISION" not in _os.environ:
    _jax.config.update("jax_default_matmul_precision", "highest")

from .algorithm import PMD, PMDState
from .interface import ConfigError, InferenceMethod
from .model import Model, ModelError
from .posterior import GaussianPosterior, KDEPosterior, MixturePosterior, ParticlePosterior, Posterior, own_draws
from .runner import RunResult, run, run_batched

__version__ = "0.1.0"


def __getattr__(name: str):
    """``pmd.from_pymc`` (:mod:`pmd.pymc`) and ``pmd.from_numpyro`` (:mod:`pmd.numpyro`), imported on
    first use so that ``import pmd`` never imports PyMC or NumPyro."""
    if name == "from_pymc":
        from .pymc import from_pymc

        return from_pymc
    if name == "from_numpyro":
        from .numpyro import from_numpyro

        return from_numpyro
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "own_draws",
    "RunResult",
    "run",
    "run_batched",
    "__version__",
]

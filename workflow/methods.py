"""The registry of inference methods the workflow can run, by config name."""

from __future__ import annotations

import inspect
from typing import Any

import jax

import pmd
from pmd_bench import baselines
from pmd_bench.baselines import lda as _lda_baselines
from pmd_bench.baselines.gp import SVIGP, OnePassSMCGP, SubsetOfData
from pmd_bench.baselines.gibbs import PolyaGammaGibbs
from pmd_bench.baselines.vi import JaakkolaJordanSVI
from pmd_bench.baselines.peers.gpjax_sgp import GPJaxSVGP, GPJaxSVGPLearned
from pmd import ConfigError, InferenceMethod, Model
from pmd.structured.lda import StructuredPMDLDA
from pmd.structured.sparse_gp import StructuredPMDGP

# the model-specific logistic-regression competitors (section 6) beside the generic baselines
METHODS: dict[str, type] = {"pmd": pmd.PMD, **baselines.METHODS, "jj_svi": JaakkolaJordanSVI,
                            "pg_gibbs": PolyaGammaGibbs}
# the sparse-GP methods (section 6, H.3): structured PMD (F.1), its competitors and GPJax's SVGP, with
# Z and the hyperparameters fixed (as section 6) or learned (as its users run it)
METHODS.update({"pmd_gp": StructuredPMDGP, "svi_gp": SVIGP, "smc_gp": OnePassSMCGP, "sod": SubsetOfData,
                "gpjax_svgp": GPJaxSVGP, "gpjax_svgp_learned": GPJaxSVGPLearned})
# the LDA methods (section 6, H.4): structured PMD (F.2) and its competitors (the peer libraries,
# which are not JAX methods, run through workflow.experiments.lda)
METHODS.update({"pmd_lda": StructuredPMDLDA, **_lda_baselines.METHODS})


RUN_KEYS = ("batch_size", "num_passes", "eval_every")


def split_spec(label: str, spec: dict[str, Any], defaults: dict[str, Any]) -> tuple[dict, dict]:
    """Split a config entry into the method's constructor arguments and its run settings.

    A method entry may override the experiment's ``batch_size``, ``num_passes`` and
    ``eval_every`` (Gibbs sweeps the whole data set per step, so it needs far fewer steps).
    """
    spec = dict(spec)
    run = {key: spec.pop(key, defaults[key]) for key in RUN_KEYS}
    return spec, run


def build(label: str, spec: dict[str, Any], model: Model, data: Any, num_steps: int) -> InferenceMethod:
    """Construct the method a config entry describes.

    ``spec`` holds the constructor's keyword arguments and optionally ``method`` (the registry
    name, defaulting to ``label``), so one method can appear under several labels with different
    settings. Methods whose constructor takes ``data`` (Gibbs, full-data NPV) receive the data set;
    those that take ``num_steps`` (to check a burn-in against the run length) receive it.
    """
    spec = dict(spec)
    name = spec.pop("method", label)
    if name not in METHODS:
        raise ConfigError(f"method {label!r}: unknown method {name!r}; known: {', '.join(sorted(METHODS))}")
    cls = METHODS[name]
    accepted = inspect.signature(cls).parameters
    if "data" in accepted:
        spec["data"] = data
    if "num_steps" in accepted and "num_steps" not in spec:
        spec["num_steps"] = num_steps
    try:
        return cls(model, data_size=int(jax.tree_util.tree_leaves(data)[0].shape[0]), **spec)
    except TypeError as err:
        raise ConfigError(f"method {label!r} ({name}): bad arguments {sorted(spec)}: {err}") from err

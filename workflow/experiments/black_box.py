"""Table 1's "black box" column, measured: on which of the project's models does each method of
the registry run with no model-specific code?

Table 1 (Dai et al. 2016, section 5) calls static SMC, SGLD and PMD black box (they need only the
log-density's value and gradient: a :class:`pmd.Model`), SVI and NPV not. Here every method of
:data:`workflow.methods.METHODS` is built with the settings a config gives it (the first entry
naming it in any experiment section; its constructor's defaults where no config entry does) and
handed each of the project's models with a small data set of that model's own shape: the
conjugate Gaussian, the Welling-Teh mixture and Bayesian logistic regression (the
:class:`pmd.Model` s), the sparse GP (F.1) and LDA (F.2) (structured models). A method *runs* on
a model when ``init``, two ``step`` s and ``posterior`` return without an error and its state
holds no NaN. Nothing is hand-listed: the registry, the configs and the models decide.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from pmd import Model
from pmd.interface import take_step
from pmd.models import lda
from pmd.models.conjugate import ConjugateGaussian
from pmd.models.logistic import BayesianLogisticRegression, labelled
from pmd.models.mixture import WellingTehMixture
from pmd.models.sparse_gp import SparseGP

from .. import methods

PROBE_ROWS = 120  # LDA's SMC rejuvenates 100 past documents: the corpus must hold more
PROBE_STEPS = 2
PROBE_PARTICLES = 20  # for a method no config entry sizes


def probe_problems(seed: int = 0) -> dict[str, tuple[Any, Any]]:
    """``name -> (model, data)``: each of the project's models with ``PROBE_ROWS`` rows of its data."""
    rng = np.random.default_rng(seed)
    n = PROBE_ROWS
    x = rng.standard_normal((n, 2)).astype(np.float32)
    logistic = labelled(x, np.where(x[:, 0] > 0, 1, -1), bias=True)
    counts = sp.csr_matrix(rng.poisson(0.5, (n, 20)) + np.eye(n, 20, dtype=np.int64))
    return {
        "conjugate": (ConjugateGaussian(dim=2).model(), ConjugateGaussian(dim=2).simulate(seed, n)[1].astype(np.float32)),
        "mixture": (WellingTehMixture().model(), WellingTehMixture().simulate(seed, n)),
        "logistic": (BayesianLogisticRegression(3, 1.0).model(), logistic),
        "sparse_gp": (SparseGP.from_data(x, noise_variance=0.01, num_inducing=8, jitter=1e-5),
                      {"x": x, "y": np.sin(x[:, 0]).astype(np.float32)}),
        "lda": (lda.LDA(3, 20, 0.1, 0.01), lda.tokens(counts)),
    }


def configured(cfg: dict, registry: Mapping[str, type] = methods.METHODS) -> dict[str, dict]:
    """Registry name -> ``{"experiments": [...], "spec": {...}}`` from every experiment section of
    ``cfg`` with ``methods`` (``spec``: the first entry's constructor arguments), for the names in
    ``registry`` (default: the JAX methods; docs/methods.md adds the LDA peer libraries)."""
    out: dict[str, dict] = {}
    for experiment, section in cfg.items():
        if not isinstance(section, dict) or not isinstance(section.get("methods"), dict):
            continue
        for label, entry in section["methods"].items():
            spec = {k: v for k, v in (entry or {}).items() if k not in methods.RUN_KEYS}
            name = spec.pop("method", label)
            if name not in registry:
                continue  # by default a peer library run by its experiment, not a registry method
            record = out.setdefault(name, {"experiments": [], "spec": spec})
            if experiment not in record["experiments"]:
                record["experiments"].append(experiment)
    return out


def _finite(tree: Any) -> bool:
    return all(bool(jnp.all(jnp.isfinite(leaf))) for leaf in jax.tree_util.tree_leaves(tree)
               if hasattr(leaf, "dtype") and jnp.issubdtype(leaf.dtype, jnp.inexact))


def probe(name: str, spec: dict, model: Any, data: Any) -> str | None:
    """``None`` when method ``name`` runs on ``(model, data)`` (module docstring), else why not.

    The method takes ``PROBE_STEPS`` steps past its configured ``burn_in`` (a chain's posterior
    needs retained samples); it is built for a long run, so no run-length check refuses it.
    """
    data = jax.tree_util.tree_map(jnp.asarray, data)
    batch = jax.tree_util.tree_map(lambda a: a[:10], data)
    required = inspect.signature(methods.METHODS[name]).parameters.get("num_particles")
    if "num_particles" not in spec and required is not None and required.default is inspect.Parameter.empty:
        spec = {**spec, "num_particles": PROBE_PARTICLES}
    try:
        algo = methods.build(name, spec, model, data, 10**6)
        key = jax.random.key(0)
        state = algo.init(key)
        for k in jax.random.split(key, PROBE_STEPS + int(spec.get("burn_in", 0))):
            state, _ = take_step(algo, k, state, batch, jnp.arange(10))
        algo.posterior(state)
    except Exception as err:  # noqa: BLE001  (any failure is the measurement: the method does not run here)
        return f"{type(err).__name__}: {str(err).splitlines()[0][:160] if str(err) else ''}"
    return None if _finite(state) else "the state holds NaN or inf"


def measure(cfg: dict, only: list[str] | None = None) -> dict:
    """Every registry method (or those named in ``only``) probed on every model: where it runs,
    where it fails and why, and the experiments of ``cfg`` that run it."""
    unknown = sorted(set(only or []) - set(methods.METHODS))
    if unknown:
        raise ValueError(f"table1.black_box.methods: {', '.join(unknown)} not in the method registry "
                         f"({', '.join(sorted(methods.METHODS))})")
    problems = probe_problems()
    generic = [name for name, (model, _) in problems.items() if isinstance(model, Model)]
    seen = configured(cfg)
    rows = {}
    for name in sorted(only or methods.METHODS):
        spec = seen.get(name, {}).get("spec", {})
        failures = {problem: probe(name, spec, model, data) for problem, (model, data) in problems.items()}
        runs_on = [p for p, why in failures.items() if why is None]
        rows[name] = {"class": methods.METHODS[name].__name__, "configured_in": seen.get(name, {}).get("experiments", []),
                      "spec": spec, "runs_on": runs_on, "fails_on": {p: why for p, why in failures.items() if why},
                      "black_box": set(generic) <= set(runs_on)}
    return {"models": list(problems), "generic_models": generic, "methods": rows}

"""Bring your own model: every method on a user's PyMC model, scored as on posteriordb.

The config's ``custom`` section names model files (:mod:`workflow.model_file`: a Python file whose
``model()`` returns a ``pymc.Model`` with its observed data)::

    custom:
      models:
        linreg: examples/custom_model.py       # name -> file, relative to the working directory
      seeds: 1
      steps_per_pass: 50
      num_passes: 5
      eval_samples: 300
      reference: {chains: 4, draws: 1000, tune: 1000, seed: 0}
      methods: {pmd: {num_particles: 300}, ...}

For each model:

* :func:`make_reference` writes its reference draws: the file's own ``reference_draws()`` when it
  defines one, else NUTS on the PyMC model (:func:`workflow.reference.sample_nuts`, NumPyro's
  sampler, chains one after another) refused unless every free variable passes the convergence
  gate (:func:`workflow.reference.check_convergence`: split-R̂ ≤ 1.01, bulk and tail ESS ≥ 400, no
  divergence). Run in its own process: PyMC's JAX sampler turns on float64.
* :func:`make_floor` and :func:`run_one` are the posteriordb experiment's
  (:func:`.posteriordb.floor_of`, :func:`.posteriordb.run_problem`): the same budget rule (whole
  passes in batches of ``⌈N / steps_per_pass⌉`` rows), the same scorer from ``eval_samples`` draws of
  each method's own distribution on the reference columns, the same floor (``eval_samples`` draws
  of the last reference chain against the others) and failed runs recorded, not raised. So the
  posteriordb report (its tables, heat map) and the cost report (``max |mean error| ≤ 0.5
  reference sd and max |log sd ratio| ≤ 0.3``) read its results unchanged.

The tuning protocol (:mod:`workflow.tuning`, ``pmd-bench tune custom``) chooses a gridded label's
settings on each model's rows as on posteriordb; a one-datum model is not tuned.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from .. import model_file
from ..results import load_npz, save_npz
from . import posteriordb

EXPERIMENT = "custom"


def _entry(cfg: dict, name: str) -> dict:
    if name not in cfg["models"]:
        raise ValueError(f"custom: model {name!r} is not in the config's custom.models ({', '.join(cfg['models'])})")
    entry = cfg["models"][name]
    if entry is None:
        raise ValueError(f"custom: model {name!r} is left out (null) in the config's custom.models")
    return {"file": entry} if isinstance(entry, str) else entry


def load(cfg: dict, name: str) -> model_file.ModelFile:
    """The model file of ``custom.models.<name>``, loaded and converted."""
    return model_file.load(_entry(cfg, name)["file"], name)


def load_reference(path: str | Path, problem) -> np.ndarray:
    """The reference draws written by :func:`make_reference` as ``(chains, draws, k)``; raises
    ``ValueError`` naming the file when its columns are not the model's (the model file changed)."""
    arrays, meta = load_npz(path)
    if tuple(meta["columns"]) != tuple(problem.columns):
        raise ValueError(f"{path}: reference columns {meta['columns']} are not the model's {list(problem.columns)}; "
                         "make the reference again")
    return arrays["draws"]


def nuts_draws(loaded: model_file.ModelFile, ref: dict) -> tuple[np.ndarray, dict]:
    """NUTS draws of the model's free variables, ``(chains, draws, k)`` in ``problem.columns`` order,
    and the convergence gate's diagnostics (the worst over the free variables). In float64, as
    PyMC's JAX samplers run by default (:func:`pmd.from_pymc` restored float32 for the methods)."""
    import jax

    from ..reference import check_convergence, sample_nuts

    jax.config.update("jax_enable_x64", True)
    idata = sample_nuts(loaded.pm_model, draws=ref["draws"], tune=ref["tune"], chains=ref["chains"],
                        seed=ref.get("seed", 0), target_accept=ref.get("target_accept", 0.8))
    diagnostics = [check_convergence(idata, rv.name) for rv in loaded.pm_model.free_RVs]
    worst = {"rhat_max": max(d["rhat_max"] for d in diagnostics),
             "ess_bulk_min": min(d["ess_bulk_min"] for d in diagnostics),
             "ess_tail_min": min(d["ess_tail_min"] for d in diagnostics),
             "divergences": diagnostics[0]["divergences"]}
    chains, draws = ref["chains"], ref["draws"]
    blocks = [np.asarray(idata.posterior[rv.name].values, np.float64).reshape(chains, draws, -1)
              for rv in loaded.pm_model.free_RVs]
    return np.concatenate(blocks, axis=-1), worst


def make_reference(cfg: dict, name: str, out: str | Path) -> dict:
    """Write ``out`` (.npz): ``draws`` ``(chains, draws, k)`` and meta ``{"model", "file", "columns",
    "source", "diagnostics", "seconds"}`` (module docstring: the file's draws, else NUTS behind the gate)."""
    t0 = time.perf_counter()
    loaded = load(cfg, name)
    if loaded.reference_draws is not None:
        draws, source, diagnostics = loaded.reference(), f"{loaded.path}: reference_draws()", {}
    else:
        draws, diagnostics = nuts_draws(loaded, cfg["reference"])
        source = "NUTS (PyMC model, NumPyro sampler)"
    meta = {"model": name, "file": str(loaded.path), "columns": list(loaded.problem.columns), "source": source,
            "diagnostics": diagnostics, "seconds": time.perf_counter() - t0, "chains": int(draws.shape[0]),
            "draws": int(draws.shape[1])}
    save_npz(out, {"draws": draws}, meta)
    return meta


def make_floor(cfg: dict, name: str, reference: str | Path, out: str | Path) -> dict:
    """:func:`.posteriordb.floor_of` of model ``name`` at the section's ``eval_samples``."""
    problem = load(cfg, name).problem
    return posteriordb.floor_of(problem, load_reference(reference, problem), out, cfg["eval_samples"])


def run_one(cfg: dict, label: str, name: str, seed: int, reference: str | Path, out: str | Path, uri: str,
            experiment: str, params: dict[str, Any] | None = None) -> dict:
    """Run method ``label`` with ``seed`` on model ``name``, scored against ``reference``
    (:func:`make_reference`'s file); :func:`.posteriordb.run_problem` writes ``out`` and the MLflow run."""
    if params is None and label not in cfg["methods"]:
        raise ValueError(f"custom: method {label!r} is not in the config's custom.methods ({', '.join(cfg['methods'])})")
    problem = load(cfg, name).problem
    draws = load_reference(reference, problem)
    return posteriordb.run_problem(cfg, label, problem, draws, [seed], [out], uri, experiment, params, EXPERIMENT)[0]

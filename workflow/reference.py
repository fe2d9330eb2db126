"""Reference posteriors by NUTS (PyMC's model, NumPyro's sampler) with a convergence gate.

:func:`sample_nuts` runs ``pymc.sample(nuts_sampler="numpyro")`` with several chains and
:func:`check_convergence` refuses the draws unless ArviZ's rank-normalised split-R̂ (Vehtari et
al., Bayesian Analysis 2021) is at most ``max_rhat`` (their recommendation: 1.01) and the bulk and
tail effective sample sizes are at least ``min_ess`` for every coordinate, with no more than
``max_divergences`` divergent transitions.

Importing PyMC's JAX samplers switches JAX to float64 for the whole process, so a reference is
made in its own process (the ``pmd-bench reference`` verb, one Snakemake rule), never beside runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class ConvergenceError(RuntimeError):
    """The reference sampler's chains failed the convergence gate; the message says which check."""


def check_convergence(idata: Any, var_name: str, *, max_rhat: float = 1.01, min_ess: float = 400.0,
                      max_divergences: int = 0) -> dict[str, float]:
    """Return the diagnostics of ``idata.posterior[var_name]`` or raise :class:`ConvergenceError`.

    Keys: ``rhat_max``, ``ess_bulk_min``, ``ess_tail_min``, ``divergences``, ``chains``, ``draws``.
    """
    import arviz as az

    post = idata.posterior[var_name]
    chains, draws = int(post.sizes["chain"]), int(post.sizes["draw"])
    if chains < 2:
        raise ConvergenceError(f"R-hat needs at least 2 chains, got {chains}")
    rhat = np.asarray(az.rhat(idata, var_names=[var_name])[var_name])
    ess_bulk = np.asarray(az.ess(idata, var_names=[var_name], method="bulk")[var_name])
    ess_tail = np.asarray(az.ess(idata, var_names=[var_name], method="tail")[var_name])
    divergences = int(np.asarray(idata.sample_stats["diverging"]).sum()) if "sample_stats" in idata.groups() \
        and "diverging" in idata.sample_stats else 0
    out = {"rhat_max": float(np.max(rhat)), "ess_bulk_min": float(np.min(ess_bulk)),
           "ess_tail_min": float(np.min(ess_tail)), "divergences": divergences, "chains": chains, "draws": draws}
    failures = []
    if not out["rhat_max"] <= max_rhat:
        failures.append(f"max R-hat {out['rhat_max']:.4f} > {max_rhat} (coordinate {int(np.argmax(rhat))})")
    if not out["ess_bulk_min"] >= min_ess:
        failures.append(f"min bulk ESS {out['ess_bulk_min']:.0f} < {min_ess} (coordinate {int(np.argmin(ess_bulk))})")
    if not out["ess_tail_min"] >= min_ess:
        failures.append(f"min tail ESS {out['ess_tail_min']:.0f} < {min_ess} (coordinate {int(np.argmin(ess_tail))})")
    if divergences > max_divergences:
        failures.append(f"{divergences} divergent transitions > {max_divergences}")
    if failures:
        raise ConvergenceError(f"NUTS reference for {var_name!r} ({chains} chains x {draws} draws) failed the "
                               "convergence gate: " + "; ".join(failures) + ". Run more tuning or draws.")
    return out


def sample_nuts(model: Any, *, draws: int, tune: int, chains: int, seed: int, target_accept: float = 0.8) -> Any:
    """NUTS on a PyMC model with NumPyro's sampler, chains one after another (one CPU device); NumPyro's
    progress bar (iterations, time left) on stderr unless ``TQDM_DISABLE`` is set."""
    import os

    import pymc as pm

    return pm.sample(draws=draws, tune=tune, chains=chains, random_seed=seed, nuts_sampler="numpyro",
                     target_accept=target_accept, progressbar=not os.environ.get("TQDM_DISABLE"), model=model,
                     nuts_sampler_kwargs={"chain_method": "sequential"})

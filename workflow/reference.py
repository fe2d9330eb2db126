"""Reference posteriors by NUTS (PyMC's model, NumPyro's sampler) with a convergence gate.

:func:`sample_nuts` runs ``pymc.sample(nuts_sampler="numpyro")`` with several chains and
:func:`check_convergence` refuses the draws unless ArviZ's rank-normalised split-R̂ (Vehtari et
al., Bayesian Analysis 2021) is at most ``max_rhat`` (their recommendation: 1.01) and the bulk and
tail effective sample sizes are at least ``min_ess`` for every coordinate, with no more than
``max_divergences`` divergent transitions.

:func:`sample_nuts_laplace` is the same sampler for posteriors of very many data points, where
NUTS's own warm-up (a diagonal metric learnt from scratch) costs hours: NumPyro's NUTS on a
JAX log density with the dense metric fixed to the Laplace approximation's covariance
``(-∇² log p(θ̂|X))⁻¹`` at the mode ``θ̂`` (:func:`laplace_approximation`), chains started from
an overdispersed Gaussian around the mode, only the step size adapted. The chain, not the
Laplace approximation, is the reference: the metric only preconditions it, and the same gate
applies.

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


def laplace_approximation(logdensity: Any, init: Any, *, max_iter: int = 100,
                          tol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """``(mode, covariance)``: the mode of ``logdensity`` by Newton's method with step halving, and
    ``(-∇² log p)⁻¹`` there (the Laplace approximation).

    Stops when the Newton decrement ``gᵀH⁻¹g / 2`` is below ``tol`` (nats). Raises
    :class:`ConvergenceError` if that takes more than ``max_iter`` steps, if the Hessian at the
    mode is not negative definite, or if no step halving increases the log density.
    """
    import jax
    import jax.numpy as jnp

    value_and_grad = jax.jit(jax.value_and_grad(logdensity))
    hessian = jax.jit(jax.hessian(logdensity))
    value = jax.jit(logdensity)
    theta = jnp.asarray(init)
    for _ in range(max_iter):
        f, g = value_and_grad(theta)
        precision = -np.asarray(hessian(theta), np.float64)
        try:
            chol = np.linalg.cholesky(precision)
        except np.linalg.LinAlgError as err:
            raise ConvergenceError(f"Laplace approximation: the Hessian at {np.asarray(theta)[:4]}... is not "
                                   "negative definite") from err
        direction = np.linalg.solve(chol.T, np.linalg.solve(chol, np.asarray(g, np.float64)))
        decrement = float(np.asarray(g, np.float64) @ direction) / 2
        if decrement < tol:
            return np.asarray(theta, np.float64), np.linalg.inv(precision)
        for _halving in range(40):
            proposal = theta + jnp.asarray(direction, theta.dtype)
            if float(value(proposal)) > float(f):
                break
            direction = direction / 2
        else:
            raise ConvergenceError("Laplace approximation: no step along Newton's direction increases the "
                                   f"log density (decrement {decrement:.3g} nats)")
        theta = proposal
    raise ConvergenceError(f"Laplace approximation: Newton's method did not converge in {max_iter} steps "
                           f"(last decrement {decrement:.3g} nats)")


def sample_nuts_laplace(logdensity: Any, init: Any, *, draws: int, tune: int, chains: int, seed: int,
                        target_accept: float = 0.8, overdispersion: float = 2.0) -> Any:
    """NUTS (NumPyro) on ``logdensity`` with the dense metric fixed to the Laplace covariance.

    The chains run vectorised (one pass over the data serves every chain), start at draws from
    ``N(θ̂, overdispersion² Σ̂)`` (overdispersed, so that R̂ can detect a chain that has not
    forgotten its start: Gelman & Rubin 1992) and adapt only the step size during ``tune``
    iterations. Returns an ArviZ ``InferenceData`` with the draws under ``"w"`` (chain, draw, d)
    and ``diverging`` in ``sample_stats``, ready for :func:`check_convergence`; ``attrs["laplace_mode"]``
    holds the mode the metric was taken at.
    """
    import os

    import arviz as az
    import jax
    import jax.numpy as jnp
    from numpyro.infer import MCMC, NUTS

    mode, cov = laplace_approximation(logdensity, init)
    key_init, key_run = jax.random.split(jax.random.key(seed))
    z = np.asarray(jax.random.normal(key_init, (chains, len(mode)), jnp.float64))
    starts = mode + overdispersion * z @ np.linalg.cholesky(cov).T
    kernel = NUTS(potential_fn=lambda theta: -logdensity(theta), inverse_mass_matrix=jnp.asarray(cov),
                  dense_mass=True, adapt_mass_matrix=False, target_accept_prob=target_accept)
    mcmc = MCMC(kernel, num_warmup=tune, num_samples=draws, num_chains=chains, chain_method="vectorized",
                progress_bar=not os.environ.get("TQDM_DISABLE"))
    mcmc.run(key_run, init_params=jnp.asarray(starts), extra_fields=("diverging",))
    samples = np.asarray(mcmc.get_samples(group_by_chain=True))
    diverging = np.asarray(mcmc.get_extra_fields(group_by_chain=True)["diverging"])
    idata = az.from_dict(posterior={"w": samples}, sample_stats={"diverging": diverging})
    idata.attrs["laplace_mode"] = mode.tolist()
    return idata

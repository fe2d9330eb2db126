"""A NumPyro model as a :class:`pmd.Model`: ``model, data = pmd.from_numpyro(numpyro_model, **data)``.

Usage::

    def regression(x, y=None):
        beta = numpyro.sample("beta", dist.Normal(0, 1).expand([x.shape[1]]).to_event(1))
        sigma = numpyro.sample("sigma", dist.HalfNormal(1.0))
        with numpyro.plate("rows", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ beta, sigma), obs=y)

    model, data = pmd.from_numpyro(regression, x=X, y=Y)        # data = {"x": X, "y": Y}

The model function takes its data as keyword arrays whose first axis is the datum (every one of
them: a model that also needs a fixed array closes over it), and must run on any number of rows
(a plate sized by the data, as NumPyro's own examples write it). Then, on NumPyro's unconstrained
scale (the paper's eq. 1 triple, Dai et al. 2016):

* ``θ`` concatenates the latent sites' unconstrained values (``biject_to(site.support).inv``, the
  transform NumPyro's own HMC uses), in the order the model samples them; ``model.layout`` records
  each site's name, slice and unconstrained shape.
* ``log_prior(θ)`` sums the latent sites' ``log_prob`` at their constrained values plus each
  transform's ``log|det J|``, traced with ONE row of the data (latent sites outside the data's
  plates do not depend on the number of rows; a prior that does is outside this function's scope).
* ``log_likelihood(θ, row)`` sums the observed sites' ``log_prob`` on that one row (the model run
  on a one-row batch, the latent sites substituted).
* ``sample_prior(key, n)`` runs the model forward on one row under ``n`` keys (``vmap``) and maps
  the latent draws to ``θ``.
* ``model.constrain(θ)`` returns ``{site: constrained value}``; ``model.columns``,
  ``model.to_columns`` and ``model.from_columns`` are as :func:`pmd.from_pymc`'s (the latent sites
  flattened, named ``beta[0]``, ...), so a NumPyro model file could be scored the same way.

Everything is JAX, so every function is jittable and differentiable.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from .model import ConvertedModel, column_names, split_flat

Array = jax.Array


def from_numpyro(numpyro_model: Callable, *, name: str | None = None, **data: Any) -> tuple[ConvertedModel, dict]:
    """Convert a NumPyro model function and its keyword data into ``(model, data)`` (module docstring).

    Raises ``ValueError`` when no data are given, when their first axes disagree, when the model
    has no observed or no latent site, or when a latent site is discrete.
    """
    from numpyro import handlers
    from numpyro.distributions.transforms import biject_to

    if not data:
        raise ValueError("from_numpyro needs the model's data as keyword arrays (one datum per row of each)")
    data = {key: np.asarray(value) for key, value in data.items()}
    lengths = {key: value.shape[0] if value.ndim else None for key, value in data.items()}
    if len(set(lengths.values())) != 1 or None in lengths.values():
        raise ValueError(f"the data's first axes must all be the number of data points; got {lengths}")
    one_row = {key: value[:1] for key, value in data.items()}

    def trace(row: dict, key: Array, substitute: dict | None = None) -> dict:
        fn = handlers.seed(numpyro_model, key)
        if substitute is not None:
            fn = handlers.substitute(fn, data=substitute)
        return handlers.trace(fn).get_trace(**row)

    sites = trace(one_row, jax.random.key(0))
    latent = {k: s for k, s in sites.items() if s["type"] == "sample" and not s["is_observed"]}
    observed = [k for k, s in sites.items() if s["type"] == "sample" and s["is_observed"]]
    if not observed or not latent:
        raise ValueError(f"the model needs observed and latent sample sites; it has observed {observed}, "
                         f"latent {list(latent)}")
    for key, site in latent.items():
        if site["fn"].support.is_discrete:
            raise ValueError(f"latent site {key!r} is discrete; PMD needs a continuous θ (enumerate it out)")
    transforms = {key: biject_to(site["fn"].support) for key, site in latent.items()}
    layout, start = [], 0
    for key, site in latent.items():
        shape = tuple(transforms[key].inverse_shape(jnp.shape(site["value"])))
        size = int(np.prod(shape, dtype=int))
        layout.append((key, slice(start, start + size), shape))
        start += size

    def unconstrained(theta: Array) -> dict[str, Array]:
        return {key: jnp.reshape(theta[s], shape) for key, s, shape in layout}

    def constrain(theta: Array) -> dict[str, Array]:
        return {key: transforms[key](u) for key, u in unconstrained(theta).items()}

    def log_prior(theta: Array) -> Array:
        u, values = unconstrained(theta), constrain(theta)
        tr = trace(one_row, jax.random.key(0), values)
        total = sum(jnp.sum(tr[key]["fn"].log_prob(values[key])) for key in latent)
        return total + sum(jnp.sum(transforms[key].log_abs_det_jacobian(u[key], values[key])) for key in latent)

    def log_likelihood(theta: Array, row: dict) -> Array:
        tr = trace({key: jnp.expand_dims(value, 0) for key, value in row.items()}, jax.random.key(0),
                   constrain(theta))
        return sum(jnp.sum(tr[key]["fn"].log_prob(tr[key]["value"])) for key in observed)

    def flatten(values: dict[str, Array]) -> Array:
        return jnp.concatenate([jnp.ravel(transforms[key].inv(values[key])) for key in latent])

    def sample_prior(key: Array, n: int) -> Array:
        def one(k):
            tr = trace(one_row, k)
            return flatten({name_: tr[name_]["value"] for name_ in latent})
        return jax.vmap(one)(jax.random.split(key, n)).astype(jnp.float32)

    shapes = [jnp.shape(site["value"]) for site in latent.values()]
    columns = tuple(c for key, shape in zip(latent, shapes) for c in column_names(key, shape))

    def to_columns(theta: Array) -> Array:
        return jnp.concatenate([jnp.ravel(v) for v in constrain(theta).values()])

    def from_columns(values: Array) -> Array:
        return flatten(dict(zip(latent, split_flat(values, shapes))))

    model = ConvertedModel(dim=start, log_prior=log_prior, log_likelihood=log_likelihood, sample_prior=sample_prior,
                      name=name or getattr(numpyro_model, "__name__", "numpyro"), constrain=constrain,
                      layout=tuple(layout), columns=columns, to_columns=to_columns, from_columns=from_columns)
    return model, data

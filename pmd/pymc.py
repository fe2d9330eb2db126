"""A PyMC model as a :class:`pmd.Model`: ``model, data = pmd.from_pymc(pm_model)``.

Usage::

    import pymc as pm, pmd, jax
    with pm.Model() as pm_model:
        x = pm.Data("x", X)                                   # X: (N, k)
        beta = pm.Normal("beta", 0, 1, shape=k)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", x @ beta, sigma, observed=Y)           # Y: (N,)
    model, data = pmd.from_pymc(pm_model)                     # data = {"x": X, "y": Y}
    method = pmd.PMD(model, data_size=len(Y), num_particles=300, data=data)
    result = pmd.run(method, data, jax.random.key(0), batch_size=25, num_passes=2)
    model.constrain(theta)                                    # {"beta": ..., "sigma": ..., ...}

What the pieces are (the paper's eq. 1 triple, Dai et al. 2016, on PyMC's value-variable scale):

* ``θ`` is the concatenation of the flattened value variables of ``pm_model.free_RVs``, i.e. PyMC's
  unconstrained scale (``model.value_vars``; a ``HalfNormal`` enters as ``sigma_log__``), in the
  model's order; ``model.layout`` records each one's name, slice and shape.
* ``log_prior(θ)`` is ``pm_model.logp(vars=free_RVs, jacobian=True)``: the priors' densities on the
  unconstrained scale, each transform's log-Jacobian included.
* Potentials (``pm.Potential``): one that reads no data array is a prior term; one that reads
  them is a per-datum likelihood term, so it must be elementwise along the datum axis (its value
  has the data's length there; one that is not raises ``ValueError``), each datum's term being the
  potential on that datum's row (a potential that mixes rows in an elementwise shape, such as a
  cumulative sum, cannot be told apart and would be split wrongly: write it as one datum).
* ``log_likelihood(θ, row)`` is ``pm_model.logp(vars=observed_RVs)`` for one datum: each observed
  variable resized (``change_dist_size``) to one datum, its value and the per-datum ``pm.Data``
  containers replaced by inputs whose datum axis has length 1 (every other axis and every op
  unchanged), evaluated at ``row`` (the datum axis re-inserted). ``data`` is the dict of those
  arrays by name (an observed variable's, or the container's when the observed values are a
  ``pm.Data``), datum axis moved first.
  ``datum_axis=None`` takes a likelihood that does not factor (a time series) whole: each leaf of
  ``data`` gets a leading axis of length 1 and ``N = 1``.
* ``sample_prior(key, n)`` draws the free variables by PyMC's own forward sampler (a PyTensor
  function compiled once, its generators reseeded from the key's bits on every call) and maps them
  to the unconstrained scale with each variable's forward transform; it runs on the host through
  ``jax.pure_callback``, so it works under ``jit`` (not differentiable; the algorithms do not need it
  to be).
* ``model.constrain(θ)`` returns ``{name: value}`` for ``pm_model.unobserved_value_vars``: the value
  variables, the free variables on their constrained scale and the deterministics.
* ``model.columns`` names the free variables' flattened constrained values, in ``free_RVs`` order
  (``sigma``, ``beta[0]``, ``beta[0,1]``: C order, 0-based, the names of PyMC's and ArviZ's
  ``InferenceData`` coordinates flattened); ``model.to_columns(θ)`` is ``θ (d,) -> (k,)`` in that
  order and ``model.from_columns(values)`` its inverse, each variable's forward transform
  (``log`` for a ``HalfNormal``, the interval's logit, with bounds that may depend on other free
  variables). Reference draws of a posterior are compared on these columns.

All graphs go through PyTensor's JAX backend (``pymc.sampling.jax.get_jaxified_graph``). Importing
that module switches JAX to float64 for the whole process and forces XLA's host device count; both
are restored here, and every function takes and returns float32 (the library's default).
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

from .model import ConvertedModel, column_names, split_flat

Array = jax.Array
DatumAxis = int | None | Mapping[str, int]


def _jaxify() -> Callable:
    """``pymc.sampling.jax.get_jaxified_graph``, imported with JAX's float64 flag and ``XLA_FLAGS`` kept."""
    x64 = jax.config.jax_enable_x64
    xla_flags = os.environ.get("XLA_FLAGS")
    try:
        from pymc.sampling.jax import get_jaxified_graph
    finally:
        jax.config.update("jax_enable_x64", x64)
        if xla_flags is None:
            os.environ.pop("XLA_FLAGS", None)
        else:
            os.environ["XLA_FLAGS"] = xla_flags
    return get_jaxified_graph


def _quiet(fn: Callable) -> Callable:
    """``fn`` with JAX's warning about float64 constants truncated to float32 silenced (intended here)."""
    def call(*args):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Explicitly requested dtype float64")
            return fn(*args)
    return call


def _datum_axes(pm_model: Any, datum_axis: DatumAxis) -> dict[str, tuple[Any, int | None]]:
    """``{name: (variable, axis)}`` of the arrays split into data: observed values and ``pm.Data``.

    ``None`` takes every observed variable and ``pm.Data`` container whole; an int applies to every
    observed variable and to every ``pm.Data`` container whose axis has the observed variables'
    length; a mapping names the axis of each array it splits (every observed variable must be in
    it; containers it leaves out are held fixed). Raises ``ValueError`` naming the array whose
    length disagrees.
    """
    observed = {}
    for rv in pm_model.observed_RVs:
        value = pm_model.rvs_to_values[rv]
        observed[value.name if any(value is v for v in pm_model.data_vars) else rv.name] = value
    containers = {v.name: v for v in pm_model.data_vars if v.name not in observed}

    def length(var: Any, axis: int) -> int:
        shape = np.shape(var.get_value() if hasattr(var, "get_value") else var.data)
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"datum_axis {axis} is out of range for {var.name or 'observed'!r} of shape {shape}")
        return shape[axis]

    if isinstance(datum_axis, Mapping):
        missing = sorted(set(observed) - set(datum_axis))
        unknown = sorted(set(datum_axis) - set(observed) - set(containers))
        if missing or unknown:
            raise ValueError(f"datum_axis must name every observed variable (missing {missing}) and only "
                             f"observed variables or pm.Data containers (unknown {unknown})")
        axes = {name: ({**observed, **containers}[name], axis) for name, axis in datum_axis.items()}
    elif datum_axis is None:
        return {name: (var, None) for name, var in {**observed, **containers}.items()}
    else:
        axes = {name: (var, datum_axis) for name, var in observed.items()}
        first = length(*next(iter(axes.values())))
        for name, var in containers.items():
            shape = np.shape(var.get_value())
            if len(shape) > datum_axis and shape[datum_axis] == first:
                axes[name] = (var, datum_axis)
    split = {name: length(var, axis) for name, (var, axis) in axes.items()}
    lengths = sorted(set(split.values()))
    if len(lengths) > 1:
        first_name = next(iter(split))
        odd = next(name for name, n in split.items() if n != split[first_name])
        raise ValueError(f"the datum axes disagree: {odd!r} has {split[odd]} data along its datum axis, "
                         f"{first_name!r} has {split[first_name]}")
    return axes


def _split_potentials(pm_model: Any, axes: dict, get_jaxified_graph: Callable) -> tuple[list, list]:
    """``(prior potentials, per-datum potentials)`` of ``pm_model.potentials`` (module docstring).

    A potential that reads none of the split data arrays belongs to the prior. One that reads them
    is a sum of per-datum terms: with ``datum_axis=None`` (one datum) always; otherwise it must be
    elementwise along the datum axis (its value at the initial point has the data's length there),
    and each datum's term is the potential evaluated on that datum's row. A potential that reads
    the data but has no such axis (a function of all rows at once) raises ``ValueError`` naming it.
    """
    from pytensor.graph.traversal import graph_inputs

    split = {var: axis for var, axis in axes.values()}
    prior, per_datum = [], []
    for potential in pm_model.potentials:
        graph = pm_model.replace_rvs_by_values([potential])[0]
        reads = [(var, axis) for var, axis in split.items() if var in set(graph_inputs([graph]))]
        if not reads:
            prior.append(potential)
            continue
        if any(axis is not None for _, axis in reads):
            point = pm_model.initial_point()
            fn = _quiet(get_jaxified_graph(inputs=pm_model.value_vars, outputs=[graph]))
            shape = np.shape(fn(*[point[v.name] for v in pm_model.value_vars])[0])
            for var, axis in reads:
                length = np.shape(var.get_value() if hasattr(var, "get_value") else var.data)[axis]
                if not (-len(shape) <= axis < len(shape) and shape[axis] == length):
                    raise ValueError(f"potential {potential.name!r} reads the data ({var.name or 'observed'!r}) but "
                                     f"its value, of shape {shape}, has no datum axis {axis} of length {length}: "
                                     "write it per datum (elementwise along that axis) or as an observed variable")
        per_datum.append(potential)
    return prior, per_datum


def from_pymc(pm_model: Any, *, datum_axis: DatumAxis = 0, name: str | None = None) -> tuple[ConvertedModel, dict]:
    """Convert a PyMC model with observed data into ``(model, data)`` for pmd's methods.

    Args:
        pm_model: a ``pymc.Model`` with at least one observed variable and continuous free variables.
        datum_axis: the axis of one datum: an int for every observed array (and every ``pm.Data``
            whose axis has the same length; others are held fixed), a mapping ``{name: axis}`` (every
            observed variable named; the ``pm.Data`` containers it leaves out are held fixed), or
            ``None`` for a likelihood that does not factor (one datum = the whole data set, ``N = 1``).
        name: the model's label (default: the PyMC model's name, else ``"pymc"``).

    Returns:
        ``(model, data)``: a :class:`ConvertedModel` and ``{name: array}`` with the datum axis first.
    """
    import pytensor.tensor as pt
    from pymc import logp as pm_logp
    from pymc.distributions.shape_utils import change_dist_size
    from pymc.pytensorf import compile as compile_pymc, reseed_rngs
    from pymc.vartypes import discrete_types
    from pytensor.compile import SharedVariable
    from pytensor.graph.replace import graph_replace
    from pytensor.graph.traversal import graph_inputs
    from pytensor.tensor.random.type import RandomType

    if not pm_model.observed_RVs:
        raise ValueError("the PyMC model has no observed variable: there is no likelihood to condition on")
    if not pm_model.free_RVs:
        raise ValueError("the PyMC model has no free variable: there is no θ to infer")
    for rv in pm_model.free_RVs:
        if rv.type.dtype in discrete_types:
            raise ValueError(f"free variable {rv.name!r} is discrete ({rv.type.dtype}); PMD needs a continuous θ "
                             "(marginalise it out, e.g. with pymc_extras' marginalize)")
    get_jaxified_graph = _jaxify()
    axes = _datum_axes(pm_model, datum_axis)

    point = pm_model.initial_point()
    value_vars = pm_model.value_vars
    layout, start = [], 0
    for var in value_vars:
        shape = tuple(np.shape(point[var.name]))
        size = int(np.prod(shape, dtype=int))
        layout.append((var.name, slice(start, start + size), shape))
        start += size
    dim = start

    def unflatten(theta: Array) -> list[Array]:
        return [jnp.reshape(theta[s], shape) for _, s, shape in layout]

    prior_potentials, datum_potentials = _split_potentials(pm_model, axes, get_jaxified_graph)
    prior_fn = _quiet(get_jaxified_graph(inputs=value_vars,
                                         outputs=[pm_model.logp(vars=pm_model.free_RVs + prior_potentials)]))

    def log_prior(theta: Array) -> Array:
        return jnp.asarray(prior_fn(*unflatten(theta))[0], jnp.float32)

    data, replace, row_inputs = {}, {}, []
    for key, (var, axis) in axes.items():
        full = np.asarray(var.get_value() if isinstance(var, SharedVariable) else var.data)
        data[key] = full[None] if axis is None else np.moveaxis(full, axis, 0)
        shape = full.shape if axis is None else full.shape[:axis] + (1,) + full.shape[axis + 1:]
        row_input = pt.tensor(name=key, dtype=full.dtype, shape=shape)
        replace[var] = row_input
        row_inputs.append((key, axis, row_input))
    terms = []
    for rv in pm_model.observed_RVs:
        row_value = replace[pm_model.rvs_to_values[rv]]
        batch_ndim = rv.type.ndim - rv.owner.op.ndim_supp
        row_rv = change_dist_size(rv, row_value.type.shape[:batch_ndim]) if batch_ndim else rv
        terms.append(pt.sum(pm_logp(row_rv, row_value, warn_rvs=False)))
    terms += [pt.sum(potential) for potential in datum_potentials]
    loglik_graph = graph_replace(pm_model.replace_rvs_by_values([pt.sum(terms)]), replace, strict=False)
    loglik_fn = _quiet(get_jaxified_graph(inputs=value_vars + [r for _, _, r in row_inputs], outputs=loglik_graph))

    def log_likelihood(theta: Array, row: dict) -> Array:
        leaves = [row[key] if axis is None else jnp.expand_dims(row[key], axis) for key, axis, _ in row_inputs]
        return jnp.asarray(loglik_fn(*unflatten(theta), *leaves)[0], jnp.float32)

    transforms = pm_model.rvs_to_transforms
    draws = [rv if transforms.get(rv) is None else transforms[rv].forward(rv, *rv.owner.inputs)
             for rv in pm_model.free_RVs]
    draw_fn = compile_pymc([], draws, random_seed=0)
    rngs = [v for v in graph_inputs(draws) if isinstance(v, SharedVariable) and isinstance(v.type, RandomType)]

    def host_draws(key_data: np.ndarray, n: int) -> np.ndarray:
        reseed_rngs(rngs, [int(b) for b in np.asarray(key_data, np.uint32).ravel()])
        return np.stack([np.concatenate([np.ravel(v) for v in draw_fn()]) for _ in range(n)]).astype(np.float32)

    def sample_prior(key: Array, n: int) -> Array:
        return jax.pure_callback(lambda k: host_draws(k, n), jax.ShapeDtypeStruct((n, dim), jnp.float32),
                                 jax.random.key_data(key), vmap_method="sequential")

    outputs = pm_model.unobserved_value_vars
    constrain_fn = _quiet(get_jaxified_graph(inputs=value_vars, outputs=outputs))

    def constrain(theta: Array) -> dict[str, Array]:
        values = constrain_fn(*unflatten(theta))
        return {var.name: jnp.asarray(v, jnp.float32) for var, v in zip(outputs, values)}

    columns, to_columns, from_columns = _column_maps(pm_model, unflatten, get_jaxified_graph)
    model = ConvertedModel(dim=dim, log_prior=log_prior, log_likelihood=log_likelihood, sample_prior=sample_prior,
                      name=name or pm_model.name or "pymc", constrain=constrain, layout=tuple(layout),
                      columns=columns, to_columns=to_columns, from_columns=from_columns)
    return model, data


def _column_maps(pm_model: Any, unflatten: Callable, get_jaxified_graph: Callable):
    """``(columns, to_columns, from_columns)`` of :class:`ConvertedModel` (module docstring).

    ``from_columns`` applies each free variable's forward transform to its constrained value, the
    transform's parameters (an interval's bounds) evaluated at the other constrained values; free
    variables without a transform pass through.
    """
    from pytensor import clone_replace

    free = pm_model.free_RVs
    transforms = pm_model.rvs_to_transforms
    to_fn = _quiet(get_jaxified_graph(inputs=pm_model.value_vars,
                                      outputs=pm_model.replace_rvs_by_values(list(free))))
    point = pm_model.initial_point()
    shapes = [np.shape(v) for v in to_fn(*[point[var.name] for var in pm_model.value_vars])]
    columns = [column for rv, shape in zip(free, shapes) for column in column_names(rv.name, shape)]

    def to_columns(theta: Array) -> Array:
        return jnp.concatenate([jnp.ravel(jnp.asarray(v, jnp.float32)) for v in to_fn(*unflatten(theta))])

    placeholders = [rv.type(name=rv.name) for rv in free]
    to_placeholders = dict(zip(free, placeholders))
    forward = [rv if transforms.get(rv) is None else transforms[rv].forward(rv, *rv.owner.inputs) for rv in free]
    forward = clone_replace(forward, to_placeholders)
    from_fn = _quiet(get_jaxified_graph(inputs=placeholders, outputs=forward))

    def from_columns(values: Array) -> Array:
        return jnp.concatenate([jnp.ravel(jnp.asarray(v, jnp.float32)) for v in from_fn(*split_flat(values, shapes))])

    return tuple(columns), to_columns, from_columns

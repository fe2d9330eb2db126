"""Table 1 of Dai et al. (2016, section 5), measured: convergence rate and cost per iteration.

Table 1 claims, per method, a rate of the integral-approximation error ``|⟨q − q*, f⟩|`` in the
number ``m`` of particles/samples (SGLD ``O(m^{-1/3})``, PMD ``O(m^{-1/2})``; none for SVI, NPV
and static SMC), a computation per iteration (SVI ``Ω(d)``, NPV ``Ω(dm²N + d²N)``, static SMC
``Ω(dm)``, SGLD ``Ω(d)``, PMD ``Ω(dm)`` with particles and ``Ω(dm²)`` with the KDE) and a memory of
``O(dm)`` (SVI ``O(d)``). Two measurements, on the conjugate Gaussian model whose posterior is
known in closed form (:mod:`pmd.models.conjugate`):

* :func:`rate` — the error of ``E[θ_1]`` over many seeds for each ``m``
  (:func:`workflow.experiments.rate.errors`, the run of Theorem 5's rate, with any method of the
  registry), the RMS error's log-log slope and its standard error by bootstrap over seeds. As in
  section 5, a method keeps ``m`` samples/components; SGLD runs ``O(m)`` iterations
  (``steps_per_particle``), the others a fixed number of steps.
* :func:`cost` — the time of one jitted ``step`` (median over repeats, after compilation) and its
  peak memory (XLA's buffer assignment for the compiled step: arguments, outputs and temporaries)
  and the state's size, against ``m`` at a fixed ``d`` and against ``d`` at a fixed ``m``, with the
  fitted log-log exponents. Speed is measured here, never asserted by a test.

Which models each method runs on unchanged (the "black box" column) is
:mod:`workflow.experiments.black_box`.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from pmd.models.conjugate import ConjugateGaussian

from .. import methods
from .rate import bootstrap_slope_se, errors, loglog_fit

RATE_KEYS = ("particles", "seeds", "num_steps", "steps_per_particle")
COST_KEYS = ("particles", "dims")


def _split(spec: dict[str, Any], keys: tuple[str, ...]) -> tuple[dict, dict]:
    """A table1 method entry: its constructor arguments and its measurement settings."""
    spec = dict(spec)
    return spec, {key: spec.pop(key) for key in keys if key in spec}


def _builder(label: str, spec: dict):
    def build(model, data, num_particles, num_steps):
        return methods.build(label, {**spec, "num_particles": num_particles}, model, data, num_steps)

    return build


def rate(section: dict, label: str) -> dict:
    """RMS error of ``E[θ_1]`` against ``m`` for the method ``label`` of ``section["methods"]``.

    Steps: ``num_steps`` when given, ``steps_per_particle × m`` when given (SGLD: ``O(m)``
    iterations, section 5), else one pass. ``particles`` and ``seeds`` override the section's.
    """
    spec, settings = _split(section["methods"][label], RATE_KEYS)
    counts = settings.get("particles", section["particles"])
    seeds = settings.get("seeds", section["seeds"])
    errs = []
    for m in counts:
        steps = settings.get("num_steps")
        if "steps_per_particle" in settings:
            steps = int(settings["steps_per_particle"] * m)
        errs.append(errors(m, seeds, build=_builder(label, spec), num_steps=steps))
    rmse = np.array([np.sqrt(np.mean(e**2)) for e in errs])
    return {"method": spec.get("method", label), "label": label, "particles": list(map(int, counts)),
            "seeds": seeds, "rmse": rmse.tolist(), **loglog_fit(counts, rmse),
            "slope_se_bootstrap": bootstrap_slope_se(counts, errs), "errors": [e.tolist() for e in errs],
            "settings": {k: v for k, v in settings.items() if k not in ("particles", "seeds")}, "spec": spec}


def median_seconds(fn, *args, repeats: int) -> float:
    """Median wall time of ``fn(*args)`` over ``repeats`` calls after one warm-up (compilation) call."""
    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def step_cost(label: str, spec: dict, num_particles: int, dim: int, data_size: int, batch_size: int,
              repeats: int) -> dict:
    """Seconds and bytes of one step of ``label`` with ``m`` particles in ``d`` dimensions.

    The step is timed past the first one (which draws from the prior). Its memory is XLA's buffer
    assignment for the compiled step (arguments + outputs + temporaries − aliased buffers: what one
    step holds at once) and the state's bytes (what the method keeps between steps).
    """
    prob = ConjugateGaussian(dim=dim, noise_std=5.0)
    _, x = prob.simulate(0, data_size)
    x = jnp.asarray(x, jnp.float32)
    algo = methods.build(label, {**spec, "num_particles": num_particles}, prob.model(), x, 10**6)
    batch = x[:batch_size]
    key = jax.random.key(0)
    # one compilation: the step compiled for the initial state serves the later ones (same shapes)
    compiled = jax.jit(lambda k, s: algo.step(k, s, batch)[0]).lower(key, algo.init(key)).compile()
    state = jax.block_until_ready(compiled(key, algo.init(key)))  # past the first step (prior draws)
    memory = compiled.memory_analysis()
    peak = (memory.argument_size_in_bytes + memory.output_size_in_bytes + memory.temp_size_in_bytes
            - memory.alias_size_in_bytes)
    state_bytes = sum(leaf.nbytes for leaf in jax.tree_util.tree_leaves(state) if hasattr(leaf, "nbytes"))
    return {"particles": num_particles, "dim": dim, "seconds": median_seconds(compiled, key, state, repeats=repeats),
            "peak_bytes": int(peak), "temp_bytes": int(memory.temp_size_in_bytes),
            "state_bytes": int(state_bytes)}


def cost(section: dict, label: str) -> dict:
    """Time and memory of one step of ``label`` against ``m`` (at ``fixed_dim``) and ``d`` (at
    ``fixed_particles``), with the log-log exponents fitted to each."""
    spec, settings = _split(section["methods"][label], COST_KEYS)
    common = {"data_size": section["data_size"], "batch_size": section["batch_size"], "repeats": section["repeats"]}
    out: dict[str, Any] = {"method": spec.get("method", label), "label": label, "spec": spec, **common}
    for axis, values, fixed in (("particles", settings.get("particles", section["particles"]), section["fixed_dim"]),
                                ("dim", settings.get("dims", section["dims"]), section["fixed_particles"])):
        rows = [step_cost(label, spec, v, fixed, **common) if axis == "particles"
                else step_cost(label, spec, fixed, v, **common) for v in values]
        out[f"by_{axis}"] = {"rows": rows, **{f"{what}_exponent": loglog_fit(values, [r[key] for r in rows])
                                              for what, key in (("time", "seconds"), ("memory", "peak_bytes"),
                                                                ("state", "state_bytes"))}}
    return out

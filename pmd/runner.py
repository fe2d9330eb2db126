"""The runner: passes over a data set in mini-batches, evaluating metrics as data is visited.

It knows nothing about which method it drives (anything with the ``init``/``step``/``posterior``
interface of :mod:`pmd.interface`) nor where results go (any object with ``log_metrics``). Steps
between two evaluations run inside one jitted ``lax.scan``, so the Python loop costs one dispatch
per evaluation, not per step. A progress bar on stderr counts the steps and estimates the time
left (tqdm; ``TQDM_DISABLE=1`` silences it).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from .interface import ConfigError, InferenceMethod, require_positive_int
from .posterior import Posterior

Array = jax.Array


class Logger(Protocol):
    """Where the runner reports: metric values at ``step`` = data points visited."""

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None: ...


@dataclass
class RunResult:
    """What a run leaves: the final state and posterior, and every curve against data visited."""

    state: Any
    posterior: Posterior
    visited: np.ndarray
    curves: dict[str, np.ndarray]
    step_seconds: float
    eval_seconds: float
    num_steps: int
    info: dict[str, np.ndarray] = field(default_factory=dict)


def _data_size(data: Any) -> int:
    sizes = {np.shape(x)[0] for x in jax.tree_util.tree_leaves(data)}
    if len(sizes) != 1:
        raise ConfigError(f"the data set's leaves disagree on their number of rows: {sorted(sizes)}")
    return sizes.pop()


def batch_indices(seed: int, num_data: int, batch_size: int, num_steps: int) -> np.ndarray:
    """``(num_steps, batch_size)`` row indices: fresh random permutations, one per pass, chained
    so that every batch has ``batch_size`` rows and each pass visits every datum once."""
    rng = np.random.default_rng(seed)
    need = num_steps * batch_size
    perms = [rng.permutation(num_data) for _ in range(math.ceil(need / num_data))]
    return np.concatenate(perms)[:need].reshape(num_steps, batch_size)


def run(
    method: InferenceMethod,
    data: Any,
    key: Array,
    *,
    batch_size: int,
    num_passes: float = 1.0,
    eval_every: int | None = None,
    evaluate: Callable[[Posterior, Array], Mapping[str, float]] | None = None,
    logger: Logger | None = None,
) -> RunResult:
    """Run ``method`` for ``num_passes`` passes over ``data`` in mini-batches of ``batch_size``.

    Args:
        method: any inference method (``init``/``step``/``posterior``).
        data: an array or pytree of arrays whose leading axis indexes data points.
        key: the PRNG key of the whole run (initialisation, batches, steps, evaluations).
        batch_size: data points per step.
        num_passes: passes over the data (fractions allowed).
        eval_every: evaluate ``evaluate(posterior, key)`` every this many data points visited
            (and at 0 and at the end); None evaluates only at the end.
        evaluate: returns a mapping of metric names to floats; the step's ``info`` values (e.g.
            PMD's ``gamma`` and ``ess``) are added to the curves too.
        logger: receives every evaluation with ``step`` = data points visited.

    A step may report in ``info["visited"]`` how many data points it really touched (Gibbs
    sampling scans all of them); otherwise a step visits ``batch_size`` points.
    """
    num_data = _data_size(data)
    if num_data != method.data_size:
        raise ConfigError(f"the data set has {num_data} rows but the method was built with "
                          f"data_size={method.data_size}")
    require_positive_int("batch_size", batch_size)
    if not num_passes > 0:
        raise ConfigError(f"num_passes must be positive, got {num_passes!r}")
    num_steps = max(1, math.ceil(num_passes * num_data / batch_size))
    k_init, k_data, k_steps, k_eval = jax.random.split(key, 4)
    seed = int(jax.random.randint(k_data, (), 0, 2**31 - 1))
    indices = batch_indices(seed, num_data, batch_size, num_steps)
    step_keys = jax.random.split(k_steps, num_steps)
    device_data = jax.tree_util.tree_map(jnp.asarray, data)

    def body(state, inputs):
        k, idx = inputs
        batch = jax.tree_util.tree_map(lambda a: jnp.take(a, idx, axis=0), device_data)
        return method.step(k, state, batch)

    advance = jax.jit(lambda state, keys, idx: jax.lax.scan(body, state, (keys, idx)))

    per_eval = num_steps if eval_every is None else max(1, eval_every // batch_size)
    state = method.init(k_init)
    visited, done, step_seconds, eval_seconds = 0, 0, 0.0, 0.0
    curves: dict[str, list] = {}
    marks: list[int] = []
    infos: list[dict] = []

    def record(extra: Mapping[str, float]):
        nonlocal eval_seconds
        t0 = time.perf_counter()
        values = dict(evaluate(method.posterior(state), jax.random.fold_in(k_eval, done))) if evaluate else {}
        values.update(extra)
        values["wall_time"] = step_seconds
        eval_seconds += time.perf_counter() - t0
        marks.append(visited)
        for name, value in values.items():
            curves.setdefault(name, []).append(float(value))
        if logger is not None:
            logger.log_metrics(values, step=visited)

    if eval_every is not None:
        record({})
    progress = tqdm(total=num_steps, desc=type(method).__name__, unit=" steps", mininterval=1.0)
    while done < num_steps:
        k = min(per_eval, num_steps - done)
        t0 = time.perf_counter()
        state, info = advance(state, step_keys[done:done + k], indices[done:done + k])
        jax.block_until_ready(state)
        step_seconds += time.perf_counter() - t0
        info = jax.tree_util.tree_map(np.asarray, info)
        infos.append(info)
        visited += int(np.sum(info["visited"])) if "visited" in info else k * batch_size
        done += k
        progress.update(k)
        if eval_every is not None or done == num_steps:
            last = {name: float(np.asarray(v)[-1]) for name, v in info.items() if np.ndim(v) == 1}
            record(last)
    progress.close()
    info_trace = {name: np.concatenate([np.atleast_1d(i[name]) for i in infos]) for name in infos[0]} if infos else {}
    return RunResult(
        state=state,
        posterior=method.posterior(state),
        visited=np.asarray(marks),
        curves={name: np.asarray(v) for name, v in curves.items()},
        step_seconds=step_seconds,
        eval_seconds=eval_seconds,
        num_steps=num_steps,
        info=info_trace,
    )

"""The runner: passes over a data set in mini-batches, evaluating metrics as data is visited.

It knows nothing about which method it drives (anything with the ``init``/``step``/``posterior``
interface of :mod:`pmd.interface`) nor where results go (any object with ``log_metrics``). Steps
between two evaluations run inside one jitted ``lax.scan``, so the Python loop costs one dispatch
per evaluation, not per step. Each shape of that scan is compiled once per method object, ahead of
its first call, and kept with the object for its later runs (:func:`compiled_programs`);
what the run compiles (that program, the method's ``init``, the plan's first random draws) is timed
from JAX's compilation events (:func:`compilation_seconds`). A run reports its time from the init
to the last step with compilation included (``step_seconds``, the curve ``wall_time``; of it,
``init_seconds`` the init) and the compilation alone (``compile_seconds``, the curve
``compile_time``: the init's and the steps'), so that a cost table can give either (XLA compiles
PMD's default for seconds on a CPU and for 15-25 s on a GPU, where its first pass at 10⁶ rows then
runs in about a second: docs/findings.md, 2026-11-27). A method that ``pads_batches`` runs a short
last batch padded to the others' size, in their program (:func:`stepper`'s ``valid``). A progress
bar on stderr counts the steps and estimates the time left (tqdm; ``TQDM_DISABLE=1`` silences it).
"""

from __future__ import annotations

import math
import time
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Callable, Iterator, Mapping, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from tqdm import tqdm

from .interface import ConfigError, InferenceMethod, require_positive_int, take_step
from .posterior import Posterior
from .work import WORK, as_counts, units

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
    compile_seconds: float = 0.0  # of step_seconds: compiling the init's and the steps' programs (module docstring)
    init_seconds: float = 0.0  # of step_seconds: the plan, the data to the device and the init, compilation included
    start_seconds: float = 0.0  # of step_seconds: building the method (``start``), compilation included


def _data_size(data: Any) -> int:
    sizes = {np.shape(x)[0] for x in jax.tree_util.tree_leaves(data)}
    if len(sizes) != 1:
        raise ConfigError(f"the data set's leaves disagree on their number of rows: {sorted(sizes)}")
    return sizes.pop()


def check_data(data: Any) -> int:
    """The data set's number of rows, after refusing, with the field and rows named, what no method
    can use: a leaf that is not an array with the rows on its leading axis (a list of lists, a
    scalar) and non-finite values (a NaN row would be dropped by PMD's weights and turn SVI's
    posterior into NaN, silently)."""
    leaves = jax.tree_util.tree_leaves_with_path(data)
    if not leaves:
        raise ConfigError("the data set is empty: pass an array or a pytree of arrays, rows on the leading axis")
    for path, leaf in leaves:
        field = jax.tree_util.keystr(path) or "data"
        if not isinstance(leaf, (np.ndarray, jax.Array)) or np.ndim(leaf) < 1:
            raise ConfigError(f"data field {field} is a {type(leaf).__name__}, not an array with the rows on "
                              "its leading axis: pass np.asarray(...) (a list of lists is not a data set)")
        values = np.asarray(leaf)
        if np.issubdtype(values.dtype, np.inexact):
            bad = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
            if bad.any():
                rows = np.flatnonzero(bad)
                raise ConfigError(f"data field {field} has non-finite values (NaN or inf) in {len(rows)} row(s), "
                                  f"first rows {rows[:5].tolist()}: remove or impute them before the run")
    return _data_size(data)


def _check_key(key: Any, name: str = "key") -> None:
    """A PRNG key, not an integer seed (JAX's own error names neither the argument nor the fix)."""
    if isinstance(key, (int, np.integer)) or (hasattr(key, "dtype") and np.ndim(key) == 0
                                               and not jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)):
        raise ConfigError(f"{name} must be a JAX PRNG key such as jax.random.key({int(key)}), got the integer {int(key)}")


def _same_data(own: Any, data: Any) -> bool:
    """Whether a method's copy of the data (``own``) holds the run's rows: the same values in the
    copy's dtype (a method may keep float32 of float64 data), and of a mapping only the fields the
    method kept (LDA's SMC keeps a corpus's words and mask)."""
    if isinstance(own, Mapping) and isinstance(data, Mapping):
        return own.keys() <= data.keys() and all(_same_data(own[k], data[k]) for k in own)
    mine, theirs = jax.tree_util.tree_leaves(own), jax.tree_util.tree_leaves(data)
    return jax.tree_util.tree_structure(own) == jax.tree_util.tree_structure(data) and all(
        np.shape(a) == np.shape(b) and np.array_equal(np.asarray(a), np.asarray(b).astype(np.asarray(a).dtype))
        for a, b in zip(mine, theirs))


def _check_method_data(method: InferenceMethod, data: Any) -> None:
    """A method built with its own copy of the data (``data=``, read by its full-data steps or
    moves) must have been given the data set the run streams: the two cannot differ silently."""
    own = getattr(method, "data", None)
    if own is None or own is data:
        return
    if not _same_data(own, data):
        raise ConfigError(f"{type(method).__name__} was built with data= that is not the data set given to the "
                          "run: pass the same data to both")


def batch_indices(seed: int, num_data: int, batch_size: int, num_steps: int) -> np.ndarray:
    """``(num_steps, batch_size)`` row indices: fresh random permutations, one per pass, chained
    so that every batch has ``batch_size`` rows and each pass visits every datum once."""
    rng = np.random.default_rng(seed)
    need = num_steps * batch_size
    perms = [rng.permutation(num_data) for _ in range(math.ceil(need / num_data))]
    return np.concatenate(perms)[:need].reshape(num_steps, batch_size)


def run_batches(seed: int, num_data: int, batch_size: int, num_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a run that reads exactly ``num_rows`` rows: :func:`batch_indices` cut into
    ``(num_rows // B, B)`` full batches and a ``(num_rows % B,)`` tail (empty when ``B`` divides
    ``num_rows``), the run's last and shorter batch. A run of whole passes thus ends exactly at a
    pass end, where every method's iterate is defined: a full last batch would read up to ``B - 1``
    rows of the next pass, which PMD's iterate between two pass ends weighs unlike the others."""
    full, rem = divmod(num_rows, batch_size)
    rows = batch_indices(seed, num_data, batch_size, full + bool(rem))
    return rows[:full], rows[full, :rem] if rem else np.zeros((0,), rows.dtype)


@dataclass
class _Plan:
    """What one repetition of a run consumes: its keys and its batches (derived from its key alone)."""

    k_init: Array
    k_eval: Array
    indices: np.ndarray  # (full steps, batch_size)
    tail: np.ndarray     # (rows of the last, shorter step,) or empty
    step_keys: Array     # one per step, the tail's included


def _plan(method: InferenceMethod, data: Any, key: Array, batch_size: int, num_passes: float) -> _Plan:
    num_data = _data_size(data)
    _check_key(key)
    if num_data != method.data_size:
        raise ConfigError(f"the data set has {num_data} rows but the method was built with "
                          f"data_size={method.data_size}")
    require_positive_int("batch_size", batch_size)
    if not num_passes > 0:
        raise ConfigError(f"num_passes must be positive, got {num_passes!r}")
    if batch_size > num_data:
        raise ConfigError(f"batch_size={batch_size} is larger than the data set's {num_data} rows")
    num_rows = math.ceil(num_passes * num_data - 1e-9 * num_data)  # whole rows; no float fuzz past a pass end
    if hasattr(method, "check_num_steps"):  # e.g. an MCMC burn-in the run must outlast
        method.check_num_steps(math.ceil(num_rows / batch_size))
    k_init, k_data, k_steps, k_eval = jax.random.split(key, 4)
    seed = int(jax.random.randint(k_data, (), 0, 2**31 - 1))
    indices, tail = run_batches(seed, num_data, batch_size, num_rows)
    return _Plan(k_init, k_eval, indices, tail, jax.random.split(k_steps, len(indices) + bool(len(tail))))


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
    start: tuple[float, float] = (0.0, 0.0),
    max_work: float | None = None,
) -> RunResult:
    """Run ``method`` for ``num_passes`` passes over ``data`` in mini-batches of ``batch_size``.

    Args:
        method: any inference method (``init``/``step``/``posterior``).
        data: an array or pytree of arrays whose leading axis indexes data points.
        key: the PRNG key of the whole run (initialisation, batches, steps, evaluations).
        batch_size: data points per step.
        num_passes: passes over the data (fractions allowed): the run reads exactly
            ``⌈num_passes · N⌉`` rows, its last step on a shorter batch where ``batch_size`` does not
            divide that (:func:`run_batches`), so a run of whole passes ends at a pass end.
        eval_every: evaluate ``evaluate(posterior, key)`` every this many data points visited
            (and at 0 and at the end); None evaluates only at the end.
        evaluate: returns a mapping of metric names to floats; the step's ``info`` values (e.g.
            PMD's ``gamma`` and ``ess``) are added to the curves too.
        logger: receives every evaluation with ``step`` = data points visited.
        start: ``(seconds, compile_seconds)`` spent building ``method`` before the run (a Laplace
            fit in its constructor: :func:`workflow.methods.build_timed` measures it): the clock
            (``step_seconds``, the curve ``wall_time``) and its compilation (``compile_seconds``,
            ``compile_time``) start there, so a run's seconds run from the method's construction,
            as its work runs from its ``start_work``.
        max_work: a cap on the run's work (its counts charged by :data:`pmd.work.UNITS`, the
            start's included): the run
            stops before the first step that would take it past the cap, and its last posterior
            is the run's (evaluated, the curves' last point). The steps past the cap are computed
            once to learn their work, then dropped from the state, the clocks and the counts: the
            run is what it would have been had it stopped there. ``None``: the passes decide.

    A step may report in ``info["visited"]`` how many data points it really touched (Gibbs
    sampling scans all of them); otherwise a step visits ``batch_size`` points. A step reports its
    work in ``info["evals"]``, ``info["grad_evals"]`` and any other count of :data:`pmd.work.WORK`
    (:func:`pmd.interface.work`): the curves hold their running totals, and ``work``, their sum in
    units (:func:`pmd.work.units`), from the method's ``start_work`` (what building it cost, e.g.
    SVI's Laplace start, as counts or the pair ``(evals, grad_evals)``; default none), and the rows
    visited from its ``start_visited`` (the rows that start read; default its ``start_work``
    likelihood terms and Hessian-vector products, since a start evaluates at one point at a time), so
    that a run's work, reads and seconds (``start``) all count from the method's construction. A method whose steps report no ``evals`` is charged the likelihood terms
    of the rows it visited at its particles (``m·B`` a step, no gradients), and its curve
    ``work_charged`` is 1, so tables can say its work is the runner's charge, not its own count. A method whose
    ``wants_rows`` is true also receives the batch's row indices in ``data`` (``step(..., rows=)``),
    one whose ``wants_data`` is true the whole ``data`` (``step(..., data=)``; :func:`stepper`).
    A method with a ``check_num_steps(num_steps)`` is handed the run's length first, to refuse a
    run it cannot use (SGLD's burn-in as long as the run) before any step is taken.
    """
    check_data(data)
    _check_method_data(method, data)
    (result,) = _drive(method, data, [key], batched=False, batch_size=batch_size, num_passes=num_passes,
                       eval_every=eval_every, evaluate=evaluate, loggers=[logger], start=start, max_work=max_work)
    return result


def run_batched(
    method: InferenceMethod,
    data: Any,
    keys: list[Array],
    *,
    batch_size: int,
    num_passes: float = 1.0,
    eval_every: int | None = None,
    evaluate: Callable[[Posterior, Array], Mapping[str, float]] | None = None,
    loggers: list[Logger | None] | None = None,
    start: tuple[float, float] = (0.0, 0.0),
    max_work: float | None = None,
) -> list[RunResult]:
    """Repetitions of :func:`run`, one per key, as one vectorised program: each
    repetition's batches and step keys are derived from its key exactly as :func:`run` derives
    them, the states are stacked along a leading axis, and one jitted ``vmap`` of the ``lax.scan``
    advances all of them between evaluations (one compilation, one device). Evaluation and logging
    stay per repetition, on its slice of the state, so every :class:`RunResult` has the form of
    :func:`run`'s and the same numbers up to floating-point reassociation in the batched kernels.

    The method must be pure JAX (its ``step`` traceable under ``vmap``); the peers that call other
    libraries are not. A method whose ``batchable`` is false is refused. ``start`` is :func:`run`'s,
    charged whole to each repetition (each would have paid it alone). A work cap (``max_work``) is
    :func:`run`'s alone: repetitions that stop at different steps are not one program. ``step_seconds`` of each result is the batch's stepping time divided by the
    number of repetitions (its share of the one program).
    """
    keys = list(keys)  # a list of keys, or an array of them (jax.random.split(key, k))
    if not keys:
        raise ConfigError("run_batched needs at least one key")
    if not getattr(method, "batchable", True):
        raise ConfigError(f"{type(method).__name__} with these options runs one repetition at a time "
                          f"(its batchable is false): use run() per key")
    check_data(data)
    _check_method_data(method, data)
    loggers = [None] * len(keys) if loggers is None else list(loggers)
    if len(loggers) != len(keys):
        raise ConfigError(f"run_batched got {len(keys)} keys but {len(loggers)} loggers")
    return _drive(method, data, keys, batched=True, batch_size=batch_size, num_passes=num_passes, start=start,
                  max_work=max_work,
                  eval_every=eval_every, evaluate=evaluate, loggers=loggers)


def stepper(method: InferenceMethod, batched: bool = False) -> Callable:
    """The compiled ``advance(state, keys, idx, data, active=None) -> (state, infos)``: ``len(keys)``
    steps of ``method`` in one ``lax.scan``, step ``t`` with key ``keys[t]`` on the rows ``idx[t]`` of
    ``data`` (:func:`pmd.interface.take_step`, which also hands the whole ``data`` to a method that
    ``wants_data``). With ``batched`` the states, keys and indices carry a leading repetition axis
    (one ``vmap``) and the data are shared.

    ``active`` (a boolean per step, shared by the repetitions) skips the steps where it is False: the
    state passes through and their infos are zeros. The runner pads a short window (the last one
    before an evaluation that does not divide the run) to its full length this way, so one program
    serves every window: a second length was a second compilation of the whole step (measured on
    kidiq at the posteriordb budget: windows of 20 and 14 steps, about 6 s each on a 2-core CPU).

    The data are an argument, never a closure: an array a jitted function closes over is a
    compile-time constant, serialised into the program and constant-folded by XLA (at H.3.2's
    463,715 × 90 rows: minutes of compilation and gigabytes of memory; the module docstring of
    :mod:`pmd.interface`). Drivers of the interface (the runner, the benchmarks) step through this.

    ``valid`` (an integer per step, shared by the repetitions; only for a method that
    ``pads_batches``) is the number of each step's rows that are data, the rest padding: the runner
    pads a run's short last batch to the others' size this way (:mod:`pmd.interface`)."""
    def body(data, state, inputs):
        k, idx, active, valid = inputs

        def go(state):
            batch = jax.tree_util.tree_map(lambda a: jnp.take(a, idx, axis=0), data)
            return take_step(method, k, state, batch, idx, data, num_valid=valid)

        if active is None:
            return go(state)
        info = jax.eval_shape(go, state)[1]
        skip = lambda state: (state, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), info))  # noqa: E731
        return jax.lax.cond(active, go, skip, state)

    def scan(state, keys, idx, data, active=None, valid=None):
        return jax.lax.scan(partial(body, data), state, (keys, idx, active, valid))

    return jax.jit(jax.vmap(scan, in_axes=(0, 0, 0, None, None, None)) if batched else scan)


COMPILE_EVENTS = ("/jax/core/compile/jaxpr_trace_duration", "/jax/core/compile/jaxpr_to_mlir_module_duration",
                  "/jax/core/compile/backend_compile_duration")
"""JAX's monitoring events of one compilation: tracing to a jaxpr, lowering it, XLA's compile."""


@contextmanager
def compilation_seconds() -> Iterator[Callable[[], float]]:
    """``with compilation_seconds() as compiling: ...``; ``compiling()``: the seconds JAX spent compiling
    inside the block: the length of the union of the intervals of its :data:`COMPILE_EVENTS`, each
    ending when JAX reports it. The union, not the sum: a jit traced inside another's trace reports
    its own tracing, within the outer one's (summed, a nested program was counted twice and a
    method's compilation could exceed its wall time)."""
    spans: list[tuple[float, float]] = []

    def listen(event: str, duration: float, **_):
        if event in COMPILE_EVENTS:
            end = time.perf_counter()
            spans.append((end - duration, end))

    def total() -> float:
        covered, reach = 0.0, -math.inf
        for start, end in sorted(spans):
            covered += max(0.0, end - max(start, reach))
            reach = max(reach, end)
        return covered

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        yield total
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)


_PROGRAMS: dict[int, tuple[weakref.ref, dict]] = {}


def compiled_programs(method: InferenceMethod, batched: bool) -> dict:
    """The programs compiled for ``method``'s steps, by argument signature (:func:`_signature`), kept as
    long as the object lives, as its jitted ``init`` is: a second run of the same object (another key;
    other data of the same shapes, for a method not built on its data) compiles nothing: one
    compilation per model and shape within a process (across processes, JAX's persistent cache).
    Measured on kidiq, three runs of one default PMD in a process: 9.9, 0 and 0 s of compilation
    (wall time 10.2, 0.29 and 0.31 s), where a fresh program per run compiled 10.2, 7.6 and 8.2 s. A method is read when its
    program is traced, so it is not to be changed after its first run (the project changes none), and
    JAX's settings (e.g. ``jax_default_matmul_precision``) are those of that first run. An object
    without weak references gets a fresh cache each run."""
    entry = _PROGRAMS.get(id(method))
    if entry is not None and entry[0]() is method:
        return entry[1].setdefault(batched, {})
    try:
        ref = weakref.ref(method, lambda _, key=id(method): _PROGRAMS.pop(key, None))
    except TypeError:  # no __weakref__ slot: nothing to key a lasting cache on
        return {}
    _PROGRAMS[id(method)] = ref, {}
    return _PROGRAMS[id(method)][1].setdefault(batched, {})


def _signature(args) -> tuple:
    """What a compiled program is specialised to: the arguments' tree, and each leaf's shape, dtype
    and weak type (a jitted function retraces when any of them changes; a compiled one refuses)."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple((np.shape(x), getattr(x, "dtype", type(x)), bool(getattr(x, "weak_type", False)))
                       for x in leaves)


def _drive(method, data, keys: list[Array], *, batched: bool, batch_size: int, num_passes: float,
           eval_every: int | None, evaluate, loggers, start: tuple[float, float] = (0.0, 0.0),
           max_work: float | None = None) -> list[RunResult]:
    """The loop shared by :func:`run` (one key, no ``vmap``) and :func:`run_batched` (stacked plans).
    The clocks start at ``start`` (the method's construction, :func:`run`), then run from before
    the plans (their first random draws compile in a new process) and the data's copy to the
    device. A batch of ``n`` repetitions shares one construction: each is charged all of it and its
    share of the rest."""
    if max_work is not None and (batched or not max_work > 0):
        raise ConfigError(f"max_work must be a positive number of work units for one repetition, got {max_work!r}"
                          + (" in a batched run: cap repetitions one at a time (pmd.run)" if batched else ""))
    t0 = time.perf_counter()
    with compilation_seconds() as compiling:  # an init may read the data eagerly: it is called, never jitted here
        plans = [_plan(method, data, key, batch_size, num_passes) for key in keys]
        device_data = jax.tree_util.tree_map(jnp.asarray, data)
        state = jax.block_until_ready(jax.vmap(method.init)(jnp.stack([p.k_init for p in plans])) if batched
                                      else method.init(plans[0].k_init))
    init_seconds = time.perf_counter() - t0
    n = len(plans)
    step_seconds = init_seconds + n * start[0]  # every repetition is charged the whole construction
    compile_seconds = compiling() + n * start[1]
    num_full, tail_rows = len(plans[0].indices), len(plans[0].tail)
    num_steps, num_rows = num_full + bool(tail_rows), num_full * batch_size + tail_rows
    pads = getattr(method, "pads_batches", False)
    if pads and tail_rows:  # the tail, padded with its own rows, is one more full-size step
        plans = [replace(p, indices=np.concatenate([p.indices, np.resize(p.tail, (1, batch_size))]),
                         tail=p.tail[:0]) for p in plans]
        num_full, tail_rows = num_steps, 0
    valid = np.minimum(batch_size, num_rows - batch_size * np.arange(num_full)).astype(np.int32)  # rows that are data
    advance = stepper(method, batched)
    if batched:
        step_keys = jnp.stack([p.step_keys for p in plans])
        indices = np.stack([p.indices for p in plans])
        tails = np.stack([p.tail for p in plans])[:, None]
        piece = lambda tree, i: jax.tree_util.tree_map(lambda x: x[i], tree)  # noqa: E731
    else:
        step_keys, indices, tails = plans[0].step_keys, plans[0].indices, plans[0].tail[None]
        piece = lambda tree, i: tree  # noqa: E731
    at = (slice(None),) if batched else ()

    def window(a: int, b: int):
        """Steps ``a`` to ``b``: full batches padded to the window length ``per_eval`` with skipped
        steps (:func:`stepper`'s ``active``), or the last step alone on the tail (:func:`run_batches`);
        then the rows of each step that are data (for a method that pads batches) and their total."""
        if a >= num_full:
            return step_keys[(*at, slice(a, b))], tails, np.ones(1, bool), None, tail_rows
        pad = np.minimum(np.arange(a, a + length), b - 1)  # skipped steps repeat the window's last
        return (step_keys[(*at, pad)], indices[(*at, pad)], np.arange(length) < b - a, valid[pad] if pads else None,
                int(valid[a:b].sum()))

    per_eval = num_steps if eval_every is None else max(1, eval_every // batch_size)
    length = min(per_eval, num_full)  # every full-batch window's program length
    # a start's data reads (a Laplace fit's evaluations of the whole data set) are reads of the run:
    # its ``start_visited``, by default its likelihood terms (a start evaluates at one point at a time)
    start_work = as_counts(getattr(method, "start_work", (0.0, 0.0)))
    start_reads = int(getattr(method, "start_visited", start_work.get("evals", 0.0) + start_work.get("hvp_evals", 0.0)))
    visited, done, eval_seconds = [start_reads] * n, 0, [0.0] * n
    programs = compiled_programs(method, batched)  # argument signature -> compiled advance
    # a method that spent work before its first step (SVI's Laplace start) says so in start_work
    work = [{name: start_work.get(name, 0.0) for name in WORK} for _ in plans]
    charged = [False] * len(plans)  # a method that reports no work is charged m·B a step (docstring)
    curves: list[dict[str, list]] = [{} for _ in plans]
    marks: list[list[int]] = [[] for _ in plans]
    infos: list[list[dict]] = [[] for _ in plans]

    def record(i: int, extra: Mapping[str, float]):
        t0 = time.perf_counter()
        values = (dict(evaluate(method.posterior(piece(state, i)), jax.random.fold_in(plans[i].k_eval, done)))
                  if evaluate else {})
        values.update(extra)
        values.update(work[i])
        values["work"] = float(units(work[i]))
        values["work_charged"] = float(charged[i])
        values["wall_time"] = step_seconds / n
        values["compile_time"] = compile_seconds / n
        eval_seconds[i] += time.perf_counter() - t0
        marks[i].append(visited[i])
        for name, value in values.items():
            curves[i].setdefault(name, []).append(float(value))
        if loggers[i] is not None:
            loggers[i].log_metrics(values, step=visited[i])

    if eval_every is not None:
        for i in range(n):
            record(i, {})
    progress = tqdm(total=num_steps, desc=type(method).__name__, unit=" steps", mininterval=1.0)

    def advance_window(state, a: int, b: int):
        """Steps ``a`` to ``b`` from ``state``: the new state, the active steps' infos and their rows
        (the window's program, compiled on its first use), timed into the run's clocks."""
        nonlocal step_seconds, compile_seconds
        t0 = time.perf_counter()
        with compilation_seconds() as compiling:
            keys, idx, active, rows_valid, rows = window(a, b)
            args = (state, keys, idx, device_data, active, rows_valid)
            signature = _signature(args)
            if signature not in programs:
                programs[signature] = advance.lower(*args).compile()
            state, info = programs[signature](*args)
            jax.block_until_ready(state)
        compile_seconds += compiling()
        step_seconds += time.perf_counter() - t0
        return state, jax.tree_util.tree_map(lambda x: np.asarray(x)[(*at, slice(0, b - a))], info), rows

    def step_work(mine: dict, a: int, b: int) -> np.ndarray:
        """Each of steps ``a`` to ``b``'s work in units (:func:`pmd.work.units`; the runner's charge
        for a method that reports none)."""
        if "evals" in mine:
            return units({name: mine[name] for name in WORK if name in mine})
        rows = np.asarray(mine["visited"], np.float64) if "visited" in mine else np.asarray(
            valid[a:b] if a < num_full else [tail_rows], np.float64)
        return float(getattr(method, "num_particles", 1)) * rows

    capped = False
    while done < num_steps and not capped:
        k = min(per_eval - done % per_eval, num_full - done) if done < num_full else 1
        before = (state, step_seconds, compile_seconds)
        state, info, rows = advance_window(state, done, done + k)
        if max_work is not None:  # the cap: the steps that fit in it, from the state before the window
            spent = units(work[0]) + np.cumsum(step_work(info, done, done + k))
            keep = int(np.sum(spent <= max_work))
            if keep < k:
                capped = True
                state, step_seconds, compile_seconds = before  # the steps past the cap were never the run's
                if keep == 0:  # not one more step fits: the last posterior is the state before the window
                    for i in range(n):
                        if not marks[i] or marks[i][-1] != visited[i]:
                            record(i, {})
                    break
                state, info, rows = advance_window(state, done, done + keep)
                k = keep
        done += k
        progress.update(k)
        for i in range(n):
            mine = piece(info, i)
            infos[i].append(mine)
            read = int(np.sum(mine["visited"])) if "visited" in mine else rows
            visited[i] += read
            if "evals" not in mine:
                charged[i] = True
                work[i]["evals"] += float(getattr(method, "num_particles", 1)) * read
            for name in WORK:
                work[i][name] += float(np.sum(mine[name], dtype=np.float64)) if name in mine else 0.0
            if (eval_every is not None and done % per_eval == 0) or done == num_steps or capped:
                record(i, {name: float(np.asarray(v)[-1]) for name, v in mine.items()
                           if np.ndim(v) == 1 and name not in WORK})
    progress.close()
    results = []
    for i in range(n):
        trace = ({name: np.concatenate([np.atleast_1d(step[name]) for step in infos[i]]) for name in infos[i][0]}
                 if infos[i] else {})
        final = piece(state, i)
        results.append(RunResult(state=final, posterior=method.posterior(final), visited=np.asarray(marks[i]),
                                 curves={name: np.asarray(v) for name, v in curves[i].items()},
                                 step_seconds=step_seconds / n, eval_seconds=eval_seconds[i], num_steps=done,
                                 info=trace, compile_seconds=compile_seconds / n, init_seconds=init_seconds / n,
                                 start_seconds=start[0]))
    return results

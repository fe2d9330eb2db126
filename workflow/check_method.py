"""``pmd-bench check-method``: a method checked against the interface's contract, point by point,
as scikit-learn's ``check_estimator`` checks an estimator.

Each point of :data:`POINTS` passes or fails with its reason; a point whose premise failed (no
state to step from, say) fails as "not checked". The method is built on a small conjugate
Gaussian problem (:class:`pmd.models.conjugate.ConjugateGaussian`, ``d = 2``, ``N = 500`` rows,
``θ* = (1, -1)``, prior ``N(0, I)``, noise sd 1), whose posterior is known exactly
(``N(μ_N, s_N² I)``, ``s_N ≈ 0.045``), as the workflow builds a config entry
(:func:`workflow.methods.build`: ``data=`` and ``num_steps=`` where its constructor takes them).

The accuracy point runs it through :func:`pmd.run` for :data:`PASSES` passes in batches of
:data:`BATCH` rows and asks, per coordinate, for a mean within :data:`MEAN_SDS` exact posterior sd
of the exact mean and an sd within a factor :data:`SD_FACTOR` of the exact sd. The bounds are
generous on purpose: they catch a wrong sign (an error of about 44 sd here) or a likelihood not
scaled by ``N/B`` (an sd √(N/B) = 5 times too large), not a weak method; every built-in method
that runs on a generic model passes them (``tests/test_check_method.py``).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

POINTS = ("class", "constructor", "build", "init is pure in its key", "step is pure in its key",
          "step compiles with jax.jit", "posterior", "weighted samples sum to one", "finite output",
          "work reported", "accuracy on a conjugate model")
NUM_DATA, BATCH, PASSES, PARTICLES = 500, 25, 2, 200
MEAN_SDS, SD_FACTOR = 5.0, 3.0
THETA = (1.0, -1.0)


@dataclass(frozen=True)
class Check:
    """One contract point: its ``name`` (of :data:`POINTS`), whether it passed, and why (or what was seen)."""

    name: str
    ok: bool
    detail: str = ""


@dataclass
class Report:
    """Every point's :class:`Check` for the method ``spec``; ``ok`` when all passed."""

    spec: str
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    def __str__(self) -> str:
        width = max(len(p) for p in POINTS)
        lines = [f"check-method {self.spec}:"]
        lines += [f"  {'PASS' if c.ok else 'FAIL'}  {c.name:<{width}}  {c.detail}".rstrip() for c in self.checks]
        failed = [c.name for c in self.checks if not c.ok]
        lines.append(f"{len(self.checks) - len(failed)} of {len(self.checks)} points passed"
                     + (f"; failed: {', '.join(failed)}" if failed else ""))
        return "\n".join(lines)


def _problem():
    from pmd.models.conjugate import ConjugateGaussian

    problem = ConjugateGaussian(dim=2)
    _, x = problem.simulate(0, NUM_DATA, theta=np.asarray(THETA))
    mean, cov = problem.posterior(x)
    return problem.model(), x.astype(np.float32), mean, np.sqrt(np.diag(cov))


def _leaves(tree: Any) -> list[np.ndarray]:
    import jax
    import jax.numpy as jnp

    return [np.asarray(jax.random.key_data(v) if jnp.issubdtype(jnp.asarray(v).dtype, jax.dtypes.prng_key) else v)
            for v in jax.tree_util.tree_leaves(tree)]


def _same(a: Any, b: Any, close: bool = False) -> bool:
    """Whether two pytrees have one structure and equal leaves (with ``close``: floating leaves
    within float32's rounding of each other, as a compiled and an eager step may differ)."""
    import jax

    if jax.tree_util.tree_structure(a) != jax.tree_util.tree_structure(b):
        return False
    return all(np.allclose(u, v, rtol=1e-4, atol=1e-6, equal_nan=True) if close and u.dtype.kind == "f"
               else np.array_equal(u, v, equal_nan=u.dtype.kind == "f") for u, v in zip(_leaves(a), _leaves(b)))


def _finite(tree: Any) -> bool:
    import jax
    import jax.numpy as jnp

    return all(bool(jnp.all(jnp.isfinite(v))) for v in jax.tree_util.tree_leaves(tree)
               if hasattr(v, "dtype") and jnp.issubdtype(v.dtype, jnp.inexact))


def _error(err: Exception) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200] if text else ''}"


def check_method(method: str | type, **hyperparameters: Any) -> Report:
    """Check ``method`` (a class, or a name as a config's ``method:`` takes it: a registry name,
    ``path/to/file.py:Class`` or ``package.module:Class``) built with ``hyperparameters`` against
    every point of :data:`POINTS` (module docstring); never raises for the method's own faults."""
    import jax

    from pmd.interface import ConfigError, take_step
    from pmd.posterior import Posterior
    from pmd.runner import run

    from .methods import PASSED, handles, resolve

    spec = method if isinstance(method, str) else f"{method.__module__}:{method.__qualname__}"
    report = Report(spec)
    add = report.checks.append
    pending = list(POINTS)

    def finish(reason: str) -> Report:
        for name in pending[len(report.checks):]:
            add(Check(name, False, f"not checked: {reason}"))
        return report

    # class
    try:
        cls = resolve(method) if isinstance(method, str) else method
    except ConfigError as err:
        add(Check("class", False, str(err)))
        return finish("no class")
    if not inspect.isclass(cls):
        add(Check("class", False, f"{spec} is a {type(cls).__name__}, not a class"))
        return finish("no class")
    missing = [a for a in ("method_family", "reference") if not isinstance(getattr(cls, a, None), str)]
    if missing:
        add(Check("class", False, f"{cls.__name__} lacks the class attributes {', '.join(missing)} (strings: the "
                                  "family its row is grouped in, the paper or library it implements)"))
        return finish("the class is incomplete")
    if "model" not in handles(cls):
        add(Check("class", False, f"{cls.__name__} handles {', '.join(handles(cls))}, not a generic model; "
                                  "check-method runs on a conjugate Gaussian model"))
        return finish("not a generic-model method")
    add(Check("class", True, f"{cls.__name__} ({cls.method_family}; {cls.reference})"))

    # constructor
    params = inspect.signature(cls).parameters
    names = list(params)
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    wrong = [] if names[:1] and params[names[0]].kind is not inspect.Parameter.KEYWORD_ONLY else ["model first"]
    wrong += [f"{p}=" for p in PASSED[1:] if p not in params and not takes_kwargs]
    if wrong:
        add(Check("constructor", False, f"Method(model, data_size=N, num_particles=m, **hyperparameters) expected; "
                                        f"{cls.__name__}{inspect.signature(cls)} lacks {', '.join(wrong)}"))
        return finish("the constructor")
    shown = str(inspect.signature(cls))
    add(Check("constructor", True, f"{cls.__name__}{shown if len(shown) < 100 else shown[:96] + ' ...)'}"))

    # build
    model, x, exact_mean, exact_sd = _problem()
    options = dict(hyperparameters)
    if "num_particles" in params or takes_kwargs:
        options.setdefault("num_particles", PARTICLES)
    if "data" in params:
        options["data"] = x
    if "num_steps" in params:
        options.setdefault("num_steps", PASSES * NUM_DATA // BATCH)
    try:
        algo = cls(model, data_size=NUM_DATA, **options)
    except Exception as err:  # noqa: BLE001  (the method's own fault is the finding)
        add(Check("build", False, _error(err)))
        return finish("it could not be built")
    add(Check("build", True, f"on a {model.dim}-d conjugate Gaussian model, N = {NUM_DATA}"))

    # init
    key = jax.random.key(0)
    if not callable(getattr(algo, "init", None)):
        add(Check("init is pure in its key", False, f"{cls.__name__} has no init(key) method"))
        return finish("no init")
    try:
        state, again = algo.init(key), algo.init(key)
    except Exception as err:  # noqa: BLE001
        add(Check("init is pure in its key", False, _error(err)))
        return finish("init failed")
    if not _same(state, again):
        add(Check("init is pure in its key", False, "two calls with the same key gave different states "
                                                    "(randomness outside the key: NumPy's or Python's global state?)"))
        return finish("init is not pure")
    add(Check("init is pure in its key", True))

    # step
    if not callable(getattr(algo, "step", None)):
        add(Check("step is pure in its key", False, f"{cls.__name__} has no step(key, state, batch) method"))
        return finish("no step")
    rows = np.arange(BATCH)
    batch = x[rows]
    try:
        one, info = take_step(algo, jax.random.key(1), state, batch, rows, x)
        two, _ = take_step(algo, jax.random.key(1), state, batch, rows, x)
    except Exception as err:  # noqa: BLE001
        add(Check("step is pure in its key", False, _error(err)))
        return finish("step failed")
    if not _same(one, two) or jax.tree_util.tree_structure(one) != jax.tree_util.tree_structure(state):
        add(Check("step is pure in its key", False, "two steps from one state with one key differ, or the state "
                                                    "changed its structure"))
        return finish("step is not pure")
    add(Check("step is pure in its key", True))
    try:
        jitted = jax.jit(lambda k, s, b, r: take_step(algo, k, s, b, r, x))
        compiled, _ = jitted(jax.random.key(1), state, batch, rows)
        ok = _same(compiled, one, close=True)
    except Exception as err:  # noqa: BLE001
        add(Check("step compiles with jax.jit", False, _error(err)))
        return finish("step does not compile")
    add(Check("step compiles with jax.jit", ok, "" if ok else "the compiled step's state differs from the eager one"))

    # posterior
    if not callable(getattr(algo, "posterior", None)):
        add(Check("posterior", False, f"{cls.__name__} has no posterior(state) method returning a pmd.Posterior"))
        return finish("no posterior")
    try:
        post = algo.posterior(one)
        mean, cov = np.asarray(post.mean()), np.asarray(post.cov())
        draws = np.asarray(post.sample(jax.random.key(2), 7))
        samples, log_w = post.weighted_samples(jax.random.key(3), 64)
    except Exception as err:  # noqa: BLE001
        add(Check("posterior", False, _error(err)))
        return finish("no posterior")
    shapes = (mean.shape, cov.shape, draws.shape, np.shape(samples)[1:])
    expect = ((2,), (2, 2), (7, 2), (2,))
    if not isinstance(post, Posterior) or shapes != expect:
        add(Check("posterior", False, f"expected pmd.Posterior's protocol with mean (2,), cov (2, 2), sample(key, 7) "
                                      f"(7, 2), weighted samples (n, 2); got {type(post).__name__} with {shapes}"))
    else:
        add(Check("posterior", True, type(post).__name__))
    total = float(np.exp(np.logaddexp.reduce(np.asarray(log_w, np.float64))))
    add(Check("weighted samples sum to one", abs(total - 1.0) < 1e-4,
              f"the normalised log-weights' exponentials sum to {total:.6g}"))
    finite = _finite(one) and _finite((post.mean(), post.cov(), draws))
    add(Check("finite output", finite, "" if finite else "the state, mean, covariance or draws hold NaN or inf"))
    has_work = "evals" in info
    add(Check("work reported", has_work,
              f"info: {', '.join(sorted(info))}" if has_work else
              "the step's info has no 'evals' (pmd.interface.work): the workflow charges m·B a step"))

    # accuracy
    try:
        result = run(algo, x, jax.random.key(4), batch_size=BATCH, num_passes=PASSES)
        mean = np.asarray(result.posterior.mean(), np.float64)
        sd = np.sqrt(np.diag(np.asarray(result.posterior.cov(), np.float64)))
    except Exception as err:  # noqa: BLE001
        add(Check("accuracy on a conjugate model", False, _error(err)))
        return report
    z = np.abs(mean - exact_mean) / exact_sd
    ratio = sd / exact_sd
    ok = bool(np.all(z <= MEAN_SDS) and np.all((ratio <= SD_FACTOR) & (ratio >= 1 / SD_FACTOR)))
    add(Check("accuracy on a conjugate model", ok,
              f"after {PASSES} passes of batch {BATCH}: mean off by {np.max(z):.2f} posterior sd (bound {MEAN_SDS:g}), "
              f"sd ratio {np.min(ratio):.2f}-{np.max(ratio):.2f} (bound {1 / SD_FACTOR:.2f}-{SD_FACTOR:g})"))
    return report

"""One tuning protocol for every method, PMD included (the paper's H.4 grid search, made
blind to the reference posterior, as benchopt-style benchmarks tune their solvers).

* The training data are split once: a ``fraction`` of the rows (default 0.2), drawn with the
  tuning's own seed, is held out for validation; the method never sees them.
* Each point of the method's grid (``<experiment>.tuning.grids.<label>``: ``{setting: [values]}``,
  every combination) runs on the remaining rows at the experiment's run settings (batch size,
  passes), with tuning seeds ``TUNING_SEED + k`` that no reported run uses (those are 0, 1, ...).
* A point is scored by its held-out log predictive density on the validation rows, the
  experiment's :class:`Criterion`. Where the model has a likelihood per row (mixture, logistic,
  posteriordb, custom: :func:`rows_criterion`) it is
  ``LPD = 1/V Σ_v log Σ_s w_s p(x_v | θ_s)``, over ``n`` points ``(θ_s, w_s)`` of the method's own
  posterior (:func:`pmd.posterior.own_draws`, the yardstick's sample): a criterion every method
  has (Fong et al. 2019 score NPL and its competitors by it) and that never reads the reference.
  The sparse GP scores its validation rows under the method's Gaussian predictive and LDA its
  validation documents by the one held-out perplexity estimator
  (:mod:`workflow.experiments.sparse_gp_tuning`, :mod:`workflow.experiments.lda_tuning`).
* A method that maximises the evidence lower bound (``maximises = "elbo"`` on its class: SVI, NumPyro's
  SVI, NPV) is scored instead by that objective, the method's own objective
  where it has one: :func:`elbo_criterion`, ``ELBO = E_q[log p(θ) + Σ_n log p(x_n|θ) − log q(θ)]``
  (Blei, Kucukelbir & McAuliffe 2017, eq. 13) over the data it ran on, estimated from ``n`` draws of
  its own density ``q``. It needs no held-out rows, so these methods run on all the training data
  (a one-datum posterior is tuned too).
* A posterior of one datum (a likelihood that does not factor: posteriordb's time series) has no
  row to hold out. Every other method is tuned there by minus the kernel Stein discrepancy of its
  own ``n`` points against the posterior on all the data (:func:`stein_criterion`,
  :mod:`pmd.stein`; Gorham & Mackey 2017): like the LPD, a criterion every method has, read from
  the model (its score ``∇ log p``) and never from the reference; unlike a held-out LPD, it
  measures the distance to the posterior itself. Why not the LPD for them: from their Laplace start the
  smallest learning rate barely moves them, and on a few validation rows the start's predictive
  scores as well as the optimum's (posteriordb's mesquite: held-out LPD −0.27555 at the grid's
  smallest rate, −0.27833 at the default, 9 validation rows; the ELBO orders the same runs by their
  distance to the posterior: −50.21 at the smallest rate, 0.67 reference sd off, −49.98 at the
  default and above, 0.04 to 0.17 sd off).
* The point with the best mean score over the tuning seeds is chosen, where the seeds tell it apart
  from the others: a point within one standard error of its difference from the best (from the two
  points' spreads over the tuning seeds) is tied with it, and the tie goes to the point nearest the grid's middle
  (:func:`chosen_point`), so that no choice lands on an edge on noise alone. A run that raises, or whose
  score is not finite, scores ``-inf`` and keeps its error. Where no point scores a finite mean (every
  point failed on a tuning seed: NumPyro's SVI from its uniform start on arma), nothing is chosen: the
  result says so (``not_tuned``, with the first error) and the tuned run is the default run, as for
  data that cannot be tuned; the grid's points and errors stay in the result.

:func:`tune` returns the grid, every point's scores, the chosen point and what the tuning cost
(stepping seconds, the raw counts ``evals`` and ``grad_evals``, and ``work`` in units,
:func:`pmd.work.units`, summed over all its runs), for the
tuned run's parameters and the tables' ``tuned`` row. A point's method is built once and run on
every tuning seed, so its programs compile once (:func:`pmd.runner.compiled_programs`) and a start
it computes when built (SVI's Laplace start, ``start_work``) is done and counted once. Each point's
scores are ``score`` (per seed) and ``mean_score``, the criterion's name ``criterion``; results
written before 2026-11-26 named them ``lpd`` and ``mean_lpd`` (all held-out LPDs), which
:func:`point_score` still reads.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from pmd import ConfigError, Model, own_draws, run
from pmd.stein import kernel_stein_discrepancy
from pmd.work import as_counts, units

from . import methods

TUNING_SEED = 10_000  # tuning runs use TUNING_SEED + k; the reported runs use seeds 0, 1, ...


def grid_points(grid: dict[str, list]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, as settings dicts (in the grid's order)."""
    if not grid or any(not isinstance(v, list) or not v for v in grid.values()):
        raise ConfigError(f"a tuning grid maps each setting to a non-empty list of values, got {grid!r}")
    names = list(grid)
    return [dict(zip(names, values)) for values in itertools.product(*(grid[n] for n in names))]


def split_rows(rows: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(training indices, validation indices)`` of ``rows`` rows, each sorted: a random
    ``fraction`` of them, drawn with ``seed``, held out."""
    if not 0.0 < fraction < 1.0:
        raise ConfigError(f"the validation fraction must lie in (0, 1), got {fraction!r}")
    held = int(round(fraction * rows))
    if not 1 <= held < rows:
        raise ConfigError(f"a validation split of {fraction} leaves no rows on one side of {rows}")
    order = np.random.default_rng(seed).permutation(rows)
    return np.sort(order[held:]), np.sort(order[:held])


def validation_split(data: Any, fraction: float, seed: int) -> tuple[Any, Any]:
    """``(training rows, validation rows)`` of a pytree of arrays whose leading axis is its rows
    (:func:`split_rows`)."""
    rows = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    take = lambda idx: jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], data)  # noqa: E731
    return tuple(map(take, split_rows(rows, fraction, seed)))


def heldout_lpd(posterior, model: Model, valid: Any, key: jax.Array, num_samples: int) -> float:
    """The module docstring's ``LPD`` of ``valid`` under ``num_samples`` points of ``posterior``."""
    samples, log_w = own_draws(posterior, key, num_samples)
    loglik = model.batch_log_likelihood(samples, jax.tree_util.tree_map(jnp.asarray, valid))  # (n, V)
    return float(jnp.mean(logsumexp(loglik + log_w[:, None], axis=0)))


def elbo(posterior, model: Model, data: Any, key: jax.Array, num_samples: int, chunk: int = 100) -> float:
    """The module docstring's ``ELBO`` of ``posterior`` (which must have a density) on ``data``, the
    mean over ``num_samples`` of its draws (``chunk`` draws at a time, to bound memory on large data)."""
    if not posterior.has_density():
        raise ConfigError(f"the ELBO needs the posterior's density; {type(posterior).__name__} has none")
    theta = posterior.sample(key, num_samples)
    rows = jax.tree_util.tree_map(jnp.asarray, data)
    terms = [model.log_prior_many(t) + jnp.sum(model.batch_log_likelihood(t, rows), axis=1) - posterior.log_density(t)
             for t in (theta[i:i + chunk] for i in range(0, num_samples, chunk))]
    return float(jnp.mean(jnp.concatenate(terms)))


@dataclass(frozen=True)
class Criterion:
    """How one experiment is tuned: ``split(data, fraction, seed) -> (train, valid)`` holds the
    validation part out of the training data, ``model(train)`` is the model the methods run on,
    and ``score(result, method, model, valid, key)`` is a finished run's (:class:`pmd.runner.RunResult`)
    score on ``valid``, higher better: its held-out log predictive density, or for ``held_out=False``
    (the method's own objective) its objective on the rows it ran on (``split`` then gives
    ``(data, data)``). ``name`` says which, for the result and the tables."""

    split: Callable[[Any, float, int], tuple[Any, Any]]
    model: Callable[[Any], Any]
    score: Callable[..., float]
    name: str = "held-out log predictive density per validation row"
    held_out: bool = True


def rows_criterion(model: Model, num_samples: int) -> Criterion:
    """The criterion of a model with a likelihood per row (mixture, logistic, posteriordb, custom):
    rows held out (:func:`validation_split`), scored by :func:`heldout_lpd` over ``num_samples``
    points of the method's own posterior."""
    return Criterion(split=validation_split, model=lambda train: model,
                     score=lambda result, method, model, valid, key: heldout_lpd(result.posterior, model, valid, key,
                                                                                 num_samples))


def elbo_criterion(model: Model, num_samples: int) -> Criterion:
    """The criterion of a method that maximises the ELBO (module docstring): no rows held out, scored
    by :func:`elbo` over ``num_samples`` draws of its density on all the training data."""
    return Criterion(split=lambda data, fraction, seed: (data, data), model=lambda train: model,
                     score=lambda result, method, model, rows, key: elbo(result.posterior, model, rows, key,
                                                                        num_samples),
                     name="ELBO on the training data (the method's own objective)", held_out=False)


def stein_score(posterior, model: Model, data: Any, key: jax.Array, num_samples: int) -> float:
    """Minus the kernel Stein discrepancy (:func:`pmd.stein.kernel_stein_discrepancy`) of
    ``num_samples`` points of ``posterior`` (:func:`pmd.posterior.own_draws`) against the posterior
    of ``model`` on all of ``data``, whose score ``∇ log p(θ) + Σ_n ∇ log p(x_n|θ)`` it reads; higher
    is better."""
    samples, log_w = own_draws(posterior, key, num_samples)
    rows = jax.tree_util.tree_map(jnp.asarray, data)

    def log_joint(thetas):  # the points are independent: the gradient of the sum is each point's score
        return jnp.sum(model.log_prior_many(thetas) + jnp.sum(model.batch_log_likelihood(thetas, rows), axis=1))

    return -float(kernel_stein_discrepancy(samples, log_w, jax.grad(log_joint)(samples)))


def stein_criterion(model: Model, num_samples: int) -> Criterion:
    """The criterion of a posterior with no row to hold out (one datum: a time series): no rows held
    out, a run scored by :func:`stein_score` over ``num_samples`` points of its own posterior, a
    criterion every method has that reads the model's score and never the reference."""
    return Criterion(split=lambda data, fraction, seed: (data, data), model=lambda train: model,
                     score=lambda result, method, model, rows, key: stein_score(result.posterior, model, rows, key,
                                                                               num_samples),
                     name="minus the kernel Stein discrepancy (IMQ kernel) of its own draws", held_out=False)


def criterion_for(method: type, model: Model, num_samples: int, rows: int | None = None) -> Criterion:
    """:func:`elbo_criterion` for a method class whose ``maximises`` is ``"elbo"``; else, for data of
    ``rows < 2`` rows (one datum: nothing to hold out), :func:`stein_criterion`; else
    :func:`rows_criterion` (a model with a likelihood per row)."""
    if getattr(method, "maximises", None) == "elbo":
        return elbo_criterion(model, num_samples)
    if rows is not None and rows < 2:
        return stein_criterion(model, num_samples)
    return rows_criterion(model, num_samples)


def point_score(point: dict) -> float:
    """A tuning point's mean score (``mean_score``; ``mean_lpd`` in results written before 2026-11-26)."""
    return point["mean_score"] if "mean_score" in point else point["mean_lpd"]


def chosen_point(points: list[dict]) -> tuple[dict, list[int]]:
    """The grid point to choose, and the indices of the points tied with the best: the best mean
    score, except that a point whose mean lies within one standard error of its difference from
    the best, ``√((s²_best + s²_p)/k)`` (each point's variance over its ``k`` tuning seeds,
    ``ddof = 1``; 0 with one seed, where only equal means tie), is tied with it, and the tie goes
    to the tied point nearest the grid's middle (then the earlier). Tied points are points the
    tuning seeds cannot tell apart, and taking the first of them would put the choice on the
    grid's edge on no evidence."""
    finite = [i for i, p in enumerate(points) if math.isfinite(p["mean_score"])]
    if not finite:
        return max(points, key=lambda p: p["mean_score"]), []

    def variance(p):
        return float(np.var(p["score"], ddof=1)) if len(p["score"]) > 1 else 0.0

    top = max(finite, key=lambda i: points[i]["mean_score"])
    best = points[top]
    tied = [i for i in finite if best["mean_score"] - points[i]["mean_score"]
            <= math.sqrt((variance(best) + variance(points[i])) / len(best["score"]))]
    middle = (len(points) - 1) / 2
    return points[min(tied, key=lambda i: (abs(i - middle), i))], tied


def not_tunable(data: Any) -> str | None:
    """Why ``data`` cannot be split into training and validation rows, or ``None`` when it can: a
    data set of one datum (a likelihood that does not factor: a time series, posteriordb's non-i.i.d.
    posteriors) has no held-out row to score."""
    rows = int(jax.tree_util.tree_leaves(data)[0].shape[0])
    return "one datum (a likelihood that does not factor): no validation split" if rows < 2 else None


def not_tunable_result(grid: dict[str, list], params: dict, reason: str) -> dict:
    """:func:`tune`'s result for data that :func:`not_tunable` refuses: no point run, the method's
    own settings chosen (the tuned run is the default run), the reason kept."""
    return {"grid": grid, "points": [], "chosen": {}, "seconds": 0.0, "evals": 0.0, "grad_evals": 0.0, "work": 0.0,
            "fraction": params["fraction"], "seeds": params["seeds"], "not_tuned": reason}


def tune(label: str, spec: dict, data: Any, settings: dict, grid: dict[str, list], criterion: Criterion, *,
         seeds: int = 2, fraction: float = 0.2, build: Callable | None = None) -> dict:
    """Run the module docstring's protocol for method ``label`` (its config entry ``spec``) on the
    experiment's training ``data``, scored by ``criterion``, and return ``{"grid", "points":
    [{"point", "score": [per seed], "mean_score", "error"}], "chosen", "criterion", "seconds", "evals",
    "grad_evals", "work", "fraction", "seeds"}`` (``fraction`` None where the criterion holds no rows out), and
    ``not_tuned`` (the reason; ``chosen`` empty) where no point scored a finite mean. ``settings`` are
    the runner's ``batch_size`` and ``num_passes``; ``build(spec, model, train, num_steps)`` makes the
    method (default :func:`workflow.methods.build`)."""
    build = build or (lambda s, m, d, steps: methods.build(label, s, m, d, steps))
    train, valid = criterion.split(data, fraction, TUNING_SEED)
    model = criterion.model(train)
    rows = int(jax.tree_util.tree_leaves(train)[0].shape[0])
    batch = min(settings["batch_size"], rows)
    num_steps = max(1, math.ceil(settings["num_passes"] * rows / batch))
    points, seconds, evals, grads, spent = [], 0.0, 0.0, 0.0, 0.0
    for point in grid_points(grid):
        scores, error, method, start = [], None, None, {}
        for k in range(seeds):
            key = jax.random.key(TUNING_SEED + k)
            try:
                if method is None:  # one object per point: its seeds share its compiled programs
                    method = build({**spec, **point}, model, train, num_steps)
                    start = as_counts(getattr(method, "start_work", (0.0, 0.0)))
                    # its start, done once when built
                    evals, grads = evals + start.get("evals", 0.0), grads + start.get("grad_evals", 0.0)
                    spent += float(units(start))
                result = run(method, train, key, batch_size=batch, num_passes=settings["num_passes"])
                seconds += result.step_seconds
                # a run's curves begin at the start's work
                evals += float(result.curves["evals"][-1]) - start.get("evals", 0.0)
                grads += float(result.curves["grad_evals"][-1]) - start.get("grad_evals", 0.0)
                spent += float(result.curves["work"][-1]) - float(units(start))
                scores.append(criterion.score(result, method, model, valid, jax.random.fold_in(key, 1)))
            except (ConfigError, FloatingPointError, ValueError) as err:  # a failed point scores -inf
                error, scores = f"{type(err).__name__}: {err}", scores + [-math.inf]
        mean = float(np.mean(scores)) if all(map(math.isfinite, scores)) else -math.inf
        points.append({"point": point, "score": scores, "mean_score": mean, "error": error})
    best, tied = chosen_point(points)
    out = {"grid": grid, "points": points, "chosen": best["point"], "tied": tied, "criterion": criterion.name,
           "seconds": seconds,
           "evals": evals, "grad_evals": grads, "work": spent, "fraction": fraction if criterion.held_out else None,
           "seeds": seeds}
    if not math.isfinite(best["mean_score"]):
        errors = [p["error"] for p in points if p["error"]]
        out.update(chosen={}, not_tuned=f"no grid point ran to a finite {criterion.name} on every tuning seed"
                   + (f" (first error: {errors[0]})" if errors else " (no run raised; every score was -inf or NaN)"))
    return out

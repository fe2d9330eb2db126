"""Methods against posteriordb's reference posteriors (Magnusson et al. 2024; :mod:`pmd.models.posteriordb`).

Every method runs on every posterior under ONE rule, nothing tuned per posterior:

* the method reads exactly ``P`` whole passes over the data in batches of ``B = ⌈N /
  steps_per_pass⌉`` data points, the last batch shorter where ``B`` does not divide ``P·N``
  (:func:`pmd.runner.run_batches`), so every run ends at a pass end, where each method's iterate is
  defined: PMD's between two pass ends is not the posterior (rows of a partial pass weigh unlike
  the others; ending mid-pass overstated PMD's kidiq error 3-5 times). ``P = num_passes`` when
  ``N ≥ steps_per_pass``; a smaller data set (``B = 1``) gets ``P = ⌈num_passes · steps_per_pass /
  N⌉`` passes, about ``num_passes · steps_per_pass`` steps, so that a non-i.i.d. posterior (its
  data set is ONE datum, ``N = 1``) gets that many full-likelihood steps, not ``num_passes``
  (too few for any iterative method);
* a method's config entry may override ``batch_size``, ``num_passes`` and ``eval_every`` (as in the
  other experiments, :func:`workflow.methods.split_spec`), and ``steps_per_pass``.

:func:`run_one` evaluates once every ``steps_per_pass`` steps (from step 0, the prior): the
posterior's weighted samples (``eval_samples`` draws from a posterior that has only a density),
mapped to the reference draws' columns by :meth:`PosteriordbProblem.constrain`, scored against
the reference draws of all chains pooled (:class:`pmd.sample_metrics.SampleReference`). A run
whose final weighted samples are not finite, or whose method raises (at its start too: SVI's Laplace
start on a posterior with no mode), is recorded as failed: NaN
metrics and the reason in the result file and in MLflow (run status FAILED), and the job still
succeeds so that the table shows the failed cell.

:func:`make_floor` scores ``eval_samples`` draws of the last reference chain against the other
chains: the floor of each distance at the sample size every method is scored from (what that many
independent exact draws would score, up to the chains' autocorrelation). It also records whether the
reference draws, mapped to the unconstrained scale every method works on, are close to Gaussian
(:func:`pmd.normality.normality`): where they are not, a Gaussian approximation cannot be exact.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import mlflow
import numpy as np

from pmd_bench.datasets.settings import Settings
from pmd import RunResult, own_draws, run
from pmd.models.posteriordb import PosteriordbProblem, load_problem, reference_draws
from pmd.normality import normality
from pmd.sample_metrics import SampleReference, reference_floor

from .. import methods
from ..results import save_json, save_npz
from ..tracking import git_commit, log_summary, tracked_run

EXPERIMENT = "posteriordb"
METRICS = ("mean_error", "mean_error_max", "mean_error_raw", "log_std_ratio", "log_std_ratio_max", "energy",
           "sliced_w2")


def budget(section: dict, label: str, spec: dict, num_data: int) -> tuple[dict, dict]:
    """The module docstring's rule: ``(spec, run settings)`` for a method entry on ``num_data`` points.

    The settings hold ``batch_size``, ``num_steps``, ``eval_every``, ``steps_per_pass``,
    ``num_passes`` (the entry's or the section's; a whole number), the work cap ``max_work``
    (None: none), the data budget ``budget_points`` (points fed to the method) and ``budget_passes``
    (the same in passes over the data, whole). The cap is ``max_work_per_row`` per row of each of
    ``num_passes`` passes' worth of the budget: ``max_work_per_row × budget_points / num_passes``,
    which is ``× N`` where ``N ≥ steps_per_pass`` and grows with the budget's ``P`` passes on a
    smaller data set, so that the cap stays what the same method spends in the budget whatever
    ``N`` (a one-datum posterior's 5,000 steps are not capped at 50).
    """
    spec = dict(spec)
    steps_per_pass = spec.pop("steps_per_pass", section["steps_per_pass"])
    defaults = {"batch_size": math.ceil(num_data / steps_per_pass), "num_passes": section["num_passes"],
                "eval_every": None, "max_work_per_row": section.get("max_work_per_row")}
    spec, settings = methods.split_spec(label, spec, defaults)
    if settings["num_passes"] != int(settings["num_passes"]) or settings["num_passes"] < 1:
        raise ValueError(f"posteriordb: {label}'s num_passes={settings['num_passes']!r} must be a whole number "
                         "of passes (a run that ends mid-pass stops PMD between its pass-end moves)")
    batch = settings["batch_size"]
    passes = int(settings["num_passes"]) if num_data >= steps_per_pass else math.ceil(
        settings["num_passes"] * steps_per_pass / num_data)
    # the cap grows with the budget: a data set smaller than steps_per_pass reads P > num_passes passes
    settings = methods.with_work_cap(settings, num_data * passes / settings["num_passes"])
    return spec, {**settings, "steps_per_pass": steps_per_pass, "num_steps": math.ceil(passes * num_data / batch),
                  "eval_every": settings["eval_every"] or steps_per_pass * batch,
                  "budget_points": passes * num_data, "budget_passes": passes}


def run_budgeted(method, data, settings: dict, key, evaluate, logger=None, eval_every: int | None = None,
                 start: tuple[float, float] = (0.0, 0.0)) -> RunResult:
    """:func:`pmd.run` for exactly ``settings["budget_passes"]`` passes in batches of
    ``settings["batch_size"]`` (the budget of :func:`budget`), evaluating every ``eval_every``
    points (default the settings'), its clock from the method's construction (``start``), its work
    capped at ``settings["max_work"]`` where set."""
    return run(method, data, key, batch_size=settings["batch_size"], num_passes=settings["budget_passes"],
               eval_every=eval_every or settings["eval_every"], evaluate=evaluate, logger=logger, start=start,
               max_work=settings.get("max_work"))


def constrained_samples(problem: PosteriordbProblem, posterior, key, num_samples: int) -> tuple[Any, Any, str | None]:
    """``num_samples`` points of the posterior's own distribution (:func:`pmd.posterior.own_draws`)
    on the reference draws' scale: ``(samples, log_weights, failure)``.

    ``failure`` (None when the sample is usable) says why it is not: non-finite log-weights, or
    samples of positive weight that are not finite once constrained. Samples of zero weight (unused
    slots) are zeroed so that they cannot poison the weighted sums.
    """
    thetas, log_w = own_draws(posterior, key, num_samples)
    samples, log_w = problem.constrain(thetas), jnp.asarray(log_w, jnp.float32)
    weighted = log_w > -jnp.inf
    if bool(jnp.any(jnp.isnan(log_w))) or not bool(jnp.any(weighted)):
        return samples, log_w, "the posterior's log-weights are NaN or all -inf"
    bad = int(jnp.sum(weighted & ~jnp.all(jnp.isfinite(samples), axis=1)))
    if bad:
        return samples, log_w, (f"{bad} of {int(jnp.sum(weighted))} weighted samples are not finite on the "
                                "constrained scale")
    return jnp.where(weighted[:, None], samples, 0.0), log_w, None


class Scorer:
    """The runner's ``evaluate(posterior, key)``: :meth:`SampleReference.score` of the constrained
    samples; NaN for every metric when :func:`constrained_samples` finds them unusable, the reason
    kept in :attr:`failure` (None after a usable evaluation)."""

    def __init__(self, problem: PosteriordbProblem, reference: SampleReference, num_samples: int):
        self.problem, self.reference, self.num_samples = problem, reference, num_samples
        self.failure: str | None = None

    def __call__(self, posterior, key) -> dict[str, float]:
        samples, log_w, self.failure = constrained_samples(self.problem, posterior, key, self.num_samples)
        if self.failure is not None:
            return {**{name: math.nan for name in METRICS}, "failed": 1.0}
        return {**self.reference.score(samples, log_w), "failed": 0.0}


def _outcome(result: RunResult | None) -> tuple[dict, dict]:
    """``(meta fields, arrays)`` of a run: final metrics, times, data visited and the curves; NaN
    metrics, NaN times and no curves for a run that raised (``result`` None)."""
    if result is None:
        return ({"final": {name: math.nan for name in METRICS}, "step_seconds": math.nan, "eval_seconds": math.nan,
                 "num_steps": 0, "visited": 0}, {"visited": np.zeros(0, np.int64)})
    return ({"final": {name: float(result.curves[name][-1]) for name in METRICS},
             "step_seconds": result.step_seconds, "eval_seconds": result.eval_seconds,
             "num_steps": result.num_steps, "visited": int(result.visited[-1])},
            {"visited": result.visited, **{f"curve/{name}": v for name, v in result.curves.items()}})


def run_one(cfg: dict, label: str, posterior: str, seed: int, out: str | Path, uri: str, experiment: str,
            params: dict[str, Any] | None = None, data_settings: Settings | None = None) -> dict:
    """Run method ``label`` with ``seed`` on ``posterior``, score it against the reference draws, write ``out``.

    ``cfg`` is the config's ``posteriordb`` section; ``params`` replaces the method's entry;
    ``data_settings`` locates the data (default: the environment's,
    :func:`datasets.settings.resolve_settings`). A failed run still writes ``out`` (``meta["status"]``
    ``"failed"`` and ``meta["error"]``; module docstring).
    """
    return run_seeds(cfg, label, posterior, [seed], [out], uri, experiment, params, data_settings)[0]


def run_seeds(cfg: dict, label: str, posterior: str, seeds: Sequence[int], outs: Sequence[str | Path], uri: str,
              experiment: str, params: dict[str, Any] | None = None,
              data_settings: Settings | None = None) -> list[dict]:
    """:func:`run_one` for every seed of ``seeds`` (its result file ``outs[i]``), one after another in
    this process (``posteriordb.seeds_in_one_job``): the data, the reference and the method are
    loaded and built once; every seed's clock still starts at the method's construction."""
    if params is None and label not in cfg["methods"]:
        raise ValueError(f"posteriordb: method {label!r} is not in the config's posteriordb.methods "
                         f"({', '.join(cfg['methods'])})")
    problem = load_problem(posterior, data_settings)
    draws = reference_draws(problem, data_settings)
    return run_problem(cfg, label, problem, draws, seeds, outs, uri, experiment, params, EXPERIMENT)


def run_problem(cfg: dict, label: str, problem: PosteriordbProblem, draws: np.ndarray, seeds: Sequence[int],
                outs: Sequence[str | Path], uri: str, experiment: str, params: dict[str, Any] | None,
                tag: str) -> list[dict]:
    """:func:`run_seeds` on a built ``problem`` scored against its reference ``draws`` ``(chains,
    draws, k)`` (columns in ``problem.columns`` order): the budget rule, the scorer, each seed's
    result file and MLflow run (tagged ``experiment=tag``, ``posterior=problem.name``) of every
    experiment that compares methods against reference draws (this one and :mod:`.custom`).

    The method is built once and every seed runs from it (:func:`pmd.run`'s ``start``: each seed's
    seconds and work count from that construction); a later seed reuses the first one's compiled
    programs (its ``compile_seconds`` zero). Each seed's ``total_seconds`` is the shared preparation
    (reference, construction) plus its own run, scoring and writing."""
    if not seeds or len(seeds) != len(outs) or len(set(seeds)) != len(seeds):
        raise ValueError(f"posteriordb: {label} needs distinct seeds and one result file each: got seeds "
                         f"{list(seeds)} and {len(outs)} file(s)")
    t0 = time.perf_counter()
    posterior = problem.name
    reference = SampleReference(np.asarray(draws).reshape(-1, len(problem.columns)))
    num_data = int(jax.tree_util.tree_leaves(problem.data)[0].shape[0])
    spec, settings = budget(cfg, label, cfg["methods"][label] if params is None else params, num_data)
    try:
        (method, start), start_failure = methods.build_timed(label, spec, problem.model, problem.data,
                                                             settings["num_steps"]), None
    except FloatingPointError as err:  # the method cannot start here (SVI's Laplace start finds no mode): a result
        method, start, start_failure = None, (0.0, 0.0), err
    evaluate = Scorer(problem, reference, cfg["eval_samples"])
    tags = {"experiment": tag, "posterior": posterior}
    prepared, commit, metas = time.perf_counter() - t0, git_commit(), []
    for seed, out in zip(seeds, outs):
        t_seed = time.perf_counter()
        run_params = {"method": label, "posterior": posterior, "seed": seed, "num_data": num_data, "iid": problem.iid,
                      "dim": problem.model.dim, "eval_samples": cfg["eval_samples"], **settings,
                      **{f"method.{k}": v for k, v in spec.items()}}
        with tracked_run(uri, experiment, f"{label}-{posterior}-seed{seed}", run_params, tags) as logger:
            try:
                if start_failure is not None:
                    raise start_failure
                result = run_budgeted(method, problem.data, settings, jax.random.key(seed), evaluate, logger,
                                      start=start)
                error = evaluate.failure
            except Exception as err:  # noqa: BLE001 (a method's failure is a result: the table shows it)
                result, error = None, f"{type(err).__name__}: {err}"
            outcome, arrays = _outcome(result)
            meta = {"method": label, "posterior": posterior, "seed": seed, "params": run_params, "commit": commit,
                    "status": "ok" if error is None else "failed", "error": error, **outcome,
                    "total_seconds": prepared + time.perf_counter() - t_seed}
            if len(seeds) > 1:
                meta["seeds_in_job"] = len(seeds)
            save_npz(out, arrays, meta)
            mlflow.log_artifact(str(out), artifact_path="result")
            log_summary(meta)
            mlflow.set_tags({"status": meta["status"], **({"error": error[:4000]} if error else {})})
            if error is not None:
                mlflow.end_run(status="FAILED")
        metas.append(meta)
    return metas


def make_floor(posterior: str, out: str | Path, num_samples: int, data_settings: Settings | None = None,
               seed: int = 0) -> dict:
    """Score ``num_samples`` draws of the last reference chain against the other chains pooled
    (:func:`pmd.sample_metrics.reference_floor`), write the JSON to ``out``.

    ``num_samples`` is the section's ``eval_samples``, the number every method is scored from.
    Returns ``{"posterior", "floor": {metric: value}, "floor_samples", "chains", "draws", "columns",
    "num_data", "iid", "dim", "normality"}``: the floor is what that many held-out reference draws
    score; ``normality`` is :func:`pmd.normality.normality` of the reference draws on the
    unconstrained scale (``normality["close"]``: close to Gaussian). Floor files written before it
    lack the key: not computed.
    """
    problem = load_problem(posterior, data_settings)
    return floor_of(problem, reference_draws(problem, data_settings), out, num_samples, seed)


def floor_of(problem: PosteriordbProblem, draws: np.ndarray, out: str | Path, num_samples: int,
             seed: int = 0) -> dict:
    """:func:`make_floor` of a built ``problem`` and its reference ``draws`` ``(chains, draws, k)``."""
    floor = reference_floor(draws, num_samples)
    thetas = np.asarray(problem.unconstrain(draws.reshape(-1, draws.shape[-1]))).reshape(*draws.shape[:2], -1)
    summary = {"posterior": problem.name, "floor": floor, "floor_samples": int(num_samples),
               "chains": int(draws.shape[0]), "draws": int(draws.shape[1]),
               "columns": list(problem.columns), "iid": problem.iid, "dim": problem.model.dim,
               "num_data": int(jax.tree_util.tree_leaves(problem.data)[0].shape[0]),
               "normality": normality(thetas, seed)}
    save_json(out, summary)
    return summary

"""``pmd-bench regress``: a workflow run's metrics against a committed baseline, each in a tolerance band.

Nothing is rerun: the result files a workflow run left under its ``results_dir`` are read, one
value per run file (each seed's final value), and compared with the baseline written by
:func:`write_baseline` from a run of the same config at several seeds (the config's
``regress.seeds``; Snakemake's rule ``regress_baseline`` runs them and writes the file).

**Metrics** (:data:`METRICS`): the final values the experiments' tables report, per method
(``<experiment>/[<posterior or problem>/]<method>/<metric>``): mixture TV and cross entropy (the
paper's estimator and the LOO KDE); logistic test error and log-likelihood and the distances to
the NUTS reference; posteriordb mean and worst-coordinate errors; sparse-GP RMSEs and variance
ratio; LDA held-out log-perplexity and topic recovery; Theorem 5's RMS errors and slope (rate).
Times are left out: they measure the machine and its load, not the code.

**Bands.** For a metric observed at ``n ≥ 2`` baseline seeds with mean ``x̄`` and standard
deviation ``s``, a new run's value lies in::

    x̄ ± max(k · s · √(1 + 1/n), floor),   k = t_{n-1}^{-1}(1 - α / (2M)),   floor = max(1e-3·|x̄|, 1e-6)

``s·√(1+1/n)`` is the standard deviation of a new seed's value about the estimated mean; ``k``
is the two-sided Student-t quantile of a prediction interval at level ``α/M`` (Bonferroni over
the baseline's ``M`` metrics), so that with ``α = 0.05`` a change of seed alone, on an unchanged
tree, leaves every metric in its band with probability at least 95% if each metric's spread over
seeds were Gaussian (it is not always: a method stuck in one of two modes has a two-point
spread, which the wide ``k`` of few seeds absorbs). More seeds give narrower bands (``k`` ≈ 10.3
at 5 seeds and 100 metrics, 5.3 at 10). The ``floor`` keeps a band open where the seeds agree to
the last digit (a deterministic metric): float32 round-off differs between CPUs and BLAS builds by
far less than 0.1%, and no regression worth the name moves a metric by less.

Theorem 5's rate (``rate.json``) has no seed of its own: its spread is its replicates'
(``seeds`` independent runs per particle count ``m``): the delta method gives the standard error
of each RMS error and of the log-log slope, with ``n - 1`` degrees of freedom, and a new
measurement differs from the baseline's by ``√2`` of it.

A run file's value that is NaN passes only if some baseline seed was NaN too (a method allowed
to fail, e.g. on a posteriordb posterior); a metric the baseline has and the results lack is
reported as missing and fails, unless its experiment is skipped by the config (:func:`skipped`).
"""

from __future__ import annotations

import datetime
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from . import config as config_mod
from .results import load_npz, save_json

ALPHA = 0.05
FLOOR_REL = 1e-3
FLOOR_ABS = 1e-6

METRICS = {
    "mixture": ("tv", "tv_sharp", "ce", "ce_sharp"),
    "logistic": ("test_error", "test_loglik", "mean_error", "energy", "sliced_w2", "log_std_ratio"),
    "posteriordb": ("mean_error", "mean_error_max", "log_std_ratio_max"),
    "sparse_gp": ("test_rmse", "rmse_f", "rmse_exact", "var_ratio"),
    "lda": ("log_perplexity", "log_perplexity_common", "topic_hellinger"),
}
RATE_FILE = "figures/rate.json"


def skipped(cfg: dict) -> dict[str, str]:
    """Experiments the config does not run, with the reason (as the Snakemake rules decide)."""
    out = {name: "the config has no such section" for name in METRICS if name not in cfg}
    reason = config_mod.posteriordb_skip_reason(cfg)
    if reason is not None:
        out["posteriordb"] = reason
    return out


def run_folders(cfg: dict, results: str | Path) -> dict[str, Path]:
    """``{"<experiment>/[<posterior|problem>/]<method>": folder of its seed<k>.npz files}`` for every
    method the config runs (the Snakemake rules' layout)."""
    results, out = Path(results), {}
    drop = skipped(cfg)
    for experiment in METRICS:
        if experiment in drop:
            continue
        section = cfg[experiment]
        groups = (section["posteriors"] if experiment == "posteriordb"
                  else section["problems"] if experiment == "sparse_gp" else [None])
        for group in groups:
            for method in section["methods"]:
                key = "/".join(p for p in (experiment, group, method) if p)
                sub = (f"{experiment}/runs/{group}/{method}" if experiment == "posteriordb"
                       else f"{experiment}/{group}/runs/{method}" if group else f"{experiment}/runs/{method}")
                out[key] = results / sub
    return out


def baseline_inputs(cfg: dict, results: str | Path, seeds: int, only: list[str] | None = None) -> list[str]:
    """The result files a baseline of ``seeds`` seeds reads (the inputs of the rule ``regress_baseline``);
    with ``only``, those of the metrics under these prefixes."""
    files = [str(folder / f"seed{s}.npz") for key, folder in run_folders(cfg, results).items()
             if selected(key, only) for s in range(seeds)]
    return files + ([str(Path(results) / RATE_FILE)] if selected("rate", only) else [])


def _seed_files(folder: Path) -> list[tuple[str, Path]]:
    found = [(int(m.group(1)), p) for p in folder.glob("seed*.npz") if (m := re.fullmatch(r"seed(\d+)\.npz", p.name))]
    return [(f"seed{s}", p) for s, p in sorted(found)]


def _finals(experiment: str, path: Path) -> dict[str, float]:
    """The final value of each of the experiment's metrics that the run file holds."""
    arrays, meta = load_npz(path)
    if "final" in meta:  # posteriordb (a failed run has no curves) and lda
        values = meta["final"]
    else:
        values = {k[len("curve/"):]: v[-1] for k, v in arrays.items() if k.startswith("curve/") and len(v)}
    return {m: float(values[m]) for m in METRICS[experiment] if m in values}


def _rate(path: Path) -> dict[str, dict[str, Any]]:
    """Theorem 5's RMS error per ``m`` and the slope, each with its delta-method standard error."""
    result = json.loads(path.read_text())
    if "errors" not in result:
        raise ValueError(f"{path} has no per-replicate 'errors': rerun `pmd-bench rate` to regress it")
    errs = [np.asarray(e, np.float64) for e in result["errors"]]
    ms = np.asarray(result["particles"], np.float64)
    sq_mean = np.array([np.mean(e**2) for e in errs])
    sq_se = np.array([np.std(e**2, ddof=1) / math.sqrt(len(e)) for e in errs])
    rmse = np.sqrt(sq_mean)
    log_se = 0.5 * sq_se / sq_mean
    w = (np.log(ms) - np.log(ms).mean()) / np.sum((np.log(ms) - np.log(ms).mean()) ** 2)
    dof = min(len(e) for e in errs) - 1
    out = {f"rate/pmd/rmse_m{int(m)}": {"value": float(r), "se": float(r * s), "dof": dof}
           for m, r, s in zip(ms, rmse, log_se)}
    out["rate/pmd/slope"] = {"value": float(np.sum(w * np.log(rmse))), "se": float(math.sqrt(np.sum((w * log_se) ** 2))),
                             "dof": dof}
    return out


def observe(cfg: dict, results: str | Path) -> dict[str, dict[str, float]]:
    """``{metric key: {run: value}}`` of every result file present (runs are ``seed<k>``, ``rate.json``)."""
    out: dict[str, dict[str, float]] = {}
    for group, folder in run_folders(cfg, results).items():
        experiment = group.split("/")[0]
        for label, path in _seed_files(folder):
            for metric, value in _finals(experiment, path).items():
                out.setdefault(f"{group}/{metric}", {})[label] = value
    rate_path = Path(results) / RATE_FILE
    if rate_path.exists():
        for key, entry in _rate(rate_path).items():
            out[key] = {"rate.json": entry["value"]}
    return out


def band(mean: float, sd_pred: float, dof: int, num_metrics: int) -> dict[str, float]:
    """The module docstring's band about ``mean`` for a prediction standard deviation ``sd_pred``."""
    k = float(stats.t.ppf(1 - ALPHA / (2 * num_metrics), dof))
    half = max(k * sd_pred, FLOOR_REL * abs(mean), FLOOR_ABS)
    return {"k": k, "halfwidth": half, "lower": mean - half, "upper": mean + half}


def make_baseline(cfg: dict, results: str | Path, seeds: int, only: list[str] | None = None,
                  previous: dict | None = None) -> dict:
    """The baseline of the results of ``seeds`` seeds (module docstring); every expected file must exist.

    With ``only`` (prefixes, as ``regress --only``) and ``previous`` (the baseline in force), only
    the metrics under ``only`` are measured from ``results``; the others keep ``previous``'s values,
    every band is recomputed over the union (the same rule, the union's metric count), and the
    rewrite is recorded under ``updates`` (when, at which commit, which prefixes). This is for a
    change that moves one method's results: its seeds are rerun, the rest are not.
    """
    if (only is None) != (previous is None):
        raise ValueError("a partial baseline needs both only= and the previous baseline")
    missing = [f for f in baseline_inputs(cfg, results, seeds, only) if not Path(f).exists()]
    if missing:
        raise FileNotFoundError(f"the baseline needs {len(missing)} result files that are missing, e.g. {missing[0]}")
    if seeds < 2:
        raise ValueError(f"regress.seeds={seeds}: a spread over seeds needs at least 2")
    observed = {k: v for k, v in observe(cfg, results).items() if selected(k, only)}
    if only is not None:
        dropped = sorted(k for k in previous["metrics"] if selected(k, only) and k not in observed)
        if not observed or dropped:
            raise ValueError(f"--only {' '.join(only)}: the results in {results} hold no value of "
                             + (", ".join(dropped[:3]) if dropped else "any selected metric")
                             + ": rerun those seeds, or rewrite the baseline whole")
    rate_path = Path(results) / RATE_FILE
    rate = _rate(rate_path) if rate_path.exists() and selected("rate", only) else {}
    wanted = {f"seed{s}" for s in range(seeds)}
    metrics: dict[str, dict] = {}
    if previous is not None:
        metrics = {k: {f: v for f, v in e.items() if f not in ("k", "halfwidth", "lower", "upper")}
                   for k, e in previous["metrics"].items() if not selected(k, only)}
    for key, runs in sorted(observed.items()):
        if key in rate:
            entry = rate[key]
            metrics[key] = {"mean": entry["value"], "sd": entry["se"], "sd_pred": math.sqrt(2) * entry["se"],
                            "dof": entry["dof"], "source": "replicates", "values": runs, "nan_runs": 0}
            continue
        values = {label: v for label, v in runs.items() if label in wanted}
        finite = np.array([v for v in values.values() if math.isfinite(v)])
        entry = {"source": "seeds", "values": values, "nan_runs": len(values) - len(finite)}
        if len(finite) >= 2:
            sd = float(np.std(finite, ddof=1))
            entry.update(mean=float(finite.mean()), sd=sd, sd_pred=sd * math.sqrt(1 + 1 / len(finite)),
                         dof=len(finite) - 1)
        elif len(finite) == 1:
            raise ValueError(f"{key}: only one of {len(values)} baseline seeds is finite: no spread to measure")
        metrics[key] = entry
    metrics = dict(sorted(metrics.items()))
    for entry in metrics.values():
        if "mean" in entry:
            entry.update(band(entry["mean"], entry["sd_pred"], entry["dof"], len(metrics)))
    from .tracking import git_commit  # not at import: the Snakefile imports this module, mlflow is slow

    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    header = {"created": now, "commit": git_commit(), "seeds": seeds} if previous is None else {
        k: previous[k] for k in ("created", "commit", "seeds")} | {
        "updates": previous.get("updates", []) + [{"created": now, "commit": git_commit(), "only": list(only)}]}
    return header | {"rule": {"alpha": ALPHA, "floor_rel": FLOOR_REL, "floor_abs": FLOOR_ABS,
                              "num_metrics": len(metrics)},
                     "sections": {name: cfg[name] for name in METRICS if name in cfg} | {"rate": cfg["rate"]},
                     "metrics": metrics}


def write_baseline(cfg: dict, results: str | Path, seeds: int, out: str | Path,
                   only: list[str] | None = None) -> dict:
    """:func:`make_baseline`, written atomically to ``out`` (JSON); with ``only``, the baseline at
    ``out`` is rewritten for the metrics under those prefixes alone."""
    previous = load_baseline(out) if only else None
    if previous is not None and previous.get("seeds") != seeds:
        raise ValueError(f"{out} was made from {previous.get('seeds')} seeds, regress.seeds is {seeds}: "
                         "rewrite it whole")
    baseline = make_baseline(cfg, results, seeds, only, previous)
    save_json(out, baseline)
    return baseline


@dataclass
class Row:
    """One metric of one run against its band: ``status`` is ``ok``, ``OUT``, ``MISSING`` or ``skipped``."""

    key: str
    run: str
    value: float | None
    entry: dict | None
    status: str
    note: str = ""

    @property
    def used(self) -> float:
        """``(value - mean) / halfwidth``: beyond ±1 is out of the band."""
        if self.entry is None or self.value is None or "mean" not in self.entry or not math.isfinite(self.value):
            return math.inf if self.status == "OUT" else 0.0
        return (self.value - self.entry["mean"]) / self.entry["halfwidth"]


def selected(key: str, only: list[str] | None) -> bool:
    """Whether ``key`` lies under one of the ``only`` prefixes, compared path segment by segment."""
    parts = key.split("/")
    return not only or any(parts[:len(p.strip("/").split("/"))] == p.strip("/").split("/") for p in only)


def _check(key: str, run: str, value: float, entry: dict) -> Row:
    if not math.isfinite(value):
        ok = entry["nan_runs"] > 0
        return Row(key, run, value, entry, "ok" if ok else "OUT", "" if ok else "NaN; every baseline seed was finite")
    if "mean" not in entry:
        return Row(key, run, value, entry, "OUT", "finite; every baseline seed was NaN")
    inside = entry["lower"] <= value <= entry["upper"]
    return Row(key, run, value, entry, "ok" if inside else "OUT")


def compare(baseline: dict, observed: dict[str, dict[str, float]], skip: dict[str, str],
            only: list[str] | None = None) -> list[Row]:
    """Every observed value of every baseline metric under ``only``, checked against its band; a
    baseline metric with no value is ``MISSING`` (``skipped`` when its experiment is)."""
    rows = []
    keys = [k for k in baseline["metrics"] if selected(k, only)]
    if only and not keys:
        raise ValueError(f"--only {' '.join(only)} selects none of the baseline's {len(baseline['metrics'])} metrics "
                         f"(e.g. {next(iter(baseline['metrics']), '?')})")
    for key in keys:
        entry = baseline["metrics"][key]
        experiment = key.split("/")[0]
        if experiment in skip:
            rows.append(Row(key, "-", None, entry, "skipped", skip[experiment]))
        elif key not in observed:
            rows.append(Row(key, "-", None, entry, "MISSING", "no result file holds this metric"))
        else:
            rows.extend(_check(key, run, value, entry) for run, value in observed[key].items())
    return rows


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.4g}"


def table(rows: list[Row], show_all: bool = False) -> str:
    """A Markdown table of what moved: every failing row, and the others that used half their band
    or more (all of them with ``show_all``), largest move first; then a one-line summary."""
    shown = [r for r in rows if show_all or r.status in ("OUT", "MISSING") or abs(r.used) >= 0.5]
    shown.sort(key=lambda r: (r.status not in ("OUT", "MISSING"), -abs(r.used), r.key))
    lines = ["| metric | run | value | baseline mean ± sd (seeds or replicates) | band | moved (band = ±1) | status |",
             "|---|---|---|---|---|---|---|"]
    for r in shown:
        e = r.entry or {}
        base = f"{_fmt(e['mean'])} ± {_fmt(e['sd'])} ({e['dof'] + 1})" if "mean" in e else "NaN"
        rng = f"[{_fmt(e['lower'])}, {_fmt(e['upper'])}]" if "lower" in e else "—"
        moved = f"{r.used:+.2f}" if math.isfinite(r.used) else "—"
        lines.append(f"| {r.key} | {r.run} | {_fmt(r.value)} | {base} | {rng} | {moved} | {r.status}"
                     + (f": {r.note}" if r.note else "") + " |")
    counts = {s: sum(r.status == s for r in rows) for s in ("ok", "OUT", "MISSING", "skipped")}
    summary = (f"{len(rows)} values of {len({r.key for r in rows})} metrics: " +
               ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    return "\n".join(lines + ["", summary])


def load_baseline(path: str | Path) -> dict:
    """The baseline file written by :func:`write_baseline`; a clear error if it is absent or malformed."""
    try:
        baseline = json.loads(Path(path).read_text())
    except FileNotFoundError as err:
        raise FileNotFoundError(f"no regression baseline at {path}: make one with `snakemake --cores 2 "
                                f"regress_baseline --configfile workflow/config/ci.yaml` (README)") from err
    if not isinstance(baseline, dict) or "metrics" not in baseline:
        raise ValueError(f"{path} is not a regression baseline (no 'metrics')")
    return baseline


def _differences(a: Any, b: Any, path: str) -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}/{k}")]
    return [] if a == b else [f"{path}: {a!r} in the baseline, {b!r} here"]


def check_sections(baseline: dict, cfg: dict, path: str | Path) -> None:
    """Raise ValueError naming the first fields where ``cfg``'s experiment sections differ from those
    the baseline was made with (seed counts aside): its bands say nothing about another config.

    Both sides are compared with the schema's defaults filled in, so a setting added after the
    baseline was made, whose default keeps the old behaviour, is no difference (the baseline's
    sections were written before the field existed); a non-default value of it is one."""
    def runs(name: str, section: Any) -> Any:  # an experiment's seed count is not a setting (rate's is)
        return {k: v for k, v in section.items() if k != "seeds"} if name != "rate" and section else section

    here = config_mod.with_defaults(cfg)
    then = config_mod.with_defaults({**cfg, **baseline["sections"]})
    diff = [d for name in baseline["sections"]
            for d in _differences(runs(name, then.get(name)), runs(name, here.get(name)), name)]
    if diff:
        raise ValueError(f"the config differs from the one the baseline {path} was made with: "
                         + "; ".join(diff[:3]) + ("; ..." if len(diff) > 3 else ""))

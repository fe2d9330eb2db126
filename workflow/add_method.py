"""``pmd-bench add-method FILE:CLASS``: one method's rows on every leaderboard of a config, running
only that method.

The config's other methods are read from its committed results, ``archive/<config>/`` (the whole
workflow's result files of that config, saved with the config they were made with,
``archive/<config>/config.yaml``), restored into ``results/<config>/``. The new method is added to
every experiment of the config that it runs in (:func:`workflow.methods.runs_in`: a method that
handles a generic ``pmd.Model`` runs on the mixture, logistic regression, the custom models and,
with a data mirror, posteriordb; sparse GP and LDA only for a method that declares them in
``handles``) through an overlay config, ``results/<config>/added/<label>.yaml``, and Snakemake
builds those experiments' tables. Each run job's rerun decision reads only its own experiment
settings and method entry (``job_settings`` in ``workflow/rules/common.smk``), and restored run
files count as done, so the only runs Snakemake starts are the new method's (and of methods added
before it that are not yet run); every table that reads them is rendered again.

The committed results must come from the same config: the archived resolved config is compared
with the config given (its schema defaults filled, the added methods left out), and a difference
is refused, naming the settings that differ.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from . import archive, config as config_mod

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "workflow" / "config"


class AddMethodError(ValueError):
    """Why a method cannot be added to a config's results; the message says what to do."""


def label_for(cls: type) -> str:
    """The default label of a method class: its name in snake case (``LangevinEnsemble`` ->
    ``langevin_ensemble``)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", cls.__name__).lower()


def experiments_for(cls: type, cfg: dict) -> list[str]:
    """The experiments of ``cfg`` that ``cls`` runs in (posteriordb only where its data mirror is set)."""
    from .methods import runs_in

    out = []
    for name in config_mod.EXPERIMENT_TARGETS:
        if name in cfg and runs_in(cls, name):
            if name == "posteriordb" and config_mod.posteriordb_skip_reason(cfg):
                continue
            out.append(name)
    return out


def targets(cfg: dict, experiments: list[str], results: str) -> list[str]:
    """The tables (accuracy and cost to threshold), leaderboards and profiles of ``experiments`` under
    ``results``."""
    out = []
    for name in experiments:
        if name == "custom":
            for model in (cfg["custom"].get("models") or {}):
                out += [f"{results}/custom/{model}/table.md", f"{results}/custom/{model}/cost.md"]
        else:
            out.append(f"{results}/figures/table_{name}.md")
        out += [f"{results}/figures/cost_{name}.md", f"{results}/figures/leaderboard_{name}.md",
                f"{results}/figures/profiles_{name}.md"]
    return out


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in _differences(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else str(k))]
    return [] if a == b else [path]


def without(cfg: dict, labels: dict[str, list[str]]) -> dict:
    """A copy of ``cfg`` without the method ``labels`` per experiment, and without ``results_dir``."""
    out = json.loads(json.dumps(cfg))
    out.pop("results_dir", None)
    for experiment, names in labels.items():
        for name in names:
            (out.get(experiment) or {}).get("methods", {}).pop(name, None)
    return out


def added_labels(folder: Path) -> dict[str, list[str]]:
    """Experiment -> the labels the overlays in ``folder`` (earlier ``add-method`` calls) add."""
    out: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.yaml")):
        for experiment, section in (yaml.safe_load(path.read_text()) or {}).items():
            if isinstance(section, dict):
                out.setdefault(experiment, []).extend(section.get("methods", {}))
    return out


def check_same_config(committed: Path, cfg: dict, labels: dict[str, list[str]], name: str) -> None:
    """Refuse when the resolved config the committed results were made with (``committed``) is
    not ``cfg`` (defaults filled), the added ``labels`` and ``results_dir`` left out of both."""
    made = without(yaml.safe_load(committed.read_text()), labels)
    wanted = without(config_mod.with_defaults(cfg), labels)
    differ = _differences(made, wanted)
    if differ:
        shown = ", ".join(differ[:8]) + (f" and {len(differ) - 8} more" if len(differ) > 8 else "")
        raise AddMethodError(f"the results of {name} at {committed.parent} were made with another config "
                             f"(it differs in {shown}): a leaderboard mixes no configs. Use a fresh results "
                             f"folder, or run the whole config again with snakemake.")


def prepare(name: str, cfg: dict, results: Path, labels: dict[str, list[str]]) -> str:
    """Make sure ``results`` (``<root>/<name>``) holds the config's results (restoring
    ``archive/<name>/`` into ``<root>``); returns where they came from, for the report."""
    resolved = results / "config.yaml"
    manifest = archive.read_manifest(archive.ARCHIVE)
    prefix = f"{name}/"
    kept = {rel: e for rel, e in manifest.items() if rel.startswith(prefix)}
    if not resolved.exists() and not kept:
        raise AddMethodError(f"no results of the config {name!r}: neither {resolved} nor committed results in "
                             f"archive/{prefix} (run `snakemake --cores 2 --configfile <config> --config "
                             f"results_dir={results}` first)")
    if kept and not resolved.exists():
        archive.restore(archive.ARCHIVE, results.parent, prefix)
    check_same_config(resolved, cfg, labels, name)
    commits = sorted({e["commit"][:10] for e in kept.values()})
    return (f"the committed results of {name} (archive/{prefix}, commit {', '.join(commits)})" if kept
            else f"the results in {results}")


def _has_runs(cfg: dict, experiment: str, results: Path) -> bool:
    """Whether ``results`` holds run files of ``experiment`` (of each custom model, for custom)."""
    if experiment == "custom":
        return all(any((results / "custom" / m / "runs").glob("*/seed*.npz")) for m in cfg["custom"]["models"])
    return any((results / experiment / "runs").rglob("seed*.npz"))


def _write_resolved(path: Path, overlays: list[Path], results: Path) -> None:
    """Write the resolved config (the config and ``overlays`` merged as Snakemake merges config
    files, defaults filled, as the rule ``resolved_config`` writes it) and create the tracking store
    (as the rule ``tracking_store``) before Snakemake starts. Both are ``ancient`` inputs of the run
    jobs, and only an ancient input that exists sends no job again: written by Snakemake itself
    during the run, they would count as updated and every restored run would be run again."""
    from snakemake.utils import update_config

    from .cli import main as cli_main
    from pmd_bench.datasets.atomic import atomic_path

    merged = yaml.safe_load(path.read_text())
    for overlay in overlays:
        update_config(merged, yaml.safe_load(overlay.read_text()))
    resolved = results / "config.yaml"
    with atomic_path(resolved) as tmp:
        tmp.write_text(yaml.safe_dump(json.loads(json.dumps(config_mod.with_defaults(merged))), sort_keys=False))
    store = results / ".tracking-store"
    if not store.exists() and cli_main(["--config", str(resolved), "init-store", "--marker", str(store)]) != 0:
        raise AddMethodError(f"the MLflow store of {resolved} could not be created (pmd-bench init-store)")


def add(spec: str, config_path: str | None = None, label: str | None = None, params: dict | None = None,
        cores: int = 2, dry_run: bool = False, results_root: str | Path | None = None) -> int:
    """Add the method ``spec`` (``file.py:Class``, ``module:Class`` or a registry name) with
    ``params`` under ``label`` to the config's results in ``<results_root>/<config>/`` (default
    ``results/``) and build its experiments' tables (module docstring); returns Snakemake's exit
    status."""
    from .methods import check_entry, resolve

    path = Path(config_path) if config_path else config_mod.DEFAULT_CONFIG
    name = path.stem
    cfg = config_mod.load(path)
    if config_mod.is_file_spec(spec):
        file, _, attr = spec.rpartition(":")
        spec = f"{Path(file).resolve()}:{attr}"
    cls = resolve(spec)
    label = label or label_for(cls)
    experiments = experiments_for(cls, cfg)
    if not experiments:
        raise AddMethodError(f"{cls.__name__} runs in none of {path}'s experiments (it handles "
                             f"{', '.join(getattr(cls, 'handles', ('model',)))})")
    taken = [e for e in experiments if label in cfg[e]["methods"]]
    if taken:
        raise AddMethodError(f"the label {label!r} is a method of {', '.join(taken)} already: give --label")
    entry = {"method": spec, **(params or {})}
    for experiment in experiments:
        check_entry(experiment, label, entry)
    results = Path(results_root or archive.RESULTS).resolve() / name
    shown = str(results.relative_to(ROOT)) if results.is_relative_to(ROOT) else str(results)
    folder = results / "added"
    labels = added_labels(folder)
    for experiment in experiments:
        labels.setdefault(experiment, []).append(label)
    source = prepare(name, cfg, results, labels)
    missing = [e for e in experiments if not _has_runs(cfg, e, results)]
    if missing:
        print(f"left out: {', '.join(missing)} (no committed results of {name} to rank beside; run the config's "
              f"{' and '.join(missing)} stage first)", flush=True)
        experiments = [e for e in experiments if e not in missing]
        if not experiments:
            raise AddMethodError(f"none of the experiments {cls.__name__} runs in has results of {name}")
    folder.mkdir(parents=True, exist_ok=True)
    overlay = folder / f"{label}.yaml"
    overlay.write_text(yaml.safe_dump({"results_dir": shown,
                                       **{e: {"methods": {label: entry}} for e in experiments}}, sort_keys=False))
    overlays = sorted(folder.glob("*.yaml"))
    _write_resolved(path, overlays, results)
    wanted = targets(cfg, experiments, shown)
    command = [sys.executable, "-m", "snakemake", "--cores", str(cores), "--configfile", str(path),
               *map(str, overlays), *(["-n"] if dry_run else []),
               "--forcerun", *wanted, "--", *wanted]  # the tables rendered again, with the new rows
    print(f"{label} ({cls.__name__}) on {', '.join(experiments)}; the other rows: {source}", flush=True)
    status = subprocess.run(command, cwd=ROOT).returncode
    if status == 0 and not dry_run:
        print(f"\n{label}'s rows (the full tables: {', '.join(wanted)}):")
        for target in wanted:
            rows = [line for line in (ROOT / target).read_text().splitlines() if f"| {label} |" in line]
            print(f"{target}:\n" + ("\n".join(rows) if rows else "  (no row: see the table's notes)"))
    return status

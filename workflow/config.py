"""Load and validate the workflow configuration against its JSON schema."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import yaml

DEFAULT_CONFIG = Path(__file__).parent / "config" / "default.yaml"
SCHEMA = Path(__file__).parent / "schemas" / "config.schema.json"


# the experiments that run methods, by the kind of target each needs (workflow.methods.TARGETS)
EXPERIMENT_TARGETS = {"posteriordb": "model", "custom": "model", "mixture": "mixture", "logistic": "logistic",
                      "sparse_gp": "sparse_gp", "lda": "lda"}

#: the experiments whose rules and CLI can run a method's seeds as one vectorised program
#: (``<experiment>.batch_seeds``; ``pmd-bench run <experiment> --seed 0 1 ...``; workflow.repetitions)
BATCHABLE = ("mixture", "logistic")
#: the experiments whose rules and CLI can run a method's seeds one after another in one job
#: (``<experiment>.seeds_in_one_job``); posteriordb's methods need not be pure JAX, so it does not vectorise
SEEDS_IN_ONE_JOB = BATCHABLE + ("posteriordb",)


class ConfigFileError(ValueError):
    """The configuration file is missing, unreadable or breaks the schema; the message says where."""


def schema() -> dict:
    """The JSON schema every configuration must satisfy (the one Snakemake validates too)."""
    return json.loads(SCHEMA.read_text())


def validate(config: dict, source: str = "<config>") -> dict:
    """Raise :class:`ConfigFileError` naming the field and the rule broken, else return ``config``."""
    errors = sorted(jsonschema.Draft202012Validator(schema()).iter_errors(config), key=lambda e: list(e.path))
    if errors:
        lines = [f"{'/'.join(map(str, e.absolute_path)) or '(top level)'}: {e.message}" for e in errors]
        raise ConfigFileError(f"{source} breaks the config schema:\n  " + "\n  ".join(lines))
    return config


def with_defaults(config: dict) -> dict:
    """A copy of ``config`` with the schema's defaults filled in, as Snakemake's ``validate`` fills
    them in the Snakefile (so this is the config the workflow's jobs see and ``resolved_config``
    writes)."""
    from snakemake.utils import validate as snakemake_validate

    filled = copy.deepcopy(config)
    snakemake_validate(filled, str(SCHEMA), set_default=True)
    return filled


def load(path: str | Path | None = None) -> dict[str, Any]:
    """Read a YAML config (the embedded default when ``path`` is None) and validate it."""
    path = Path(path) if path is not None else DEFAULT_CONFIG
    try:
        config = yaml.safe_load(path.read_text())
    except FileNotFoundError as err:
        raise ConfigFileError(f"config file {path} does not exist") from err
    except yaml.YAMLError as err:
        raise ConfigFileError(f"config file {path} is not valid YAML: {err}") from err
    if not isinstance(config, dict):
        raise ConfigFileError(f"config file {path} must hold a mapping, got {type(config).__name__}")
    return absolute_method_files(validate(config, str(path)), path.parent)


def posteriordb_skip_reason(cfg: dict[str, Any]) -> str | None:
    """Why the config's posteriordb experiment does not run, or ``None`` when it does: it needs a
    ``posteriordb`` section and an offline mirror holding ``posteriordb/`` (the reference draws
    are never downloaded). One rule for the Snakemake rules and ``pmd-bench regress``."""
    from pmd_bench.datasets.settings import resolve_settings

    if "posteriordb" not in cfg:
        return "the config has no posteriordb section"
    mirror = resolve_settings(cfg["datasets"]).mirror
    if mirror is None or not (mirror / "posteriordb").is_dir():
        return "no offline mirror holding posteriordb/ is set (datasets.offline_mirror or PMD_BENCH_DATA_MIRROR)"
    return None


def is_file_spec(name: str) -> bool:
    """Whether a ``method`` value names a class in a Python file (``path/to/file.py:ClassName``)."""
    return ":" in name and name.rpartition(":")[0].endswith(".py")


def entries(config: dict) -> Iterator[tuple[str, str, dict]]:
    """``(section, label, entry)`` of every method entry of ``config``: the experiment sections'
    ``methods`` and Table 1's ``table1.rate`` and ``table1.cost`` (``section`` as
    :data:`workflow.methods.ENTRY_KEYS` names it)."""
    sections = [(name, config[name]) for name in EXPERIMENT_TARGETS if isinstance(config.get(name), dict)]
    table1 = config.get("table1") if isinstance(config.get("table1"), dict) else {}
    sections += [(f"table1.{part}", table1[part]) for part in ("rate", "cost") if isinstance(table1.get(part), dict)]
    for section, body in sections:
        for label, entry in (body.get("methods") or {}).items():
            if isinstance(entry, dict):
                yield section, label, entry


def absolute_method_files(config: dict, base: str | Path) -> dict:
    """``config`` with every ``method: relative/file.py:Class`` made absolute from ``base`` (the
    folder of the config file it was read from), in place; returns ``config``."""
    for _, _, entry in entries(config):
        name = entry.get("method")
        if isinstance(name, str) and is_file_spec(name):
            file, _, attr = name.rpartition(":")
            if not Path(file).is_absolute():
                entry["method"] = f"{(Path(base) / file).resolve()}:{attr}"
    return config


def method_files_from(config: dict, configfiles: list[str | Path]) -> dict:
    """The merged ``config`` of Snakemake's ``configfiles`` (in their order) with each relative
    ``method: file.py:Class`` made absolute from the folder of the config file that wrote it, in
    place; returns ``config``."""
    for path in map(Path, configfiles):
        own = absolute_method_files(yaml.safe_load(path.read_text()) or {}, path.parent)
        for section, label, entry in entries(own):
            name = entry.get("method")
            if isinstance(name, str) and is_file_spec(name):
                body = config["table1"][section[7:]] if section.startswith("table1.") else config[section]
                body["methods"][label]["method"] = name
    return config


def seeds_in_one_job(section: dict) -> bool:
    """Whether an experiment section runs each method's seeds in one job: one after another
    (``seeds_in_one_job``) or as one vectorised program (``batch_seeds``)."""
    return bool(section.get("seeds_in_one_job", False) or section.get("batch_seeds", False))

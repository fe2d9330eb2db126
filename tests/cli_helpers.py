"""A workspace for tests that drive the ``pmd-bench`` verbs: a config file, a fresh MLflow store, the
working directory set."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from pmd_bench.workflow import cli


@contextmanager
def cli_workspace(root: Path, cfg: dict) -> Iterator[tuple[Path, str]]:
    """Write ``cfg`` to ``root/config.yaml``, create a fresh SQLite MLflow store there (``init-store``),
    point ``MLFLOW_TRACKING_URI`` at it and work in ``root``; yields ``(config path, store URI)``."""
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(cfg))
    uri = f"sqlite:///{root / 'mlruns.db'}"
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.chdir(root)
    try:
        assert cli.main(["--config", str(config), "init-store"]) == 0
        yield config, uri
    finally:
        mp.undo()

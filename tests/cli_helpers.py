"""A workspace for tests that drive the ``pmd-bench`` verbs: a config file, a fresh MLflow store, the
working directory set; or the verbs run in a process of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def cli_in_subprocess(config: Path, calls: list[list[str]], root: Path) -> dict[str, str]:
    """Run the verbs ``calls`` (argument lists after ``--config config``) one after another in one
    fresh Python process working in ``root``, with its own MLflow store ``root/mlruns.db``, and fail
    the test with its stderr when one exits non-zero; returns the process's environment. For verbs
    that change the process (the sparse-GP experiment turns JAX's float64 on)."""
    script = ("import json, sys\nfrom pmd_bench.workflow.cli import main\n"
              f"for argv in json.loads({json.dumps(json.dumps(calls))}):\n"
              f"    code = main(['--config', {str(config)!r}, *argv])\n"
              "    if code: sys.exit(f'{argv[:2]} exited {code}')\n")
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{root / 'mlruns.db'}", "JAX_PLATFORMS": "cpu"}
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return env

"""Result files: written atomically, read back by the reports.

A run's result is one ``.npz``: its curves (``curve/<metric>`` against ``visited``), the final
posterior's density on the evaluation grid where the experiment has one, and a JSON ``meta``
record. A crashed run leaves nothing at the target path: files are written to a temporary name in
the same folder and renamed into place.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from pmd_bench.reports.resultfiles import atomic_path, load_npz  # noqa: F401  (shared with the reports)


def save_npz(path: str | Path, arrays: dict[str, Any], meta: dict[str, Any]) -> None:
    """Write ``arrays`` and the JSON-encoded ``meta`` to ``path`` (a ``.npz`` name) atomically."""
    if Path(path).suffix != ".npz":
        raise ValueError(f"result file {path} must end in .npz (numpy would append it)")
    with atomic_path(path) as tmp:
        np.savez_compressed(tmp, meta=np.asarray(json.dumps(meta, sort_keys=True)), **arrays)


def save_json(path: str | Path, obj: Any) -> None:
    """Write ``obj`` as JSON atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True))

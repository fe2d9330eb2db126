"""Where raw source files are cached and where an offline mirror of them may be found.

Two settings, each resolved in the same order: environment variable, then the ``datasets``
section of the workflow config, then the default.

* ``data_dir`` (env ``PMD_BENCH_DATA_DIR``, config ``datasets.data_dir``): the one cache of
  downloaded source files and of the hashes pinned on first download. Default: ``data/`` at the
  repository root (git-ignored).
* ``offline_mirror`` (env ``PMD_BENCH_DATA_MIRROR``, config ``datasets.offline_mirror``): a
  read-only folder of byte-identical copies of the source files, laid out as in the registry
  (``<mirror>/mnist/...``, ``<mirror>/wikipedia/...``). Looked in before the network. Default: none.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DATA_DIR_ENV = "PMD_BENCH_DATA_DIR"
MIRROR_ENV = "PMD_BENCH_DATA_MIRROR"
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1] / "data"


@dataclass(frozen=True)
class Settings:
    """Resolved locations: the cache ``data_dir`` and the optional ``mirror`` folder."""

    data_dir: Path
    mirror: Path | None = None


def resolve_settings(section: Mapping | None = None) -> Settings:
    """Resolve the data directory and the offline mirror (environment, then config, then default).

    ``section`` is the ``datasets`` mapping of the workflow config (keys ``data_dir`` and
    ``offline_mirror``, either may be null or absent). An empty environment variable counts as unset.
    """
    section = section or {}
    data_dir = os.environ.get(DATA_DIR_ENV) or section.get("data_dir") or DEFAULT_DATA_DIR
    mirror = os.environ.get(MIRROR_ENV) or section.get("offline_mirror")
    return Settings(data_dir=Path(data_dir), mirror=Path(mirror) if mirror else None)

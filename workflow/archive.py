"""Run files of campaigns longer than one session, kept in git under ``archive/``.

``results/`` is not committed, and a fresh checkout (a new session, CI, a user's clone) starts
without it. A campaign that no single sitting finishes, such as H.3.2's sparse GP at the paper's
settings on this project's 2-core CPU (about half an hour per PMD run, ten seeds per method),
accumulates only if its finished run files survive. They are a few kB each, so they are kept in
git:

* ``pmd-bench archive save FILE...`` copies result files (paths under ``results/``) to
  ``archive/<the same path below results/>`` and records each one's SHA-256, size and the commit
  it was saved at in ``archive/MANIFEST.json``;
* ``pmd-bench archive restore [PREFIX]`` copies the archived files (those below ``PREFIX``) back
  into ``results/``, verifying each against the manifest; a file already there with the same bytes
  is left alone, one with other bytes is an error that names it (nothing is overwritten);
* ``pmd-bench archive verify`` checks every archived file against the manifest (so does the test
  suite: an altered archive fails CI).

The archive holds what the workflow wrote, byte for byte: the tables rendered from it are result
files like any other. Restore a campaign after its upstream files (config, data, truth) exist, so
Snakemake, comparing modification times, takes the restored runs as up to date.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from datetime import datetime, timezone
from pathlib import Path

from pmd_bench.datasets.atomic import atomic_path
from pmd_bench.datasets.fetch import sha256_file

ROOT = Path(__file__).resolve().parent.parent
ARCHIVE = ROOT / "archive"
RESULTS = ROOT / "results"
MANIFEST = "MANIFEST.json"


class ArchiveError(ValueError):
    """An archive file that is missing, altered, or in conflict with ``results/``; the message names it."""


def read_manifest(archive: Path) -> dict[str, dict]:
    """``archive/MANIFEST.json``: relative path -> ``{"sha256", "bytes", "commit", "saved"}``."""
    path = archive / MANIFEST
    return json.loads(path.read_text()) if path.exists() else {}


def _relative(path: Path, results: Path) -> str:
    try:
        return path.resolve().relative_to(results.resolve()).as_posix()
    except ValueError:
        raise ArchiveError(f"{path}: only files under {results} are archived") from None


def save(paths: list[str | Path], results: Path, archive: Path, commit: str) -> list[str]:
    """Copy ``paths`` (files under ``results``) into ``archive`` and record them in the manifest;
    returns the relative paths of those copied. A file archived already with the same bytes keeps
    its entry (the commit it was first saved at); one archived with other bytes is replaced and its
    entry updated (a rerun of the same seed at a later commit)."""
    manifest = read_manifest(archive)
    saved = []
    for path in map(Path, paths):
        if not path.is_file():
            raise ArchiveError(f"{path}: no such result file")
        rel, digest = _relative(path, results), sha256_file(path)
        if rel in manifest and (archive / rel).is_file() and manifest[rel]["sha256"] == digest:
            continue
        with atomic_path(archive / rel) as tmp:
            shutil.copyfile(path, tmp)
        manifest[rel] = {"sha256": digest, "bytes": path.stat().st_size, "commit": commit,
                         "saved": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        saved.append(rel)
    with atomic_path(archive / MANIFEST) as tmp:
        tmp.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    return saved


def verify(archive: Path, prefix: str = "") -> list[str]:
    """The manifest's entries below ``prefix``, each checked against its archived file's SHA-256
    and size; an :class:`ArchiveError` names the first file missing or altered."""
    entries = {rel: e for rel, e in read_manifest(archive).items() if rel.startswith(prefix)}
    for rel, entry in entries.items():
        path = archive / rel
        if not path.is_file():
            raise ArchiveError(f"{path}: listed in {archive / MANIFEST} but missing")
        if path.stat().st_size != entry["bytes"] or sha256_file(path) != entry["sha256"]:
            raise ArchiveError(f"{path}: its SHA-256 is not the one {archive / MANIFEST} records (altered)")
    return sorted(entries)


def restore(archive: Path, results: Path, prefix: str = "") -> tuple[list[str], list[str]]:
    """Copy the verified archive files below ``prefix`` into ``results``; returns ``(copied,
    already there)``. A file in ``results`` with other bytes is an :class:`ArchiveError`, raised
    before anything is copied."""
    manifest = read_manifest(archive)
    wanted = verify(archive, prefix)
    present = [rel for rel in wanted if (results / rel).exists()]
    for rel in present:
        if sha256_file(results / rel) != manifest[rel]["sha256"]:
            raise ArchiveError(f"{results / rel} differs from the archived {archive / rel}: move one of them "
                               f"aside (nothing was copied)")
    copied = [rel for rel in wanted if rel not in present]
    for rel in copied:
        with atomic_path(results / rel) as tmp:
            shutil.copyfile(archive / rel, tmp)
    # one modification time for every file restored, so Snakemake (which reruns a job whose input is
    # newer than its output) takes a restored campaign's data, references and runs as up to date
    now = time.time()
    for rel in copied:
        os.utime(results / rel, (now, now))
    return copied, present

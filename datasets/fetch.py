"""Find, download and verify source files.

:func:`fetch` returns a verified local copy of a :class:`~datasets.registry.SourceFile`, looking in
this order:

1. the cache ``<data_dir>/<name>`` (a copy failing verification is deleted and fetched again);
2. the offline mirror ``<mirror>/<name>``, used in place, never written to (a copy failing
   verification is an error: the mirror is the user's to fix);
3. the network: each URL in turn, with retries. Bytes go to ``<data_dir>/<name>.part``; an
   interrupted download resumes from there with an HTTP ``Range`` request. Only a complete,
   verified file is renamed to ``<name>`` (after fsync), so the cache never holds a partial or
   unverified file under its real name.

Verification is the SHA-256 (and byte size) of the registry or, for files whose publisher gives
no hash, the source's content check on the first copy seen and from then on the SHA-256 pinned
for it in ``<data_dir>/pinned-sha256.json``.

Fetches into one data directory are serialised with a lock file, so parallel Snakemake jobs
needing the same file download it once.
"""

from __future__ import annotations

import datetime
import fcntl
import hashlib
import http.client
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tqdm import tqdm

from pmd_bench.datasets.atomic import atomic_path, replace_durably
from pmd_bench.datasets.errors import ChecksumError, DatasetError, DownloadError, FormatError
from pmd_bench.datasets.registry import SourceFile
from pmd_bench.datasets.settings import DATA_DIR_ENV, MIRROR_ENV, Settings

PINS_FILE = "pinned-sha256.json"
_CHUNK = 1 << 20
# HTTP statuses worth retrying; any other HTTP error moves on to the next URL at once.
_RETRYABLE_STATUS = {408, 425, 429, 500, 502, 503, 504}


def sha256_file(path: Path) -> str:
    """The hex SHA-256 of the file at ``path``, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def pinned_hashes(data_dir: Path) -> dict[str, dict]:
    """The lock file's records ``{source name: {"sha256", "size", "origin", "pinned_at"}}``."""
    path = Path(data_dir) / PINS_FILE
    if not path.exists():
        return {}
    return json.loads(path.read_text())


def _pin(data_dir: Path, source: SourceFile, size: int, sha256: str, origin: str) -> None:
    pins = pinned_hashes(data_dir)
    pins[source.name] = {
        "sha256": sha256,
        "size": size,
        "origin": origin,
        "pinned_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    with atomic_path(Path(data_dir) / PINS_FILE) as tmp:
        tmp.write_text(json.dumps(pins, indent=2, sort_keys=True) + "\n")


def check_file(source: SourceFile, path: Path, data_dir: Path, origin: str | None = None) -> None:
    """Verify ``path`` as a copy of ``source``; raise :class:`ChecksumError` naming both hashes.

    With no registry hash and none pinned yet, run the source's content check and pin the copy's
    SHA-256 in ``<data_dir>/pinned-sha256.json``, recording ``origin`` (default: ``path``).
    """
    expected, where = source.sha256, "registry"
    if expected is None:
        pin = pinned_hashes(data_dir).get(source.name)
        expected, where = (pin["sha256"], f"pinned in {Path(data_dir) / PINS_FILE}") if pin else (None, None)
    size = path.stat().st_size
    if source.size is not None and size != source.size:
        raise ChecksumError(f"{path}: {size:,} bytes, but {source.name} has {source.size:,} bytes (registry)")
    actual = sha256_file(path)
    if expected is None:
        source.check(path)
        _pin(data_dir, source, size, actual, origin or str(path))
    elif actual != expected:
        raise ChecksumError(f"{path}: SHA-256 mismatch for {source.name}: expected {expected} ({where}), got {actual}")


def locate(source: SourceFile, settings: Settings) -> Path | None:
    """The cached or mirrored copy of ``source`` that :func:`fetch` would try first, unverified."""
    for path in _candidates(source, settings):
        if path.is_file():
            return path
    return None


def _candidates(source: SourceFile, settings: Settings) -> list[Path]:
    paths = [settings.data_dir / source.name]
    if settings.mirror is not None:
        paths.append(settings.mirror / source.name)
    return paths


def verify(source: SourceFile, settings: Settings) -> list[tuple[Path, str | None]]:
    """Check every existing copy (cache, mirror) of ``source``: ``[(path, error or None)]``.

    Like :func:`fetch`, the first copy of a file with no published hash that passes its content
    check gets its SHA-256 pinned.
    """
    results = []
    with _locked(settings.data_dir):
        for path in _candidates(source, settings):
            if path.is_file():
                try:
                    check_file(source, path, settings.data_dir)
                    results.append((path, None))
                except (DatasetError, OSError) as error:
                    results.append((path, f"{type(error).__name__}: {error}"))
    return results


@contextmanager
def _locked(data_dir: Path) -> Iterator[None]:
    data_dir.mkdir(parents=True, exist_ok=True)
    with open(data_dir / ".fetch.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch(
    source: SourceFile,
    settings: Settings,
    *,
    retries: int = 3,
    backoff_s: float = 1.0,
    timeout_s: float = 60.0,
) -> Path:
    """Return a verified local copy of ``source`` (cache, then mirror, then download).

    Each URL is tried up to ``1 + retries`` times, waiting ``backoff_s * 2**attempt`` seconds
    between tries; every retry resumes the partial download. A download whose hash is wrong is
    deleted and raises :class:`ChecksumError`; when no copy can be had, :class:`DownloadError`
    says what to download and where to put it.
    """
    data_dir = settings.data_dir
    with _locked(data_dir):
        cached, *mirrored = _candidates(source, settings)
        if cached.is_file():
            try:
                check_file(source, cached, data_dir)
                return cached
            except (ChecksumError, FormatError) as error:
                print(f"warning: deleting bad cached copy: {error}", file=sys.stderr)
                cached.unlink()
        for path in mirrored:
            if path.is_file():
                check_file(source, path, data_dir)
                return path
        return _download(source, cached, data_dir, retries, backoff_s, timeout_s)


def _download(
    source: SourceFile,
    target: Path,
    data_dir: Path,
    retries: int,
    backoff_s: float,
    timeout_s: float,
) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    part = target.with_name(target.name + ".part")
    failures = []
    for url in source.urls:
        for attempt in range(retries + 1):
            try:
                _download_into(url, part, source, timeout_s)
            except urllib.error.HTTPError as error:
                failures.append(f"{url}: HTTP {error.code} {error.reason}")
                if error.code not in _RETRYABLE_STATUS:
                    break
            except (OSError, http.client.HTTPException) as error:
                failures.append(f"{url}: {type(error).__name__}: {error}")
            else:
                try:
                    check_file(source, part, data_dir, origin=url)
                except Exception:
                    part.unlink()
                    raise
                replace_durably(part, target)
                return target
            if attempt < retries:
                time.sleep(backoff_s * 2**attempt)
    raise DownloadError(_missing_message(source, target, failures))


def _download_into(url: str, part: Path, source: SourceFile, timeout_s: float) -> None:
    """Append the bytes still missing from ``part``; raise on a short read so the caller retries."""
    offset = part.stat().st_size if part.exists() else 0
    if source.size is not None and offset > source.size:
        part.unlink()
        offset = 0
    if source.size is not None and offset == source.size:
        return
    headers = {"User-Agent": "pmd-bench-datasets"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout_s)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing past `offset`: the partial file is complete
            return
        raise
    with response:
        if offset and response.status == 206:
            start = _content_range_start(response.headers.get("Content-Range"))
            if start != offset:
                raise http.client.HTTPException(
                    f"asked for bytes from {offset}, got Content-Range {response.headers.get('Content-Range')!r}"
                )
        else:  # a full response: the server ignored the range, start over
            offset = 0
        length = response.headers.get("Content-Length")
        expected_end = offset + int(length) if length is not None else source.size
        with (
            open(part, "ab" if offset else "wb") as out,
            tqdm(
                total=expected_end,
                initial=offset,
                unit="B",
                unit_scale=True,
                desc=source.name,
            ) as bar,
        ):
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                bar.update(len(chunk))
            out.flush()
            os.fsync(out.fileno())
    received = part.stat().st_size
    if expected_end is not None and received < expected_end:
        raise http.client.IncompleteRead(b"", expected_end - received)


def _content_range_start(header: str | None) -> int | None:
    match = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", (header or "").strip())
    return int(match.group(1)) if match else None


def _missing_message(source: SourceFile, target: Path, failures: list[str]) -> str:
    facts = [f"{source.size:,} bytes" if source.size is not None else None]
    facts.append(f"SHA-256 {source.sha256}" if source.sha256 else "no published hash: pinned on first use")
    lines = [f"could not download {source.name} ({', '.join(f for f in facts if f)}):"]
    lines += [f"  {failure}" for failure in failures]
    lines += [
        "Download it by hand from one of",
        *(f"  {url}" for url in source.urls),
        f"and put it at {target} (data directory: config datasets.data_dir or {DATA_DIR_ENV}),",
        f"or at <mirror>/{source.name} in an offline mirror folder named by config datasets.offline_mirror "
        f"or {MIRROR_ENV}.",
    ]
    return "\n".join(lines)

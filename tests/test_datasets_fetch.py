"""The fetcher against a local HTTP server on 127.0.0.1 (no other host is ever contacted)."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from pmd_bench.datasets.atomic import atomic_directory, atomic_path
from pmd_bench.datasets.errors import ChecksumError, DownloadError, FormatError
from pmd_bench.datasets.fetch import PINS_FILE, fetch, pinned_hashes, verify
from pmd_bench.datasets.registry import SourceFile
from pmd_bench.datasets.settings import Settings

CONTENT = bytes(range(256)) * 40  # 10,240 bytes
NAME = "demo/file.bin"


class _Server(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []  # (path, Range header)
        self.drops: dict[str, list[int]] = {}  # path -> body bytes sent before hanging up, one per request
        self.ignore_range = False

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/{path}"


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        path = self.path.lstrip("/")
        requested = self.headers.get("Range")
        self.server.requests.append((path, requested))
        body = self.server.files.get(path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        if requested and not self.server.ignore_range:
            start = int(re.fullmatch(r"bytes=(\d+)-", requested).group(1))
            if start >= len(body):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        drops = self.server.drops.get(path)
        self.wfile.write(payload[: drops.pop(0)] if drops else payload)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def server():
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def _source(urls, content=CONTENT, *, sha256="auto", size="auto", check=None) -> SourceFile:
    return SourceFile(
        name=NAME,
        urls=tuple(urls),
        size=len(content) if size == "auto" else size,
        sha256=(hashlib.sha256(content).hexdigest() if sha256 == "auto" else sha256) if check is None else None,
        licence="test",
        citation="test",
        check=check,
    )


def _fetch(source, settings):
    return fetch(source, settings, retries=2, backoff_s=0.0, timeout_s=5.0)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(data_dir=tmp_path / "data")


def _files(directory: Path) -> list[str]:
    return sorted(
        str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_file() and p.name != ".fetch.lock"
    )


def test_download_is_verified_cached_and_not_repeated(server, settings):
    server.files["f"] = CONTENT
    source = _source([server.url("f")])
    path = _fetch(source, settings)
    assert path == settings.data_dir / NAME
    assert path.read_bytes() == CONTENT
    assert _files(settings.data_dir) == [NAME]
    assert _fetch(source, settings) == path
    assert len(server.requests) == 1


def test_wrong_hash_is_rejected_and_nothing_is_kept(server, settings):
    server.files["f"] = CONTENT
    expected = hashlib.sha256(b"something else").hexdigest()
    with pytest.raises(ChecksumError) as error:
        _fetch(_source([server.url("f")], sha256=expected), settings)
    message = str(error.value)
    assert NAME in message and expected in message and hashlib.sha256(CONTENT).hexdigest() in message
    assert _files(settings.data_dir) == []


def test_wrong_size_is_rejected(server, settings):
    server.files["f"] = CONTENT
    with pytest.raises(ChecksumError, match=f"{len(CONTENT) + 1:,} bytes"):
        _fetch(_source([server.url("f")], size=len(CONTENT) + 1), settings)
    assert _files(settings.data_dir) == []


def test_interrupted_download_resumes_with_a_range_request(server, settings):
    server.files["f"] = CONTENT
    server.drops["f"] = [3000, 2000]
    path = _fetch(_source([server.url("f")]), settings)
    assert path.read_bytes() == CONTENT
    assert [r for _, r in server.requests] == [None, "bytes=3000-", "bytes=5000-"]


def test_interrupted_download_fails_cleanly_and_resumes_next_time(server, settings):
    server.files["f"] = CONTENT
    server.drops["f"] = [4000]
    source = _source([server.url("f")])
    with pytest.raises(DownloadError, match="IncompleteRead"):
        fetch(source, settings, retries=0, backoff_s=0.0, timeout_s=5.0)
    assert _files(settings.data_dir) == [NAME + ".part"]  # never a partial file under the real name
    assert (settings.data_dir / (NAME + ".part")).stat().st_size == 4000
    assert _fetch(source, settings).read_bytes() == CONTENT
    assert server.requests[-1] == ("f", "bytes=4000-")
    assert _files(settings.data_dir) == [NAME]


def test_server_ignoring_the_range_restarts_from_zero(server, settings):
    server.files["f"] = CONTENT
    server.ignore_range = True
    part = settings.data_dir / (NAME + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 500)
    assert _fetch(_source([server.url("f")]), settings).read_bytes() == CONTENT


def test_corrupt_partial_download_is_deleted_after_the_hash_check(server, settings):
    server.files["f"] = CONTENT
    part = settings.data_dir / (NAME + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 500)  # wrong bytes: the resumed file fails its hash
    with pytest.raises(ChecksumError):
        _fetch(_source([server.url("f")]), settings)
    assert _files(settings.data_dir) == []
    assert _fetch(_source([server.url("f")]), settings).read_bytes() == CONTENT


def test_complete_partial_download_is_verified_without_downloading(server, settings):
    part = settings.data_dir / (NAME + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(CONTENT)  # a crash between the last byte and the rename
    assert _fetch(_source([server.url("f")]), settings).read_bytes() == CONTENT
    assert server.requests == []


def test_truncated_cached_file_is_replaced(server, settings, capsys):
    server.files["f"] = CONTENT
    cached = settings.data_dir / NAME
    cached.parent.mkdir(parents=True)
    cached.write_bytes(CONTENT[:1000])
    assert _fetch(_source([server.url("f")]), settings).read_bytes() == CONTENT
    assert "deleting bad cached copy" in capsys.readouterr().err


def test_mirror_hit_skips_the_network(server, settings, tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / NAME).parent.mkdir(parents=True)
    (mirror / NAME).write_bytes(CONTENT)
    path = _fetch(_source([server.url("f")]), Settings(settings.data_dir, mirror))
    assert path == mirror / NAME
    assert server.requests == []
    assert _files(settings.data_dir) == []


def test_corrupt_mirror_copy_is_an_error_and_left_alone(server, settings, tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / NAME).parent.mkdir(parents=True)
    (mirror / NAME).write_bytes(CONTENT[::-1])
    with pytest.raises(ChecksumError, match=re.escape(str(mirror / NAME))):
        _fetch(_source([server.url("f")]), Settings(settings.data_dir, mirror))
    assert (mirror / NAME).read_bytes() == CONTENT[::-1]
    assert server.requests == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_missing_file_without_network_says_what_to_download_and_where(settings):
    url = f"http://127.0.0.1:{_closed_port()}/f"
    with pytest.raises(DownloadError) as error:
        _fetch(_source([url]), Settings(settings.data_dir, Path("/some/mirror")))
    message = str(error.value)
    assert url in message
    assert str(settings.data_dir / NAME) in message
    assert f"<mirror>/{NAME}" in message and "PMD_BENCH_DATA_MIRROR" in message
    assert hashlib.sha256(CONTENT).hexdigest() in message and f"{len(CONTENT):,} bytes" in message
    assert _files(settings.data_dir) == []


def test_client_errors_are_not_retried_and_the_next_url_is_tried(server, settings):
    server.files["good"] = CONTENT
    path = _fetch(_source([server.url("missing"), server.url("good")]), settings)
    assert path.read_bytes() == CONTENT
    assert [p for p, _ in server.requests] == ["missing", "good"]


def _starts_with_magic(path: Path) -> None:
    if not path.read_bytes().startswith(b"MAGIC"):
        raise FormatError(f"{path}: no magic")


def test_unpublished_hash_is_pinned_on_first_download_and_enforced_after(server, settings):
    server.files["f"] = b"MAGIC version 1"
    source = _source([server.url("f")], b"MAGIC version 1", size=None, check=_starts_with_magic)
    path = _fetch(source, settings)
    pin = pinned_hashes(settings.data_dir)[NAME]
    assert pin["sha256"] == hashlib.sha256(b"MAGIC version 1").hexdigest()
    assert pin["origin"] == server.url("f")
    path.unlink()
    server.files["f"] = b"MAGIC version 2"  # the publisher changed the file
    with pytest.raises(ChecksumError, match=f"pinned in .*{PINS_FILE}"):
        _fetch(source, settings)
    assert _files(settings.data_dir) == [PINS_FILE]


def test_content_check_failure_pins_nothing(server, settings):
    server.files["f"] = b"garbage"
    with pytest.raises(FormatError, match="no magic"):
        _fetch(_source([server.url("f")], b"garbage", size=None, check=_starts_with_magic), settings)
    assert _files(settings.data_dir) == []


def test_verify_reports_each_copy(settings, tmp_path):
    mirror = tmp_path / "mirror"
    for root, content in ((settings.data_dir, CONTENT[::-1]), (mirror, CONTENT)):
        (root / NAME).parent.mkdir(parents=True)
        (root / NAME).write_bytes(content)
    (cached, cached_error), (mirrored, mirror_error) = verify(
        _source(["http://unused"]), Settings(settings.data_dir, mirror)
    )
    assert cached == settings.data_dir / NAME and "SHA-256 mismatch" in cached_error
    assert mirrored == mirror / NAME and mirror_error is None


def test_atomic_path_keeps_the_old_file_on_failure(tmp_path):
    target = tmp_path / "out.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("crash")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]
    with atomic_path(target) as tmp:
        tmp.write_text(json.dumps("new"))
    assert json.loads(target.read_text()) == "new"


def test_atomic_directory_replaces_whole_directories(tmp_path):
    target = tmp_path / "corpus"
    with atomic_directory(target) as tmp:
        (tmp / "a.txt").write_text("1")
    with pytest.raises(RuntimeError), atomic_directory(target) as tmp:
        (tmp / "b.txt").write_text("2")
        raise RuntimeError("crash")
    assert sorted(p.name for p in target.iterdir()) == ["a.txt"]
    with atomic_directory(target) as tmp:
        (tmp / "c.txt").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["c.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["corpus"]

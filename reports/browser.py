"""Headless Chromium driven over its DevTools protocol on a pipe (``--remote-debugging-pipe``:
JSON messages separated by NUL bytes, commands on file descriptor 3, replies on 4), so opening a
page, evaluating in it and screenshotting it need no driver, no port and no download.

Used to look at the HTML report as a person would (``tests/test_report_html.py``) and to save its
screenshot. Debian's ``chromium`` package provides the browser (``CHROMIUM``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BASH = shutil.which("bash") or "/bin/bash"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--remote-debugging-pipe"]


class Chromium:
    """A headless Chromium process with a fresh profile; use as a context manager."""

    def __init__(self, width: int = 1280, height: int = 2000, timeout: float = 60.0):
        if CHROMIUM is None:
            raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
        self.timeout, self._next, self._buffer = timeout, 0, b""
        self._profile = tempfile.TemporaryDirectory(prefix="pmd-bench-chromium-", ignore_cleanup_errors=True)
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()
        # the browser reads our commands on its fd 3 and writes the replies on its fd 4: a shell moves
        # the pipe's ends there (bash: dash takes single-digit descriptors only; no Python code runs
        # between fork and exec, so nothing can deadlock in this process of JAX threads)
        command = [CHROMIUM, *FLAGS, f"--user-data-dir={self._profile.name}", f"--window-size={width},{height}",
                   "about:blank"]
        self._proc = subprocess.Popen(
            [BASH, "-c", f'exec "$@" 3<&{to_browser} 4>&{from_browser}', "chromium", *command],
            pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)  # its own process group: __exit__ stops the helpers it forks too
        os.close(to_browser)
        os.close(from_browser)

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc) -> None:
        """Ask the browser to close (it flushes its profile), then stop its whole process group, then
        remove the profile, retrying while a helper process that has not exited yet still writes
        there (a bare kill of the main process left the renderer writing: "Directory not empty")."""
        try:
            os.write(self._write, json.dumps({"id": self._next + 1, "method": "Browser.close"}).encode() + b"\0")
            self._proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._proc.wait()
        os.close(self._write)
        os.close(self._read)
        for _ in range(40):
            try:
                shutil.rmtree(self._profile.name)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.25)
        self._profile.cleanup()

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one DevTools command and return its result (raises on a protocol error)."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise RuntimeError(f"DevTools {method}: {reply['error']}")
                    return reply["result"]
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium closed the DevTools pipe during {method}")
            self._buffer += chunk
        raise TimeoutError(f"DevTools {method}: no reply in {self.timeout} s")

    def open(self, url: str) -> str:
        """Open ``url`` in a new tab, wait until it has loaded, return the tab's session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable", session=session)
        self.call("Page.navigate", {"url": url}, session)
        deadline = time.monotonic() + self.timeout
        while self.evaluate(session, "document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{url} did not finish loading in {self.timeout} s")
            time.sleep(0.1)
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        """The JSON value of ``expression`` evaluated in the tab."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluating {expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, out: str | Path) -> Path:
        """Save the whole page (beyond the window) as a PNG at ``out``."""
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
        out = Path(out)
        out.write_bytes(base64.b64decode(shot["data"]))
        return out

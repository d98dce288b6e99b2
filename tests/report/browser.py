"""Headless Chromium for the report tests: finding (or installing) Debian's ``chromium``, and a small driver over
the DevTools protocol (stdlib + ``websockets``), so one browser serves every page of the session.

Playwright would be the usual tool, but it downloads its own browsers, which this offline machine cannot. The
driver needs four calls: navigate and wait for ``load``, evaluate an expression, screenshot, close.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from typing import Any

__all__ = ("Browser", "find_chromium")

NAMES = ("chromium", "chromium-browser", "google-chrome")


def find_chromium(*, install: bool) -> tuple[str | None, str]:
    """The browser's path, else ``None`` and why; with ``install``, ``apt-get install chromium`` first when none
    is on PATH and we are root (Debian's package; the tests skip where that is impossible)."""
    found = next((path for name in NAMES if (path := shutil.which(name))), None)
    if found or not install:
        return found, "" if found else "no chromium on PATH"
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("apt-get") is None:
        return None, "no chromium on PATH, and installing it needs root and apt-get (apt-get install chromium)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env, check=False)
    if done.returncode != 0:  # a stale package index: refresh it once and try again
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, timeout=300, env=env, check=False)
        done = subprocess.run(install, capture_output=True, text=True, timeout=900, env=env, check=False)
    found = shutil.which("chromium")
    return found, "" if found else f"apt-get install chromium failed: {done.stderr.strip()[-300:]}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol."""

    def __init__(self, executable: str, profile: Path, *, width: int = 1280, height: int = 1400) -> None:
        from websockets.sync.client import connect

        port = _free_port()
        self._closing = ExitStack()
        self._process = subprocess.Popen(
            [executable, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--window-size={width},{height}", f"--remote-debugging-port={port}", f"--user-data-dir={profile}",
             "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as answer:
                    pages = [t for t in json.load(answer) if t.get("type") == "page"]
                if pages:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port within 30 s")
            time.sleep(0.1)
        self._socket = self._closing.enter_context(
            connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=10)
        )
        self._next = 0
        self.call("Page.enable")
        self.call("Runtime.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one command and return its result (events in between are dropped)."""
        self._next += 1
        self._socket.send(json.dumps({"id": self._next, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=60))
            if message.get("id") == self._next:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, url: str) -> None:
        """Load ``url`` as a new document (through ``about:blank``, so a new fragment reloads) and wait for
        ``load``."""
        for target in ("about:blank", url):
            self._next += 1
            self._socket.send(json.dumps({"id": self._next, "method": "Page.navigate", "params": {"url": target}}))
            while json.loads(self._socket.recv(timeout=60)).get("method") != "Page.loadEventFired":
                pass

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable values only)."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression!r} raised: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, selector: str | None = None) -> Path:
        """A PNG of the viewport, or of the element ``selector`` names (scrolled into view, whole)."""
        params: dict[str, Any] = {"format": "png"}
        if selector is not None:
            box = self.evaluate(
                f"(() => {{ const r = document.querySelector({json.dumps(selector)}).getBoundingClientRect();"
                " return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()"
            )
            params.update(clip={**box, "scale": 1}, captureBeyondViewport=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", **params)["data"]))
        return path

    def close(self) -> None:
        self._closing.close()
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

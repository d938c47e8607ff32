"""A tiny driver for Debian's headless chromium over the DevTools protocol (tests only).

Starts ``chromium --headless`` with a throw-away profile and no network services, opens pages,
collects console errors and uncaught exceptions, evaluates JavaScript and takes screenshots.
Only ``websocket-client`` is needed (the ``test`` extra).
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def find_chromium() -> str:
    """The browser's path; in CI a missing browser fails the test (never a skip)."""
    for name in CHROMIUM:
        path = shutil.which(name)
        if path:
            return path
    msg = "headless chromium not found (apt-get install -y chromium; .ci/run installs it)"
    if os.environ.get("CI"):
        pytest.fail(msg)
    pytest.skip(msg)


class Browser:
    """``with Browser() as b: page = b.open(url)``."""

    def __init__(self, width: int = 1000, height: int = 700):
        self.size = (width, height)

    def __enter__(self):
        exe = find_chromium()
        self.profile = tempfile.mkdtemp(prefix="physmocap-chromium-")
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run",
             "--disable-default-apps", "--disable-extensions", "--mute-audio",
             f"--user-data-dir={self.profile}", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--window-size={self.size[0]},{self.size[1]}",
             "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Chromium writes the port it picked to DevToolsActivePort in the profile.
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError("chromium did not start")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def open(self, url: str, timeout: float = 30.0) -> "Page":
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank",
                                     method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            target = json.loads(r.read())
        page = Page(target["webSocketDebuggerUrl"], self.size)
        page.navigate(url, timeout)
        return page


class Page:
    """One tab: ``errors`` lists console errors, uncaught exceptions and failed loads."""

    def __init__(self, ws_url: str, size):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []
        self.errors: list[str] = []
        for method in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(method)
        self.call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1],
                  deviceScaleFactor=1, mobile=False)

    def _record(self, msg: dict) -> None:
        m, p = msg.get("method"), msg.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            self.errors.append(f"exception: {d.get('exception', {}).get('description') or d['text']}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            self.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                      for a in p.get("args", [])))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            self.errors.append(f"log: {p['entry']['text']} {p['entry'].get('url', '')}")
        if m:
            self.events.append(msg)

    def call(self, method: str, **params):
        self.next_id += 1
        my = self.next_id
        self.ws.send(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self._record(msg)

    def wait_event(self, method: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        for e in self.events:
            if e["method"] == method:
                return e
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            self._record(msg)
            if msg.get("method") == method:
                return msg
        raise TimeoutError(method)

    def navigate(self, url: str, timeout: float) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired", timeout)
        self.ws.settimeout(30)

    def eval(self, expression: str):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def pump(self, seconds: float) -> None:
        """Let the page run (animation frames) for ``seconds``, recording its events."""
        time.sleep(seconds)
        self.eval("1")

    def screenshot(self, path, full_page: bool = False) -> bytes:
        params = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            h = self.eval("document.documentElement.scrollHeight")
            w = self.eval("document.documentElement.scrollWidth")
            params["clip"] = {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}
        png = base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(png)
        return png

    def close(self) -> None:
        self.ws.close()


def non_background_fraction(png_path, tol: int = 24) -> float:
    """Fraction of pixels that differ from the most common colour (the background) by more
    than ``tol`` in any channel."""
    import numpy as np
    from PIL import Image
    a = np.asarray(Image.open(png_path).convert("RGB")).reshape(-1, 3).astype(np.int32)
    packed = (a[:, 0] << 16) | (a[:, 1] << 8) | a[:, 2]
    bg = int(np.argmax(np.bincount(packed)))              # the most common colour
    bg = np.array([bg >> 16, (bg >> 8) & 255, bg & 255])
    return float(np.mean(np.abs(a - bg).max(axis=1) > tol))

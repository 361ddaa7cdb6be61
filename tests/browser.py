"""Headless Chromium for the HTML report tests, driven over the DevTools protocol on a
pipe (``--remote-debugging-pipe``: no port is opened), so a test can wait for the page's
script, click, read the live DOM and take a screenshot.

The browser is started in a session of its own and stopped by its process id: ``close``
asks it to quit, then ends its process group (the browser's id) and checks that none of
its processes is left. Where Chromium is absent the tests that need it skip, saying so,
except under CI (``CI`` set, as ``.ci/run`` sets it), where they fail: CI installs it.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

#: the Debian package's binary first (``apt-get install chromium``)
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_BASH = shutil.which("bash") or "/bin/bash"
MISSING = ("headless Chromium is not installed (Debian: apt-get install chromium; or name "
           "the binary in CANONKIT_CHROMIUM)")


def find_chromium() -> str | None:
    named = os.environ.get("CANONKIT_CHROMIUM")
    if named:
        return named
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The browser's binary; skips the test where there is none (fails it under CI)."""
    binary = find_chromium()
    if binary is None:
        if os.environ.get("CI"):
            pytest.fail(f"{MISSING}; CI runs the browser tests, so a missing browser fails "
                        "them (.ci/run installs it)")
        pytest.skip(MISSING)
    return binary


def _above_4(fd: int) -> int:
    """``fd`` moved to a descriptor number of at least 10 (the old one is closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


class ProtocolError(RuntimeError):
    """The browser answered a command with an error, or did not answer in time."""


class Browser:
    """One headless Chromium. ``open(url)`` loads a page in a new tab and waits for its
    load event; ``close()`` stops the browser and every process it started."""

    def __init__(self, binary: str, profile: Path, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # above 4, so that the shell's redirections below cannot overwrite one another
        to_browser_r, from_browser_w = (_above_4(fd) for fd in (to_browser_r, from_browser_w))
        # the protocol's descriptors are 3 (commands) and 4 (answers); bash sets them up
        # (dash takes no descriptor above 9) and execs: the browser keeps its process id
        setup = (f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} '
                 f"{to_browser_r}<&- {from_browser_w}>&-")
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update",
                "--hide-scrollbars", "--mute-audio", "about:blank"]
        self.process = subprocess.Popen(
            [_BASH, "-c", setup, *args], pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self.pid = self.process.pid
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.seen: list[psutil.Process] = []
        try:
            self.version = self.command("Browser.getVersion")["product"]
        except BaseException:
            self.close()
            raise

    # --- the protocol ---------------------------------------------------------------------

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError("the browser did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise ProtocolError("the browser closed its pipe (it exited)")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        value: dict[str, Any] = json.loads(message)
        return value

    def command(self, method: str, params: dict[str, Any] | None = None,
                session: str | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_browser, data):]
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._receive(deadline)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise ProtocolError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._events.append(answer)

    def wait_for(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[i]
                    return event
            self._events.append(self._receive(deadline))

    # --- pages ----------------------------------------------------------------------------

    def open(self, url: str, *, javascript: bool = True, width: int = 1280,
             height: int = 1000) -> Tab:
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.command("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        self.seen = self._processes()
        tab = Tab(self, session)
        tab.command("Page.enable")
        tab.command("Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": 1,
                     "mobile": False})
        if not javascript:
            tab.command("Emulation.setScriptExecutionDisabled", {"value": True})
        tab.command("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired", session)
        return tab

    # --- stopping -------------------------------------------------------------------------

    def _processes(self) -> list[psutil.Process]:
        try:
            main = psutil.Process(self.pid)
            return [main, *main.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def close(self) -> None:
        """Quit the browser, end its process group, and make sure nothing of it is left."""
        processes = self._processes() or self.seen
        try:
            if self.process.poll() is None:
                try:
                    self.command("Browser.close")
                except (ProtocolError, OSError):
                    pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        finally:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.pid, sig)  # the session's group: the browser's own id
                except ProcessLookupError:
                    break
                try:
                    self.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    continue
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
        _, alive = psutil.wait_procs(processes, timeout=10)
        for p in alive:
            p.kill()
        assert not alive, f"browser processes left running: {alive}"


class Tab:
    """One page of a :class:`Browser`."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def command(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.command(method, params, self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (needs JavaScript on)."""
        answer = self.command("Runtime.evaluate", {"expression": expression,
                                                   "returnByValue": True})
        if "exceptionDetails" in answer:
            raise ProtocolError(f"{expression!r}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def dom(self) -> str:
        """The live DOM as markup (works with JavaScript off too)."""
        root = self.command("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
        markup: str = self.command("DOM.getOuterHTML", {"nodeId": root})["outerHTML"]
        return markup

    def screenshot(self, path: Path) -> bytes:
        """A PNG of the whole page (beyond the viewport), also written to ``path``."""
        data = base64.b64decode(self.command(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return data

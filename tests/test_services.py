"""The services the suite starts (tests/services.py) end with the test run that started
them: at the end of the session, and when the run is interrupted or terminated."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from services import HTTPServer, nginx_binary

HERE = Path(__file__).parent

CHILD_TEST = '''
import os, time
from pathlib import Path

pytest_plugins = ["services"]


def test_hold(http_server):
    pid = http_server.service.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    Path(os.environ["PIDS_FILE"]).write_text(" ".join([str(pid)] + children))
    time.sleep(120)
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"  # a zombie has ended
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_services_stop_when_the_test_run_is_signalled(tmp_path: Path, signum: int) -> None:
    if nginx_binary() is None and not os.environ.get("CI"):
        pytest.skip("nginx is not installed (Debian: apt-get install -y nginx)")
    (tmp_path / "test_hold.py").write_text(CHILD_TEST)
    pids_file = tmp_path / "pids"
    env = dict(os.environ, PIDS_FILE=str(pids_file),
               PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        run = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                "--rootdir", str(tmp_path), str(tmp_path / "test_hold.py")],
                               env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while not pids_file.exists() or not pids_file.read_text():
            assert run.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.1)
        pids = [int(p) for p in pids_file.read_text().split()]
        assert len(pids) >= 2 and all(_alive(p) for p in pids)  # master and its workers
        run.send_signal(signum)
        run.wait(60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    deadline = time.monotonic() + 15
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "a service outlived the test run"


def test_nginx_serves_ranges_with_etags(http_server: HTTPServer) -> None:
    import http.client
    from urllib.parse import urlsplit

    (http_server.root / "r.bin").write_bytes(bytes(range(100)))
    parts = urlsplit(http_server.url)
    connection = http.client.HTTPConnection(parts.netloc, timeout=10)
    connection.request("GET", "/r.bin", headers={"Range": "bytes=10-19"})
    response = connection.getresponse()
    assert response.status == 206 and response.read() == bytes(range(10, 20))
    assert response.getheader("ETag")
    connection.close()

"""Services the suite starts itself, as pytest fixtures (``conftest.py`` imports them).

- ``s3_endpoint`` (session): an S3 endpoint — moto's server (``moto[server]``) started as
  a subprocess on a free port of 127.0.0.1, with one bucket. ``CANONKIT_TEST_S3_ENDPOINT``
  points the suite at any other S3-compatible server instead: the credentials are then
  the usual ``AWS_*`` variables of the environment and the bucket
  ``CANONKIT_TEST_S3_BUCKET`` (default ``canonkit-test``), which must exist.
- ``s3`` (per test): the environment set for that endpoint and a fresh prefix URL
  ``s3://BUCKET/test-<random>/`` (:class:`S3Prefix`), so tests never see each other's
  objects.
- ``dask_cluster`` (session): a real cluster of processes — ``dask scheduler`` and two
  ``dask worker`` processes (default nannies, ``--nthreads 1``), not a LocalCluster; the
  workers' environment reaches ``s3_endpoint``. ``start_dask_cluster`` starts another,
  for a test that kills its workers.
- ``http_server`` (session): nginx (Debian package ``nginx``) serving a directory on a
  free port, with range requests and ETags, for reads over plain HTTP and throughput.
- :class:`FaultProxy`: an in-process HTTP proxy in front of a service that answers a
  chosen status (429, 503, ...), drops the connection or loses the answer on chosen
  requests, to test retries and lost responses; ``proxied`` (per test): the ``s3``
  endpoint behind one.

Every process started here is stopped by its PID: at the end of its fixture, at exit,
and on SIGINT/SIGTERM of the test run (the handler stops them, then lets the signal do
what it did before); each also gets ``PR_SET_PDEATHSIG`` so it dies with the test run
even when that is killed outright. A service that cannot start skips its tests with the
exact reason, unless ``CI`` is set: CI runs every one of them, so there it fails.
"""
from __future__ import annotations

import atexit
import ctypes
import http.client
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

STOP_GRACE = 10.0  # seconds between SIGTERM and SIGKILL


# --- processes --------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_RUNNING: list[Service] = []
_HANDLERS_SET = False


def _stop_all() -> None:
    for service in reversed(list(_RUNNING)):
        service.stop()


def _on_signal(signum: int, frame: Any) -> None:
    _stop_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_IGN:
        return
    else:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_PREVIOUS: dict[int, Any] = {}


def _install_handlers() -> None:
    global _HANDLERS_SET
    if _HANDLERS_SET or threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        _PREVIOUS[signum] = signal.getsignal(signum)
        signal.signal(signum, _on_signal)
    atexit.register(_stop_all)
    _HANDLERS_SET = True


@dataclass
class Service:
    """One process started for the tests; ``stop`` ends it by its PID."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def stop(self) -> None:
        if self in _RUNNING:
            _RUNNING.remove(self)
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def start(name: str, argv: list[str], log_dir: Path, *, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> Service:
    """Start ``argv`` with its output in ``log_dir/name.log``, in its own session (a ^C
    at the terminal reaches the test run, which stops it in order)."""
    _install_handlers()
    log = log_dir / f"{name}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, env=env, cwd=cwd,
                                   start_new_session=True, preexec_fn=_die_with_parent)
    service = Service(name, process, log)
    _RUNNING.append(service)
    return service


def wait_until(ready: Callable[[], bool], service: Service, what: str,
               timeout: float = 60.0) -> None:
    """Poll ``ready`` until it is true; fail (with the log) if the process ends or the
    time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            raise RuntimeError(f"{service.name} exited with status {service.process.returncode} "
                               f"before {what}:\n{service.log_tail()}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    service.stop()
    raise RuntimeError(f"{service.name} did not get {what} within {timeout:.0f} s:\n"
                       f"{service.log_tail()}")


def _http_ok(port: int, path: str = "/", method: str = "GET") -> bool:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request(method, path)
        return connection.getresponse().status < 500
    finally:
        connection.close()


#: the tests that read object storage or HTTP through obstore: obstore 0.12, the client of
#: ``canonkit[s3]``, is built for Python 3.11 and later, so on 3.10 the extra installs nothing
needs_obstore = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="obstore 0.12 (canonkit[s3]) supports Python 3.11 and later only")


def unavailable(reason: str) -> None:
    """Skip the test with ``reason``, except under CI, where every service must run."""
    if os.environ.get("CI"):
        pytest.fail(f"CI runs this test, but: {reason}")
    pytest.skip(reason)


# --- S3 -----------------------------------------------------------------------------------

@dataclass
class S3Endpoint:
    """An S3 endpoint: its URL, a bucket in it, and the environment that reaches it."""

    url: str
    bucket: str
    env: dict[str, str]
    service: Service | None = None


# credentials of the test endpoint: moto accepts any; never real ones
_MOTO_ENV = {"AWS_ACCESS_KEY_ID": "canonkit-test-key", "AWS_SECRET_ACCESS_KEY":
             "canonkit-test-secret", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true",
             "AWS_EC2_METADATA_DISABLED": "true"}


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Endpoint]:
    given = os.environ.get("CANONKIT_TEST_S3_ENDPOINT")
    if given:
        env = {k: v for k, v in os.environ.items() if k.startswith("AWS_")}
        env["AWS_ENDPOINT_URL"] = given
        if given.startswith("http://"):
            env["AWS_ALLOW_HTTP"] = "true"
        yield S3Endpoint(given, os.environ.get("CANONKIT_TEST_S3_BUCKET", "canonkit-test"),
                         env)
        return
    try:
        import moto.server  # noqa: F401
    except ImportError as exc:
        unavailable(f"moto[server] is not installed ({exc}): pip install -e '.[test]'")
    endpoint = start_moto(tmp_path_factory.mktemp("moto"))
    try:
        yield endpoint
    finally:
        assert endpoint.service is not None
        endpoint.service.stop()


def start_moto(log_dir: Path, bucket: str = "canonkit-test") -> S3Endpoint:
    """moto's S3 server on a free port, holding ``bucket`` (stop it with
    ``.service.stop()``)."""
    port = free_port()
    service = start("moto", [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], log_dir)
    try:
        wait_until(lambda: _http_ok(port, "/moto-api/"), service, "listening")
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("PUT", f"/{bucket}")  # moto needs no signature to make a bucket
        status = connection.getresponse().status
        connection.close()
        assert status == 200, f"moto refused to create the bucket: {status}"
    except BaseException:
        service.stop()
        raise
    env = dict(_MOTO_ENV, AWS_ENDPOINT_URL=f"http://127.0.0.1:{port}")
    return S3Endpoint(f"http://127.0.0.1:{port}", bucket, env, service)


@dataclass
class S3Prefix:
    """A prefix of its own in the test bucket; the environment is set for the endpoint."""

    endpoint: S3Endpoint
    url: str  # s3://BUCKET/test-<random>/

    def key_url(self, name: str) -> str:
        return self.url + name

    def put(self, name: str, data: bytes) -> str:
        """Write the object ``name`` under the prefix; its ETag."""
        from canonkit._files import remote

        return remote.put(self.key_url(name), data)

    def put_marker(self, name: str) -> None:
        """A "directory marker" (an empty object whose key ends in "/"), as consoles make;
        canonkit's own writes refuse such keys, so it is made by a plain request (moto
        needs no signature)."""
        if self.endpoint.service is None:
            pytest.skip("directory markers are made on the moto endpoint only")
        host = self.endpoint.url.removeprefix("http://")
        connection = http.client.HTTPConnection(host, timeout=10)
        connection.request("PUT", "/" + self.url.removeprefix("s3://") + name, body=b"")
        assert connection.getresponse().status == 200
        connection.close()


def use_endpoint(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    """The environment of ``env`` (other AWS_* variables removed), fresh clients."""
    from canonkit._files import remote

    for name in list(os.environ):
        if name.startswith("AWS_") and name not in env:
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(remote, "_clients", {})  # clients made for another environment


@pytest.fixture
def s3(s3_endpoint: S3Endpoint, monkeypatch: pytest.MonkeyPatch) -> S3Prefix:
    try:
        import obstore  # noqa: F401
    except ImportError as exc:
        unavailable(f"obstore is not installed ({exc}): pip install -e '.[s3]'")
    use_endpoint(monkeypatch, s3_endpoint.env)
    return S3Prefix(s3_endpoint, f"s3://{s3_endpoint.bucket}/test-{uuid.uuid4().hex[:12]}/")


# --- Dask -----------------------------------------------------------------------------------

@dataclass
class DaskCluster:
    """A scheduler and its worker processes; ``address`` is the scheduler's. Each entry of
    ``workers`` is a ``dask worker`` process: its nanny, which runs the worker itself as a
    child process."""

    address: str
    scheduler: Service
    workers: list[Service] = field(default_factory=list)
    logs: Path | None = None
    env: dict[str, str] | None = None

    def add_worker(self) -> Service:
        """Start one more ``dask worker`` process (``--nthreads 1``, default nanny)."""
        assert self.logs is not None
        i = len(self.workers)
        worker = start(f"dask-worker-{i}", [
            sys.executable, "-m", "distributed.cli.dask_worker", self.address,
            "--nthreads", "1", "--name", f"worker-{i}", "--no-dashboard",
            "--local-directory", str(self.logs / f"worker-{i}")], self.logs, env=self.env,
            cwd=self.logs)
        self.workers.append(worker)
        return worker

    def worker_pids(self) -> dict[str, int]:
        """The PID of each worker process (the nanny's child), by worker address."""
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            return dict(client.run(os.getpid))

    def wait_for_workers(self, n: int, timeout: float = 60.0) -> None:
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=timeout)

    def stop(self) -> None:
        for worker in self.workers:
            worker.stop()
        self.scheduler.stop()


def start_dask_cluster(logs: Path, env: dict[str, str], workers: int = 2) -> DaskCluster:
    """A ``dask scheduler`` and ``workers`` ``dask worker`` processes (logs in ``logs``);
    stop it with ``.stop()``."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    scheduler = start("dask-scheduler", [
        sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
        "--port", str(port), "--no-dashboard", "--no-show"], logs, cwd=logs)
    cluster = DaskCluster(address, scheduler, logs=logs, env=env)
    try:
        wait_until(lambda: socket.create_connection(("127.0.0.1", port), 1).close() is None,
                   scheduler, "listening")
        for _ in range(workers):
            cluster.add_worker()
        cluster.wait_for_workers(workers)
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory, s3_endpoint: S3Endpoint
                 ) -> Iterator[DaskCluster]:
    """The workers' environment reaches the S3 endpoint, as a real cluster's would hold
    its credentials: they read the bucket themselves."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        unavailable(f"dask[distributed] is not installed ({exc}): pip install -e '.[test]'")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(s3_endpoint.env)
    cluster = start_dask_cluster(tmp_path_factory.mktemp("dask"), env)
    try:
        yield cluster
    finally:
        cluster.stop()


# --- nginx ------------------------------------------------------------------------------

@dataclass
class HTTPServer:
    """nginx serving ``root`` at ``url`` (``http://127.0.0.1:PORT/``)."""

    root: Path
    url: str
    service: Service


_NGINX_CONF = """\
daemon off;
master_process on;
worker_processes 2;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
{user}
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ }}
    }}
}}
"""


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)),
        None)


def start_nginx(root: Path, tmp: Path) -> HTTPServer:
    """nginx serving ``root`` (stop it with ``.service.stop()``)."""
    binary = nginx_binary()
    if binary is None:
        unavailable("nginx is not installed (Debian: apt-get install -y nginx)")
        raise AssertionError  # unreachable
    port = free_port()
    tmp.mkdir(parents=True, exist_ok=True)
    # as root, nginx's workers would run as "nobody", who may not read the test's files
    user = "user root root;" if os.geteuid() == 0 else ""
    conf = tmp / "nginx.conf"
    conf.write_text(_NGINX_CONF.format(tmp=tmp, port=port, root=root, user=user))
    service = start("nginx", [binary, "-c", str(conf), "-p", str(tmp), "-e",
                              str(tmp / "error.log")], tmp)
    wait_until(lambda: _http_ok(port, "/", "HEAD"), service, "listening")
    return HTTPServer(root, f"http://127.0.0.1:{port}/", service)


@pytest.fixture(scope="session")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HTTPServer]:
    base = tmp_path_factory.mktemp("nginx")
    (base / "www").mkdir()
    server = start_nginx(base / "www", base / "run")
    try:
        yield server
    finally:
        server.service.stop()


# --- faults ---------------------------------------------------------------------------------

class FaultProxy:
    """An HTTP/1.1 proxy on 127.0.0.1 in front of ``upstream`` (``host:port``) that
    forwards every request, except those a fault is queued for: ``fail(status, n)``
    answers the next ``n`` matching requests with that status, ``drop(n)`` closes the
    connection on them without an answer, ``lose(n)`` forwards them and then closes the
    connection without passing the answer on (the request was applied; its client
    cannot know). ``match`` (method, path) selects requests. ``requests`` counts what
    came in, ``faults`` what was answered with a fault."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.rpartition(":")
        self._upstream = (host, int(port))
        self._queue: list[tuple[Callable[[str, str], bool], int | str]] = []
        self._lock = threading.Lock()
        self.requests = 0
        self.faults = 0
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = int(self._server.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self._closing = False
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def fail(self, status: int, n: int = 1,
             match: Callable[[str, str], bool] = lambda method, path: True) -> None:
        with self._lock:
            self._queue += [(match, status)] * n

    def drop(self, n: int = 1,
             match: Callable[[str, str], bool] = lambda method, path: True) -> None:
        with self._lock:
            self._queue += [(match, "drop")] * n

    def lose(self, n: int = 1,
             match: Callable[[str, str], bool] = lambda method, path: True) -> None:
        with self._lock:
            self._queue += [(match, "lose")] * n

    def _fault_for(self, method: str, path: str) -> tuple[bool, int | str | None]:
        with self._lock:
            self.requests += 1
            for i, (match, status) in enumerate(self._queue):
                if match(method, path):
                    del self._queue[i]
                    self.faults += 1
                    return True, status
        return False, None

    def _accept(self) -> None:
        while not self._closing:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while True:
                head = reader.readline()
                if not head:
                    return
                method, path, _ = head.decode("latin-1").split(" ", 2)
                headers = []
                length = 0
                while True:
                    line = reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    headers.append(line)
                    name, _, value = line.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                body = reader.read(length) if length else b""
                faulted, status = self._fault_for(method, path)
                if status == "drop":
                    return  # dropped: no answer
                if status == "lose":
                    self._forward(head, headers, body, method)
                    return  # applied upstream; the answer lost
                if faulted:
                    payload = f"<Error><Code>Injected</Code><Status>{status}</Status></Error>"
                    conn.sendall((f"HTTP/1.1 {status} Injected\r\nContent-Length: "
                                  f"{len(payload)}\r\nContent-Type: application/xml\r\n\r\n"
                                  f"{payload}").encode())
                    continue
                conn.sendall(self._forward(head, headers, body, method))
        except (OSError, ValueError):
            return
        finally:
            reader.close()
            conn.close()

    def _forward(self, head: bytes, headers: list[bytes], body: bytes, method: str) -> bytes:
        with socket.create_connection(self._upstream, 30) as up:
            up.sendall(head + b"".join(headers) + b"\r\n" + body)
            response = http.client.HTTPResponse(up, method=method)
            response.begin()
            data = response.read()
            lines = [f"HTTP/1.1 {response.status} {response.reason}\r\n".encode()]
            dropped = ("transfer-encoding", "connection") + (
                () if method == "HEAD" else ("content-length",))  # a HEAD keeps its length
            for name, value in response.getheaders():
                if name.lower() not in dropped:
                    lines.append(f"{name}: {value}\r\n".encode("latin-1"))
            if method != "HEAD":
                lines.append(f"Content-Length: {len(data)}\r\n".encode())
            lines.append(b"\r\n")
            return b"".join(lines) + data

    def close(self) -> None:
        self._closing = True
        self._server.close()


@pytest.fixture
def proxied(s3: S3Prefix, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The S3 endpoint behind a :class:`FaultProxy` (the environment pointed at it), with
    short backoff pauses between retries."""
    from canonkit._files import remote

    proxy = FaultProxy(s3.endpoint.url.removeprefix("http://"))
    use_endpoint(monkeypatch, dict(s3.endpoint.env, AWS_ENDPOINT_URL=proxy.url,
                                   AWS_ALLOW_HTTP="true"))
    monkeypatch.setattr(remote, "RETRY", remote.RetryPolicy(attempts=4, first=0.01, cap=0.05))
    yield proxy
    proxy.close()


def random_secret() -> str:
    """A credential-like value that must never appear in any output."""
    return "SECRET" + secrets.token_hex(16)

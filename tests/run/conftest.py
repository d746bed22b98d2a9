"""Fixtures for the distributed tests: a real redis-server (one per session, on
127.0.0.1 and a free port, with a password), a database of its own per test, and real
``unfurl worker`` subprocesses, all stopped at teardown."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT, Project
from tests.execution_helpers import wait_for

REDIS = shutil.which("redis-server") or ("/usr/bin/redis-server"
                                         if Path("/usr/bin/redis-server").exists() else None)
PASSWORD = "broker-pw-7f3a9c"  # every broker URL carries it: it must never leak
_databases = itertools.count(1)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(port: int, *options: str) -> subprocess.Popen[bytes]:
    """A redis-server on 127.0.0.1:port with a password, up and answering (``options``:
    more of redis-server's, e.g. to persist)."""
    if REDIS is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    process = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--requirepass", PASSWORD, *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port, password=PASSWORD)

    def up() -> bool:
        try:
            return bool(client.ping())
        except redis.exceptions.RedisError:  # not yet listening, or loading its data
            return False

    wait_for(up, limit=10)
    return process


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    port = free_port()
    process = start_redis(port)
    try:
        yield f"redis://:{PASSWORD}@127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def broker(redis_server: str) -> str:
    """A Redis database of its own for each test."""
    import redis

    url = f"{redis_server}/{next(_databases) % 16}"
    redis.Redis.from_url(url).flushdb()
    return url


Workers = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def workers(project: Project, broker: str) -> Iterator[Workers]:
    """Start ``unfurl worker`` subprocesses; they are all killed at teardown."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, *queues: str, concurrency: int = 2, loglevel: str = "WARNING",
              cwd: Path | None = None, env: dict[str, str] | None = None,
              options: tuple[str, ...] = (), url: str | None = None) -> subprocess.Popen[bytes]:
        args = [sys.executable, "-m", "unfurl_lite", "worker", "--name", name,
                "--concurrency", str(concurrency), "--loglevel", loglevel, *options]
        for queue in queues:
            args += ["--queue", queue]
        log = (project.root.parent / f"worker-{name}.log").open("ab")
        process = subprocess.Popen(
            args, cwd=cwd or project.root, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "UNFURL_BROKER": url or broker,
                 **(env or {})},
        )
        started.append(process)
        wait_for(lambda: heartbeat(url or broker, name), limit=30)
        return process

    try:
        yield start
    finally:
        for process in started:
            kill_group(process)


def kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def heartbeat(broker: str, name: str) -> bool:
    """The worker has said it is ready (it publishes itself once it consumes)."""
    import redis

    try:
        return any(redis_client(broker).scan_iter(f"unfurl-lite:worker:{name}@*"))
    except redis.exceptions.ConnectionError:  # a broker just restarted: not yet
        return False



def redis_client(url: str):
    import redis

    return redis.Redis.from_url(url)

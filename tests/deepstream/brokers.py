"""A real redis-server for the tests, started on 127.0.0.1 at a free port and stopped (never left running)."""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """``redis-server`` as a child process: loopback only, no persistence, its own temporary folder."""

    def __init__(self, binary: str):
        self.binary = binary
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self._dir = tempfile.TemporaryDirectory(prefix="obbmeta-redis-")

    def start(self, tries: int = 3) -> None:
        for _ in range(tries):  # a free port may be taken between the probe and the server's bind
            self.port = free_port()
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--daemonize", "no", "--dir", self._dir.name, "--logfile", str(Path(self._dir.name) / "log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._wait_ready(timeout_s=10):
                return
            self.stop()
        raise RuntimeError(f"redis-server did not start on 127.0.0.1 ({tries} tries): {self.log()}")

    def _wait_ready(self, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            time.sleep(0.05)
        return False

    def log(self) -> str:
        path = Path(self._dir.name) / "log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def close(self) -> None:
        self.stop()
        self._dir.cleanup()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"


def start_redis() -> RedisServer:
    """A started server, or the calling test is skipped when there is no redis-server or redis client."""
    pytest.importorskip("redis", reason="the redis client (requirements/test.txt) is not installed")
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("no redis-server on PATH (Debian package redis-server; scripts/setup-env.sh installs it as root)")
    server = RedisServer(binary)
    server.start()
    return server

"""A `llamay serve` subprocess on a free loopback port, for the benchmark scripts
(bench_hostile.py, bench_load.py): start, wait for /health, RSS, SIGTERM, stop."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import httpx

ROOT = Path(__file__).resolve().parent.parent
_LOG_TAIL_BYTES = 8192


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fixture_model_path() -> str:
    sys.path.insert(0, str(ROOT / "tests"))
    import fixture_model
    return str(fixture_model.fixture_model_path())


class ServerProcess:
    def __init__(self, model: Optional[str], *args: str, startup_timeout: float = 180):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
        cmd = [sys.executable, "-c", "from server.cli import main; main()", "serve",
               "--host", "127.0.0.1", "--port", str(self.port), *args]
        if model:
            cmd[4:4] = ["-m", model]
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
        # read the server's log as it comes: a pipe nobody reads fills (64 KiB) and then
        # blocks the server on its next log line (a long run of requests whose schemas hold
        # ignored keywords stalled its compile threads so); the tail is kept for errors
        self._log_tail = bytearray()
        self._log_reader = threading.Thread(target=self._read_log, daemon=True)
        self._log_reader.start()
        deadline = time.monotonic() + startup_timeout
        while True:
            if self.proc.poll() is not None:
                self._log_reader.join(5)
                raise RuntimeError("server exited: " + self.log_tail())
            try:
                if httpx.get(self.base + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server did not start")
            time.sleep(0.1)
        self.model_name = httpx.get(self.base + "/health", timeout=5).json()["model"]

    def _read_log(self) -> None:
        for line in self.proc.stderr:
            self._log_tail += line
            del self._log_tail[:-_LOG_TAIL_BYTES]

    def log_tail(self) -> str:
        """The last few KiB the server wrote to stderr."""
        return bytes(self._log_tail).decode("utf-8", "replace")

    def rss_mb(self) -> Optional[float]:
        """Resident memory of the server process (Linux /proc), in MiB."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def health(self) -> dict:
        return httpx.get(self.base + "/health", timeout=10).json()

    def sigterm(self) -> None:
        self.proc.send_signal(signal.SIGTERM)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(30)

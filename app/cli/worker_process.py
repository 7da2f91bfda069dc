"""The ingestion worker of `laptime serve`: a supervised child process.

A process of its own, so CPU-heavy parsing never holds the GIL the web server's event loop
needs; supervised, so a worker that dies (a crash, an OOM kill) is started again with backoff;
stopped with the server. The child exits by itself if the server vanishes without stopping it.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading

from app.metrics.process_dir import forget_process
from ingest.failures import Backoff

log = logging.getLogger("laptime.serve")

LAPTIME = [sys.executable, "-c", "from app.cli.main import main; main()"]


class SupervisedWorker:
    """Keeps one `laptime worker` child running until stop()."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._supervise, name="laptime-supervisor")
        self.restarts = 0

    def start(self) -> None:
        """Start the child and the thread that restarts it."""
        self._thread.start()

    def begin_stop(self) -> None:
        """Ask the child to stop (SIGTERM) without waiting: it rolls back or finishes."""
        self._stopping.set()
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                self._proc.send_signal(signal.SIGTERM)

    def stop(self, timeout_s: float) -> None:
        """Stop the child, killing it if it has not exited after `timeout_s`."""
        self.begin_stop()
        self._thread.join(timeout=timeout_s)
        with self._lock:
            proc = self._proc
        if proc is not None and proc.poll() is None:
            log.warning("worker did not stop in %.0f s; killing it", timeout_s)
            proc.kill()
            proc.wait(timeout=5)
        self._thread.join(timeout=5)

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = {**os.environ, "DATABASE_URL": self.database_url}
        # The child shares the server's PROMETHEUS_MULTIPROC_DIR: /metrics has its counts, and
        # a port of its own would serve them twice.
        env.pop("LAPTIME_WORKER_METRICS_PORT", None)
        return subprocess.Popen(
            [*LAPTIME, "worker", "--no-migrate", "--exit-with-parent", str(os.getpid())],
            env=env,
        )

    def _supervise(self) -> None:
        backoff = Backoff(0.5, 10.0)
        while not self._stopping.is_set():
            with self._lock:
                if self._stopping.is_set():
                    return
                self._proc = proc = self._spawn()
            code = proc.wait()
            forget_process(proc.pid)
            if self._stopping.is_set():
                return
            self.restarts += 1
            delay = backoff.next_delay()
            log.error("worker exited with %s; restarting it in %.1f s", code, delay)
            self._stopping.wait(delay)

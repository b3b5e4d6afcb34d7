"""`cotplan serve --workers N`: N gateway processes answering on one port.

The parent binds the port once and starts N worker processes (``spawn``: each a fresh
interpreter, as uvicorn's own workers are), each running the whole gateway on that socket: the
kernel hands each new connection to one of them. A worker is a complete gateway: its own pool
of connections to the upstream, its own plans (reloaded on SIGHUP, which the parent passes on
to every worker, or when a plan file changes), its own call-log writer. What they share:

- the call log: one SQLite file in write-ahead-log mode with a busy timeout
  (`cotplan.production.log`), each worker appending its batches (`log_writer`);
- ``/metrics``: prometheus-client's multiprocess mode (a folder of counter files the parent
  makes and removes), so whichever worker answers the scrape reports the sum over all of them.

SIGTERM or Ctrl-C to the parent stops every worker the graceful way (calls under way finish,
queued log rows are written). A worker that dies is not restarted: the parent stops the rest
and exits, so that a supervisor (systemd, Kubernetes) sees the failure and restarts the lot.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import socket
import tempfile
from collections.abc import Callable
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Protocol

from cotplan.errors import InputError
from cotplan.production.metrics import MULTIPROC_ENV

__all__ = ["MULTIPROC_ENV", "check_workers", "serve_workers"]


class Serving(Protocol):
    """What a worker runs: a gateway serving on a socket until stopped."""

    def serve_on(self, sock: socket.socket) -> None: ...


def check_workers(workers: object) -> int:
    """`workers` if it is a whole number >= 1 (`InputError` naming `workers`)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"must be a whole number ≥ 1, got {workers!r}", field="workers")
    return workers


def _work(factory: Callable[[], Serving], sock: socket.socket) -> None:
    factory().serve_on(sock)


def serve_workers(factory: Callable[[], Serving], sock: socket.socket, workers: int) -> int:
    """Run `workers` processes, each serving `factory()` on `sock`, until stopped (see the
    module); returns the exit status (0: stopped on request). `factory` must pickle (a
    `functools.partial` of the gateway class and its arguments)."""
    folder = tempfile.mkdtemp(prefix="cotplan-metrics-")
    os.environ[MULTIPROC_ENV] = folder  # read by each worker as it starts
    context = multiprocessing.get_context("spawn")
    processes: list[BaseProcess] = [
        context.Process(target=_work, args=(factory, sock), name=f"cotplan-gateway-{i + 1}")
        for i in range(workers)
    ]
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGTERM)

    def reload(signum: int, frame: FrameType | None) -> None:
        for process in processes:
            if process.pid is not None and process.is_alive():
                os.kill(process.pid, signal.SIGHUP)

    previous = {
        signum: signal.signal(signum, handler)
        for signum, handler in ((signal.SIGINT, stop), (signal.SIGTERM, stop))
    }
    if hasattr(signal, "SIGHUP"):
        previous[signal.SIGHUP] = signal.signal(signal.SIGHUP, reload)
    try:
        for process in processes:
            process.start()
        sock.close()  # the workers hold it now
        failed = 0
        for process in processes:
            process.join()
            if process.exitcode and not stopping:
                failed = abs(process.exitcode)
                stop(signal.SIGTERM, None)  # one down: stop the rest (see the module)
        return failed
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        os.environ.pop(MULTIPROC_ENV, None)
        shutil.rmtree(folder, ignore_errors=True)

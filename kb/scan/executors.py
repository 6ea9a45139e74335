"""Where scan tasks run: inline, in a local process pool (one worker per core), or on a Ray cluster."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from kb.scan.database import ScanDatabase
from kb.scan.segments import SegmentResult
from kb.scan.worker import Task, batches, install, run_installed, scan_batch, scan_task

OnDone = Callable[[Task, SegmentResult], None]

#: Below this many bytes in all, starting processes costs more than it saves.
INLINE_BYTES = 48 * 1024 * 1024


class ScanError(Exception):
    """The scan cannot run at all (no Ray cluster, no worker processes); the message says why."""


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class LocalExecutor:
    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = max(1, workers) if workers else default_workers()

    def run(
        self,
        db: ScanDatabase,
        watched: frozenset[str],
        tasks: list[Task],
        on_done: OnDone,
        size: int,
        started: Callable[[], None] | None = None,
    ) -> None:
        if self.workers == 1 or len(tasks) <= 1 or size < INLINE_BYTES:
            self.workers = 1
            if started is not None:
                started()
            for task in tasks:
                on_done(task, scan_task(db, watched, task))
            return
        # fork is cheapest, but forking a process that runs threads (a web server) is unsafe.
        method = "fork" if threading.active_count() == 1 and os.name == "posix" else "spawn"
        ctx = multiprocessing.get_context(method)
        n = min(self.workers, len(tasks))
        self.workers = n
        with ProcessPoolExecutor(n, mp_context=ctx, initializer=install, initargs=(db.for_worker(), watched)) as pool:
            pending: dict[Future[list[SegmentResult]], list[Task]] = {}
            queue = batches(tasks)
            # Keep the queue short so results (and their memory) come back as they are made.
            while queue or pending:
                while queue and len(pending) < n * 8:
                    batch = queue.pop(0)
                    pending[pool.submit(run_installed, batch)] = batch
                if started is not None:
                    started()  # the workers exist (forked at the first submit): threads are safe now
                    started = None
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    for task, result in zip(pending.pop(fut), fut.result(), strict=True):
                        on_done(task, result)


class RayExecutor:
    """Fans tasks out over an existing Ray cluster. The files must be readable at the same paths on
    the nodes (a shared file system) and verl-doctor installed there (`pip install verl-doctor[ray]`)."""

    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        self.address = address or "auto"
        self.workers = 0

    def run(
        self,
        db: ScanDatabase,
        watched: frozenset[str],
        tasks: list[Task],
        on_done: OnDone,
        size: int,
        started: Callable[[], None] | None = None,
    ) -> None:
        try:
            import ray
        except ImportError:
            raise ScanError("--ray needs Ray: pip install 'verl-doctor[ray]'") from None
        started_here = not ray.is_initialized()
        if started_here:
            _check_reachable(self.address)
            try:
                ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
            except Exception as exc:
                raise ScanError(f"cannot connect to the Ray cluster at {self.address}: {exc}") from None
        try:
            self.workers = int(ray.cluster_resources().get("CPU", 0))
            remote: Any = ray.remote(num_cpus=1)(scan_batch)
            db_ref = ray.put(db.for_worker())
            pending = {remote.remote(db_ref, watched, batch): batch for batch in batches(tasks)}
            if started is not None:
                started()
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    for task, result in zip(pending.pop(ref), ray.get(ref), strict=True):
                        on_done(task, result)
        finally:
            if started_here:
                ray.shutdown()


def _check_reachable(address: str) -> None:
    """Fail fast on a host:port nobody listens on (ray.init would retry for minutes)."""
    import socket

    target = address.split("://", 1)[-1]
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto", or a form Ray resolves itself
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=3):
            return
    except OSError as exc:
        raise ScanError(f"cannot connect to the Ray cluster at {address}: {exc.strerror or exc}") from None

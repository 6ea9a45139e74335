"""A real uvicorn server on a free loopback port, in a thread, for tests that talk HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def running(app: FastAPI, until_model: bool = False) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1:<free port>; yields the base URL and stops the server afterwards.

    ``until_model`` waits until /healthz says the embedding model is no longer loading: on a loaded CI
    machine the first export of the model can outlast a client's per-request timeout."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300  # the lifespan loads the model and may build the index
    while time.monotonic() < deadline:
        try:
            health = httpx.get(f"{base}/healthz", timeout=2)
            if health.status_code == 200 and not (until_model and health.json().get("model") == "loading"):
                break
            time.sleep(0.1)
        except httpx.HTTPError:
            time.sleep(0.1)
    else:
        server.should_exit = True
        raise RuntimeError("server did not come up")
    try:
        yield base
    finally:
        server.should_exit = True
        thread.join(timeout=10)


@contextmanager
def serve_process(args: list[str], log: Path, env: dict[str, str] | None = None, wait: float = 120) -> Iterator[str]:
    """`verl-doctor serve ARGS --port <free>` in its own process; yields the base URL, stops it afterwards."""
    port = free_port()
    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*cmd, "serve", "--port", str(port), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=Path(__file__).resolve().parent.parent,
            env=env if env is not None else dict(os.environ),
        )
    with up_until_done(proc, f"{base}/healthz", wait, lambda: f"verl-doctor serve: {log.read_text()[-2000:]}"):
        yield base


@contextmanager
def up_until_done(
    proc: subprocess.Popen[bytes], probe: str, wait: float, describe: Callable[[], str]
) -> Iterator[None]:
    """Wait until GET ``probe`` answers 200 (or fail with ``describe()`` if ``proc`` exits or ``wait`` passes),
    then stop ``proc`` when the block ends."""
    try:
        deadline = time.monotonic() + wait
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"exited with {proc.returncode}: {describe()}")
            try:
                if httpx.get(probe, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"did not come up: {describe()}")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

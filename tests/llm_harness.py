"""Starts tests/llm_server.py as a real uvicorn process on a free loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import REPO
from tests.server_harness import free_port, up_until_done


@contextmanager
def llm_server() -> Iterator[str]:
    """Yields the base URL (``http://127.0.0.1:PORT/v1``); the process is stopped afterwards."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "tests.llm_server:app",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    base = f"http://127.0.0.1:{port}/v1"
    with up_until_done(proc, f"{base}/models", 60, lambda: "the test LLM server (tests/llm_server.py)"):
        yield base

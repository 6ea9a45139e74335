"""Attack and bad-input probes against the command line, run as a real process (issue 13)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.server_harness import free_port

ENV = {**os.environ, "NO_COLOR": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def verl_doctor(*args: str, stdin: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    return subprocess.run(
        [*cmd, *args], input=stdin, capture_output=True, timeout=timeout, cwd=REPO, env=ENV, check=False
    )


@pytest.mark.parametrize("token", [" ", "", "short", " padded-token-0123456789 "])
def test_serve_refuses_blank_or_short_tokens(token: str) -> None:
    """Refused at once with exit 2, instead of serving (the timeout bounds the test if it does serve)."""
    proc = verl_doctor("serve", "--no-semantic", "--port", str(free_port()), "--token", token, timeout=60)
    assert proc.returncode == 2, proc.stderr.decode()[-2000:]
    assert "--token" in proc.stderr.decode()

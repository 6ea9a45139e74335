"""Attack and bad-input probes against ``verl-doctor mcp`` over stdio, through the SDK's own client (issue 13)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp_types import CallToolResult

from tests.test_mcp import FAILURE_LOG, REPO, _cli, _text

SECRET = "TOP-SECRET-77aa RuntimeError: CUDA error: an illegal memory access was encountered"


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("mcp-probe")
    outside = base / "outside"
    (outside / "logs").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n" * 3)
    (outside / "logs" / "worker-1.err").write_text(f"Traceback (most recent call last):\n{SECRET}\n")
    job = base / "jobs" / "job"
    job.mkdir(parents=True)
    shutil.copy(FAILURE_LOG, job / "output.log")
    (job / "main_ppo.log").symlink_to(outside / "secret.txt")
    (job / "ray").symlink_to(outside / "logs", target_is_directory=True)
    return base / "jobs"


async def _conversation(root: Path, errlog: Any) -> dict[str, Any]:
    args = ["mcp", "--no-semantic", "--scan-root", str(root)]
    params = StdioServerParameters(command=_cli(), args=args, cwd=str(REPO), env=dict(os.environ))
    out: dict[str, Any] = {}
    with anyio.fail_after(180):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            out["scan"] = await client.call_tool("scan", {"path": "job"})
            t0 = time.monotonic()
            out["many"] = await client.call_tool("check_overrides", {"overrides": ["trainer.nnodes=1"] * 20_000})
            out["many_seconds"] = time.monotonic() - t0
            t0 = time.monotonic()
            line = "python3 -m verl.trainer.main_ppo " + " ".join(f"trainer.x{i}=1" for i in range(5000))
            out["long_line"] = await client.call_tool("check_overrides", {"input": line})
            out["long_line_seconds"] = time.monotonic() - t0
            out["few"] = await client.call_tool("check_overrides", {"overrides": ["trainer.nnodes=1"] * 10})
    return out


@pytest.fixture(scope="module")
def conversation(root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    log = tmp_path_factory.mktemp("mcp-probe-log") / "stderr.log"
    with log.open("w") as errlog:
        return anyio.run(_conversation, root, errlog)


def test_scan_tool_does_not_follow_links_out_of_the_root(conversation: dict[str, Any]) -> None:
    result: CallToolResult = conversation["scan"]
    assert not result.is_error, _text(result)
    assert "TOP-SECRET" not in _text(result)
    skipped = {Path(s["path"]).name: s["reason"] for s in result.structured_content["skipped"]}
    assert "outside the scan roots" in skipped.get("main_ppo.log", ""), skipped
    assert "outside the scan roots" in skipped.get("ray", ""), skipped


def test_check_overrides_caps_the_list(conversation: dict[str, Any]) -> None:
    assert conversation["many"].is_error and conversation["many_seconds"] < 10
    assert conversation["long_line"].is_error and "at most 1000" in _text(conversation["long_line"])
    assert conversation["long_line_seconds"] < 10
    assert not conversation["few"].is_error, _text(conversation["few"])

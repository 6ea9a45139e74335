"""POST /v1/preflight on a real uvicorn server and the MCP tool ``preflight`` over stdio: the same field names as
the CLI (input, verl_version, nnodes, gpus_per_node) and the one result schema."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from kb.preflight.models import PreflightResult
from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import REPO
from tests.server_harness import running

RUN = REPO / "tests" / "eval" / "verl_runs" / "batch_not_divisible_by_gpus" / "command.txt"
COMMAND = RUN.read_text().split("timeout 300 ", 1)[1]


@pytest.fixture(scope="module")
def api(diagnoser) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with running(create_app(ServerSettings(), diagnoser)) as base:
        yield base


def test_http_preflight_of_a_command(api: str) -> None:
    r = httpx.post(f"{api}/v1/preflight", json={"input": COMMAND, "verl_version": "0.9.1"}, timeout=60)
    assert r.status_code == 200, r.text
    result = PreflightResult.model_validate(r.json())
    assert not result.starts and result.release_checked == "0.9.1"
    assert result.findings[0].check == "real-train-batch-not-divisible"
    assert result.findings[0].entry == "real-train-batch-not-divisible"


def test_http_preflight_takes_the_resources_and_yaml(api: str) -> None:
    yaml_text = "- data.train_batch_size=4\n- actor_rollout_ref.rollout.name=vllm\n"
    body = {"input": yaml_text, "verl_version": "0.9.1", "nnodes": 1, "gpus_per_node": 3}
    result = PreflightResult.model_validate(httpx.post(f"{api}/v1/preflight", json=body, timeout=60).json())
    divisible = next(f for f in result.findings if f.check == "real-train-batch-not-divisible")
    assert {v.key: v.source for v in divisible.values}["trainer.n_gpus_per_node"] == "option"


@pytest.mark.parametrize(
    "body",
    [
        {"input": ""},
        {"input": "x", "nnodes": 0},
        {"input": "- a.b=1", "verl_version": "banana"},
        {"input": "name: x\n"},
        {"input": "echo hello"},
    ],
)
def test_http_bad_input_is_a_4xx_problem(api: str, body: dict[str, Any]) -> None:
    r = httpx.post(f"{api}/v1/preflight", json=body, timeout=60)
    assert 400 <= r.status_code < 500, r.text
    assert "Traceback" not in r.text


def test_openapi_names_the_route_and_fields(api: str) -> None:
    schema = httpx.get(f"{api}/openapi.json").json()
    assert "/v1/preflight" in schema["paths"]
    request = schema["components"]["schemas"]["PreflightRequest"]["properties"]
    assert set(request) == {"input", "verl_version", "nnodes", "gpus_per_node"}


def _cli() -> str:
    found = Path(sys.executable).parent / "verl-doctor"
    return str(found) if found.exists() else shutil.which("verl-doctor") or "verl-doctor"


async def _mcp_calls() -> dict[str, Any]:
    params = StdioServerParameters(command=_cli(), args=["mcp", "--no-semantic"], cwd=str(REPO), env=dict(os.environ))
    out: dict[str, Any] = {}
    with anyio.fail_after(120):
        async with Client(stdio_client(params)) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["ok"] = await client.call_tool("preflight", {"input": COMMAND, "verl_version": "0.9.1"})
            out["gpus"] = await client.call_tool(
                "preflight", {"input": "- data.train_batch_size=4\n", "verl_version": "0.4.0", "gpus_per_node": 3}
            )
            out["bad"] = await client.call_tool("preflight", {"input": "- a.b=1", "verl_version": "banana"})
    return out


@pytest.fixture(scope="module")
def mcp_calls() -> dict[str, Any]:
    return anyio.run(_mcp_calls)


def test_mcp_preflight_tool(mcp_calls: dict[str, Any]) -> None:
    tool = mcp_calls["tools"]["preflight"]
    assert set(tool.input_schema["properties"]) == {"input", "verl_version", "nnodes", "gpus_per_node"}
    assert set(tool.output_schema["properties"]) == set(PreflightResult.model_fields)
    result = PreflightResult.model_validate(mcp_calls["ok"].structured_content)
    assert result.findings[0].check == "real-train-batch-not-divisible"
    older = PreflightResult.model_validate(mcp_calls["gpus"].structured_content)
    assert older.release_checked == "0.4.0" and not older.starts
    assert mcp_calls["bad"].is_error

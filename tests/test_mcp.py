"""MCP over the SDK's real client: stdio (``verl-doctor mcp``) and streamable HTTP (``verl-doctor serve``, /mcp).

Each transport is started once per session; the stdio conversation runs once and the tests check what it
returned, so a failure still points at the tool that broke.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextResourceContents
from pydantic import TypeAdapter

from kb.ask import AskAnswer
from kb.entry_detail import EntryDetail
from kb.overrides import OverrideReport
from kb.result import Result
from kb.scan import ScanReport
from kb.search import SearchHit
from tests.server_harness import serve_process

REPO = Path(__file__).resolve().parent.parent
FAILURE_LOG = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
TOP_ENTRY = "ray-init-num-cpus-renamed"
TOKEN = "test-token-4f1c-0123"
TOOLS = {"diagnose", "ask", "scan", "search_faq", "get_entry", "check_overrides"}


def _cli() -> str:
    found = Path(sys.executable).parent / "verl-doctor"
    return str(found) if found.exists() else shutil.which("verl-doctor") or "verl-doctor"


@pytest.fixture(scope="session")
def scan_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scan root holding one job, plus a symlink inside it that points outside."""
    base = tmp_path_factory.mktemp("mcp")
    root = base / "jobs"
    job = root / "job1"
    job.mkdir(parents=True)
    shutil.copy(FAILURE_LOG, job / "output.log")
    outside = base / "elsewhere"
    outside.mkdir()
    (outside / "secret.log").write_text("not yours\n")
    (root / "escape").symlink_to(outside, target_is_directory=True)
    return root


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


# --------------------------------------------------------------------------- stdio


async def _stdio_conversation(root: Path, errlog: Any) -> dict[str, Any]:
    # The SDK passes only a few variables (HOME, PATH, ...) on by default: the server must see this run's
    # (PYTHONPATH, the isolated cache), or it would run another checkout's code on the user's cache.
    params = StdioServerParameters(
        command=_cli(), args=["mcp", "--no-semantic", "--scan-root", str(root)], cwd=str(REPO), env=dict(os.environ)
    )
    out: dict[str, Any] = {}
    with anyio.fail_after(120):
        async with Client(stdio_client(params, errlog=errlog)) as client:
            out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
            out["diagnose"] = await client.call_tool("diagnose", {"input": FAILURE_LOG.read_text(), "top": 3})
            out["get_entry"] = await client.call_tool("get_entry", {"entry_id": TOP_ENTRY, "verl_version": "0.9.1"})
            out["get_entry_missing"] = await client.call_tool("get_entry", {"entry_id": "ray-init-num-cpus-renamd"})
            out["search_faq"] = await client.call_tool("search_faq", {"query": "ray_init num_cpus", "top": 5})
            out["ask"] = await client.call_tool(
                "ask",
                {
                    "earlier": ["Hydra says: Could not override 'ray_init.num_cpus'. Key 'ray_init' is not in struct"],
                    "question": "and on verl 0.5?",
                },
            )
            out["ask_bad_version"] = await client.call_tool(
                "ask", {"question": "how do I set ray_init num_cpus?", "verl_version": "not-a-version"}
            )
            out["check_list"] = await client.call_tool(
                "check_overrides", {"overrides": ["ray_init.num_cpus=16"], "verl_version": "0.9.1"}
            )
            out["check_cmdline"] = await client.call_tool(
                "check_overrides",
                {
                    "input": "python3 -m verl.trainer.main_ppo ray_init.num_cpus=16 trainer.nnodes=1",
                    "verl_version": "0.9.1",
                },
            )
            out["resources"] = (await client.list_resources()).resources
            out["templates"] = (await client.list_resource_templates()).resource_templates
            out["read"] = await client.read_resource(f"verl-doctor://entries/{TOP_ENTRY}")
            out["read_index"] = await client.read_resource("verl-doctor://entries")
            try:
                await client.read_resource("verl-doctor://entries/no-such-entry")
                out["read_missing"] = None
            except MCPError as exc:
                out["read_missing"] = exc
            out["scan_outside"] = await client.call_tool("scan", {"path": "/etc"})
            out["scan_dotdot"] = await client.call_tool("scan", {"path": f"{root}/../elsewhere"})
            out["scan_symlink"] = await client.call_tool("scan", {"path": str(root / "escape" / "secret.log")})
            out["scan_inside"] = await client.call_tool("scan", {"path": "job1"})
    return out


@pytest.fixture(scope="session")
def stdio(scan_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    log = tmp_path_factory.mktemp("stdio") / "stderr.log"
    with log.open("w") as errlog:
        return anyio.run(_stdio_conversation, scan_root, errlog)


def test_stdio_lists_the_tools_with_output_schemas(stdio: dict[str, Any]) -> None:
    tools = stdio["tools"]
    assert set(tools) >= TOOLS
    assert set(tools["diagnose"].output_schema["properties"]) == set(Result.model_fields)
    assert set(tools["get_entry"].output_schema["properties"]) == set(EntryDetail.model_fields)
    assert set(tools["check_overrides"].output_schema["properties"]) == set(OverrideReport.model_fields)
    assert {"input", "top"} <= set(tools["diagnose"].input_schema["properties"])
    assert set(tools["scan"].output_schema["properties"]) == set(ScanReport.model_fields)


def test_stdio_diagnose_real_failure(stdio: dict[str, Any]) -> None:
    result: CallToolResult = stdio["diagnose"]
    assert not result.is_error, _text(result)
    parsed = Result.model_validate(result.structured_content)
    assert parsed.matches[0].id == TOP_ENTRY
    assert parsed.matches[0].verdict == "match"
    assert not parsed.abstained
    assert any("ray_init" in h for h in parsed.signals.hydra_errors)
    assert TOP_ENTRY in _text(result)  # the same result as JSON text, for text-only clients


def test_stdio_get_entry(stdio: dict[str, Any]) -> None:
    result: CallToolResult = stdio["get_entry"]
    assert not result.is_error, _text(result)
    entry = EntryDetail.model_validate(result.structured_content)
    assert entry.id == TOP_ENTRY
    assert any(o.line == "ray_kwargs.ray_init.num_cpus=16" or "ray_kwargs.ray_init" in o.line for o in entry.overrides)
    missing: CallToolResult = stdio["get_entry_missing"]
    assert missing.is_error
    assert f"did you mean {TOP_ENTRY}" in _text(missing)


def test_stdio_ask_follows_the_conversation(stdio: dict[str, Any]) -> None:
    result: CallToolResult = stdio["ask"]
    assert not result.is_error, _text(result)
    answer = AskAnswer.model_validate(result.structured_content)
    assert not answer.abstained and answer.followup
    assert [c.id for c in answer.citations] == [TOP_ENTRY]
    assert answer.facts.verl_version is not None and answer.facts.verl_version.startswith("0.5")
    assert stdio["ask_bad_version"].is_error and "verl_version" in _text(stdio["ask_bad_version"])


def test_stdio_search_faq(stdio: dict[str, Any]) -> None:
    result: CallToolResult = stdio["search_faq"]
    assert not result.is_error, _text(result)
    hits = TypeAdapter(list[SearchHit]).validate_python(result.structured_content["result"])
    assert TOP_ENTRY in [h.id for h in hits]


@pytest.mark.parametrize("key", ["check_list", "check_cmdline"])
def test_stdio_check_overrides(stdio: dict[str, Any], key: str) -> None:
    result: CallToolResult = stdio[key]
    assert not result.is_error, _text(result)
    report = OverrideReport.model_validate(result.structured_content)
    assert report.verl_version == "0.9.1"
    verdict = next(v for v in report.verdicts if v.key == "ray_init.num_cpus")
    assert verdict.fails
    assert verdict.suggestion == "ray_kwargs.ray_init.num_cpus=16"


def test_stdio_entries_are_resources(stdio: dict[str, Any]) -> None:
    uris = {str(r.uri) for r in stdio["resources"]}
    assert f"verl-doctor://entries/{TOP_ENTRY}" in uris
    assert "verl-doctor://entries" in uris
    assert [t.uri_template for t in stdio["templates"]] == ["verl-doctor://entries/{id}"]
    contents = stdio["read"].contents[0]
    assert isinstance(contents, TextResourceContents)
    assert contents.mime_type == "text/markdown"
    assert contents.text.startswith("---\n") and f"id: {TOP_ENTRY}" in contents.text
    assert "## Why it happens" in contents.text
    index = json.loads(stdio["read_index"].contents[0].text)
    assert TOP_ENTRY in {e["id"] for e in index}
    assert stdio["read_missing"] is not None and "no-such-entry" in str(stdio["read_missing"])


@pytest.mark.parametrize("key", ["scan_outside", "scan_dotdot", "scan_symlink"])
def test_stdio_scan_refuses_paths_outside_the_root(stdio: dict[str, Any], key: str) -> None:
    result: CallToolResult = stdio[key]
    assert result.is_error
    assert "refused" in _text(result)
    assert "not yours" not in _text(result)


def test_stdio_scan_inside_the_root(stdio: dict[str, Any]) -> None:
    result: CallToolResult = stdio["scan_inside"]
    assert not result.is_error, _text(result)
    report = ScanReport.model_validate(result.structured_content)
    assert TOP_ENTRY in report.model_dump_json()


def test_stdio_stdout_carries_only_protocol(scan_root: Path) -> None:
    """Raw JSON-RPC over the pipe: every stdout line is a JSON-RPC message, nothing else."""
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "diagnose", "arguments": {"input": "x"}},
        },
    ]
    proc = subprocess.Popen(
        [_cli(), "mcp", "--no-semantic", "--scan-root", str(scan_root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[str] = []
    try:
        for message in messages:
            proc.stdin.write((json.dumps(message) + "\n").encode())
            proc.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any('"id":2' in ln.replace(" ", "") for ln in lines):
            raw = proc.stdout.readline()
            if not raw:
                break
            lines.append(raw.decode())
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert lines, proc.stderr.read().decode() if proc.stderr else ""
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert proc.returncode == 0


# --------------------------------------------------------------------------- streamable HTTP


@pytest.fixture(scope="session")
def http_server(scan_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`verl-doctor serve` with a token, on a free loopback port; yields the base URL."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    env = {k: v for k, v in os.environ.items() if k != "VERL_DOCTOR_TOKEN"}
    with serve_process(["--no-semantic", "--scan-root", str(scan_root), "--token", TOKEN], log, env) as base:
        yield base


async def _http_calls(base: str, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport, mode=mode) as client:
                out["protocol"] = client.protocol_version
                out["tools"] = {t.name for t in (await client.list_tools()).tools}
                out["diagnose"] = await client.call_tool("diagnose", {"input": FAILURE_LOG.read_text()})
                out["scan_outside"] = await client.call_tool("scan", {"path": "../elsewhere/secret.log"})
                out["scan_inside"] = await client.call_tool("scan", {"path": "job1"})
                out["read"] = await client.read_resource(f"verl-doctor://entries/{TOP_ENTRY}")
    return out


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_http_tools_with_token(http_server: str, mode: str) -> None:
    """Both protocol eras: 'auto' negotiates the newest (per-request), 'legacy' holds a session."""
    out = anyio.run(_http_calls, http_server, mode)
    assert out["tools"] >= TOOLS
    diagnose: CallToolResult = out["diagnose"]
    assert not diagnose.is_error, _text(diagnose)
    assert Result.model_validate(diagnose.structured_content).matches[0].id == TOP_ENTRY
    assert out["scan_outside"].is_error and "refused" in _text(out["scan_outside"])
    assert not out["scan_inside"].is_error, _text(out["scan_inside"])
    assert f"id: {TOP_ENTRY}" in out["read"].contents[0].text


def test_http_refuses_without_token(http_server: str) -> None:
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    }
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        response = httpx.post(f"{http_server}/mcp", json=init, headers={**headers, **auth}, timeout=10)
        assert response.status_code == 401, auth
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["status"] == 401

    async def connect_without_token() -> None:
        with anyio.fail_after(30):
            async with Client(f"{http_server}/mcp") as client:
                await client.list_tools()

    with pytest.raises(BaseException) as caught:
        anyio.run(connect_without_token)
    assert any(isinstance(leaf, MCPError) for leaf in _leaves(caught.value)), repr(caught.value)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]

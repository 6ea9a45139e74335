"""/mcp on the HTTP server is mounted at once and its MCP server built after start-up (server/mcp_mount.py):
/healthz answers before the SDK is loaded, a request to /mcp that comes early waits for it, and a build that
fails leaves the API working and /mcp saying why."""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any

import httpx
import pytest

from kb.engine import Diagnoser
from server import mcp_mount
from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import REPO
from tests.server_harness import running

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
HEADERS = {"Accept": "application/json, text/event-stream"}


def test_the_app_imports_no_mcp_sdk() -> None:
    code = "import sys, server.app; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_an_early_mcp_request_waits_for_the_server(diagnoser: Diagnoser, monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real = mcp_mount._build

    def held(app: Any) -> Any:
        assert release.wait(120), "never released"
        return real(app)

    monkeypatch.setattr(mcp_mount, "_build", held)
    app = create_app(ServerSettings(semantic=False), diagnoser.without_retriever())
    with running(app) as base:
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200  # up while MCP is still being built
        assert not app.state.mcp.ready
        replies: list[httpx.Response] = []
        early = threading.Thread(
            target=lambda: replies.append(httpx.post(f"{base}/mcp", json=INIT, headers=HEADERS, timeout=120))
        )
        early.start()
        early.join(timeout=1.0)
        assert early.is_alive() and not replies  # waiting for the server, not refused
        release.set()
        early.join(timeout=120)
        assert replies and replies[0].status_code == 200, replies
        assert '"serverInfo"' in replies[0].text
        assert app.state.mcp.ready
        # Later requests go straight through.
        again = httpx.post(f"{base}/mcp", json=INIT, headers=HEADERS, timeout=30)
        assert again.status_code == 200 and '"serverInfo"' in again.text


def test_a_failed_build_leaves_the_api_working(diagnoser: Diagnoser, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(app: Any) -> Any:
        raise ImportError("No module named 'mcp'")

    monkeypatch.setattr(mcp_mount, "_build", broken)
    with running(create_app(ServerSettings(semantic=False), diagnoser.without_retriever())) as base:
        reply = httpx.post(f"{base}/mcp", json=INIT, headers=HEADERS, timeout=30)
        assert reply.status_code == 503
        assert "No module named 'mcp'" in reply.json()["detail"]
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200
        body = {"input": "Unable to register worker with raylet"}
        diagnosed = httpx.post(f"{base}/v1/diagnose", json=body, timeout=30)
        assert diagnosed.status_code == 200, diagnosed.text

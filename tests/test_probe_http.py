"""Attack and bad-input probes against a real uvicorn server on a loopback port (issue 13).

Each test reproduces one defect through HTTP; all of them are bounded in time and size.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import CORPUS, REPO
from tests.server_harness import running

FAILURE = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
SECRET = "TOP-SECRET-4b1d RuntimeError: CUDA error: an illegal memory access was encountered"
TOKEN = "probe-token-0123456789abcdef"


@pytest.fixture(scope="module")
def plain_diagnoser():  # type: ignore[no-untyped-def]
    """Rules and lexical search only: these probes need no embedding model."""
    from indexer import load_diagnoser

    return load_diagnoser(CORPUS, semantic=False, issues=False)


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scan root whose job holds a file link and a directory link that both lead outside it."""
    base = tmp_path_factory.mktemp("probe")
    outside = base / "outside"
    (outside / "logs").mkdir(parents=True)
    (outside / "secret.txt").write_text(f"{SECRET}\n" * 3)
    (outside / "logs" / "worker-1.err").write_text(f"Traceback (most recent call last):\n{SECRET}\n")
    root = base / "jobs"
    job = root / "job"
    job.mkdir(parents=True)
    shutil.copy(FAILURE, job / "output.log")
    (job / "main_ppo.log").symlink_to(outside / "secret.txt")
    (job / "ray").symlink_to(outside / "logs", target_is_directory=True)
    (job / "inside.log").symlink_to(job / "output.log")  # a link that stays inside is fine
    undecodable = root / "job-bytes"
    undecodable.mkdir()
    shutil.copy(FAILURE, os.fsdecode(bytes(undecodable) + b"/run\xff\xfe.log"))
    (undecodable / os.fsdecode(b"bin\xc3.log")).write_bytes(b"\x00" * 4096)  # skipped as binary
    return root


@pytest.fixture(scope="module")
def api(plain_diagnoser, roots: Path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    settings = ServerSettings(scan_roots=[roots], semantic=False, max_body_bytes=64 * 1024)
    with running(create_app(settings, plain_diagnoser)) as base:
        yield base


def test_scan_does_not_follow_links_out_of_the_root(api: str) -> None:
    r = httpx.post(f"{api}/v1/scan", json={"path": "job"}, timeout=120)
    assert r.status_code == 200, r.text
    assert "TOP-SECRET" not in r.text
    skipped = {Path(s["path"]).name: s["reason"] for s in r.json()["skipped"]}
    assert "outside the scan roots" in skipped.get("main_ppo.log", ""), skipped
    assert "outside the scan roots" in skipped.get("ray", ""), skipped
    assert "inside.log" not in skipped
    assert "ray-init-num-cpus-renamed" in r.text  # the job's own log is still read


@pytest.fixture(scope="module")
def api_with_token(plain_diagnoser) -> Iterator[str]:  # type: ignore[no-untyped-def]
    settings = ServerSettings(token=TOKEN, semantic=False, max_body_bytes=64 * 1024)
    with running(create_app(settings, plain_diagnoser)) as base:
        yield base


def _raw_request(base: str, head: str, body: bytes = b"", wait: float = 10) -> tuple[int, bytes]:
    """Send a request head (and the start of a body) on a raw socket; the status and what came back within ``wait``."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=wait) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except TimeoutError:
            pass
    status = int(answer.split(b" ", 2)[1]) if answer.startswith(b"HTTP/") else 0
    return status, answer


def test_body_is_refused_before_it_is_read_without_the_token(api_with_token: str) -> None:
    """A 190 MB 'upload' without credentials gets 401 at once: nothing of the body is waited for."""
    port = api_with_token.rsplit(":", 1)[1]
    for content_type in ("application/gzip", "multipart/form-data; boundary=x", "application/json"):
        head = (
            f"POST /v1/diagnose HTTP/1.1\nHost: 127.0.0.1:{port}\nContent-Type: {content_type}\n"
            f"Content-Length: {190 * 1024 * 1024}\nConnection: close\n"
        )
        status, _ = _raw_request(api_with_token, head, b"x" * 1024)
        assert status == 401, content_type


def test_upload_cap_is_only_for_the_upload_route(api_with_token: str) -> None:
    """With the token, a gzip or multipart body to /v1/diagnose gets the JSON cap (64 KB here), not 200 MB."""
    port = api_with_token.rsplit(":", 1)[1]
    for content_type in ("application/gzip", "multipart/form-data; boundary=x"):
        head = (
            f"POST /v1/diagnose HTTP/1.1\nHost: 127.0.0.1:{port}\nAuthorization: Bearer {TOKEN}\n"
            f"Content-Type: {content_type}\nContent-Length: {1024 * 1024}\nConnection: close\n"
        )
        status, _ = _raw_request(api_with_token, head, b"x" * 1024)
        assert status == 413, content_type
    small = httpx.post(
        f"{api_with_token}/v1/diagnose", json={"input": "x"}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert small.status_code == 200


@pytest.mark.parametrize("path", ["/v1/entries", "/", "/healthz", "/search?q=ray", "/openapi.json"])
def test_foreign_host_header_gets_421_on_every_route(api: str, path: str) -> None:
    r = httpx.get(f"{api}{path}", headers={"Host": "attacker.example"}, timeout=10)
    assert r.status_code == 421, r.text
    assert r.json()["status"] == 421
    port = api.rsplit(":", 1)[1]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"):
        assert httpx.get(f"{api}{path}", headers={"Host": host}, timeout=30).status_code == 200, host


def test_allowed_hosts_are_configurable(plain_diagnoser) -> None:  # type: ignore[no-untyped-def]
    settings = ServerSettings(semantic=False, allowed_hosts=["doctor.internal"])
    with running(create_app(settings, plain_diagnoser)) as base:
        assert httpx.get(f"{base}/v1/entries", headers={"Host": "doctor.internal:8000"}).status_code == 200
        assert httpx.get(f"{base}/v1/entries", headers={"Host": "other.internal"}).status_code == 421
        init = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"},
            },
        }
        headers = {"Accept": "application/json, text/event-stream", "Host": "doctor.internal"}
        assert httpx.post(f"{base}/mcp", json=init, headers=headers, timeout=10).status_code == 200


def test_scan_of_file_names_that_are_not_utf8(api: str) -> None:
    r = httpx.post(f"{api}/v1/scan", json={"path": "job-bytes"}, timeout=120)
    assert r.status_code == 200, r.text
    report = r.json()
    assert "run\\xff\\xfe.log" in {f["path"] for job in report["jobs"] for f in job["files"]}
    assert "ray-init-num-cpus-renamed" in r.text


def test_ask_takes_question_and_earlier_as_the_mcp_tool_does(api: str) -> None:
    earlier = "Hydra says: Could not override 'ray_init.num_cpus'. Key 'ray_init' is not in struct"
    r = httpx.post(f"{api}/v1/ask", json={"question": "and on verl 0.5?", "earlier": [earlier]}, timeout=120)
    assert r.status_code == 200, r.text
    assert [c["id"] for c in r.json()["citations"]][:1] == ["ray-init-num-cpus-renamed"]
    same = httpx.post(
        f"{api}/v1/ask",
        json={"messages": [{"role": "user", "content": earlier}, {"role": "user", "content": "and on verl 0.5?"}]},
        timeout=120,
    )
    assert same.json()["answer"] == r.json()["answer"]
    for bad in ({}, {"question": "x", "messages": [{"role": "user", "content": "y"}]}):
        assert httpx.post(f"{api}/v1/ask", json=bad).status_code == 422, bad


def test_diagnose_page_highlight_cannot_backtrack_forever(make_corpus, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The page marks each evidence line with its corpus regex: on the 500-character evidence text a pattern
    that matched the whole line may backtrack without end; the page still answers at once."""
    from tests.conftest import GOOD_FRONT, entry_text
    from tests.server_harness import serve_process

    front = GOOD_FRONT.replace("'Unable to register worker with raylet'", "'^(a|aa)+b'").format(
        id="ray-register", area="ray"
    )
    root = make_corpus({"ray/ray-register.md": entry_text(front)})
    # Its own process: a regex stuck in C holds the GIL, and the test's own timeouts must still fire.
    with serve_process(["--no-semantic", "--corpus", str(root)], tmp_path / "serve.log", dict(os.environ)) as base:
        r = httpx.post(f"{base}/diagnose", data={"input": "a" * 600 + "b"}, headers={"Accept": "text/html"}, timeout=20)
        assert r.status_code == 200 and "ray-register" in r.text

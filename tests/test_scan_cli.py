"""`verl-doctor scan` as users run it: real processes, real files, exit codes, formats, --follow, --ray."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import pytest

from tests.scan_jobdir import ACTOR_DIED, build_cascade_job, build_drift_job, noise_lines, real_verl_output, write

REPO = Path(__file__).resolve().parent.parent
CLI = (
    [sys.executable, "-m", "kb"]
    if not (REPO / ".venv" / "bin" / "verl-doctor").exists()
    else [str(REPO / ".venv" / "bin" / "verl-doctor")]
)


#: A private, local Ray instance for the test: no token auth (a ~/.ray/auth_token may exist), loopback only.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def run(*args: str, timeout: float = 300, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **RAY_ENV, **(env_extra or {})}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cli")
    return build_drift_job(base / "drift"), build_cascade_job(base / "cascade")


def test_exit_codes(tmp_path: Path, jobs: tuple[Path, Path]) -> None:
    write(tmp_path / "clean" / "driver.log", noise_lines(300))
    clean = run("scan", "--no-semantic", str(tmp_path / "clean"))
    assert clean.returncode == 0, clean.stderr
    assert "No problems found" in clean.stdout
    found = run("scan", "--no-semantic", str(jobs[1]))
    assert found.returncode == 1, found.stderr
    assert "FIRST FAILURE" in found.stdout and "caused:" in found.stdout
    missing = run("scan", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert run("scan").returncode == 2  # no directory given
    assert run("scan", "--markdown", "--follow", str(jobs[0])).returncode == 2


def test_json_report_reuses_the_result_schema(jobs: tuple[Path, Path]) -> None:
    out = run("scan", "--json", "--no-semantic", str(jobs[0]), str(jobs[1]))
    assert out.returncode == 1
    report = json.loads(out.stdout)
    assert {j["root"] for j in report["jobs"]} == {str(jobs[0]), str(jobs[1])}
    first = report["findings"][0]
    assert first["kind"] == "failure"
    diagnosis = first["incident"]["diagnosis"]
    assert {"kb_version", "abstained", "signals", "matches"} <= set(diagnosis)
    assert {"id", "confidence", "verdict", "overrides", "evidence"} <= set(diagnosis["matches"][0])
    ids = [f["incident"]["id"] for f in report["findings"] if f["incident"]]
    assert len(ids) == len(set(ids)) and all(i.startswith(("J1.", "J2.")) for i in ids)


def test_a_warm_scan_streams_while_the_corpus_loads_and_reports_the_same(
    tmp_path: Path, jobs: tuple[Path, Path]
) -> None:
    cache = {"VERL_DOCTOR_CACHE": str(tmp_path / "cache")}
    cold = run("scan", "--json", "--no-semantic", str(jobs[0]), env_extra=cache)
    assert cold.returncode == 1, cold.stderr
    assert len(list((tmp_path / "cache").glob("scan-spec-*.json"))) == 1
    assert len(list((tmp_path / "cache").glob("corpus-*.pickle"))) == 1
    warm = run("scan", "--json", "--no-semantic", str(jobs[0]), env_extra=cache)
    assert warm.returncode == 1, warm.stderr

    def without_timing(text: str) -> dict[str, Any]:
        report = json.loads(text)
        report["stats"].pop("seconds")
        return report

    assert without_timing(warm.stdout) == without_timing(cold.stdout)


def test_markdown_and_sarif(jobs: tuple[Path, Path]) -> None:
    md = run("scan", "--markdown", "--no-semantic", str(jobs[1]))
    assert md.returncode == 1
    assert md.stdout.startswith("## verl-doctor scan") and "### F1 failure" in md.stdout
    assert "```" in md.stdout and "Caused by" in md.stdout
    sarif = run("scan", "--sarif", "--no-semantic", str(jobs[0]))
    doc = json.loads(sarif.stdout)
    assert doc["version"] == "2.1.0"
    results = doc["runs"][0]["results"]
    assert any(r["ruleId"] == "rollout-training-logprob-mismatch" for r in results)
    oom = next(r for r in results if r["ruleId"] == "actor-update-cuda-oom-offload")
    assert oom["level"] == "error" and oom["properties"]["ranks"] == list(range(8))
    assert oom["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1


def test_cli_import_stays_light() -> None:
    code = (
        "import sys, kb.cli, kb.cli.scan; heavy = {'torch', 'sentence_transformers', 'ray', 'kb.scan.runner'}"
        " & set(sys.modules); print(sorted(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_help_lists_scan() -> None:
    out = run("--help")
    assert "scan" in out.stdout
    assert "--follow" in run("scan", "--help").stdout


# --------------------------------------------------------------------------- --follow


class _Lines:
    """Collects a process's stdout lines on a thread."""

    def __init__(self, stream: IO[str]) -> None:
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.append(line)

    def wait_for(self, predicate: Any, timeout: float = 90) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        seen = 0
        while time.monotonic() < deadline:
            while seen < len(self.lines):
                obj = json.loads(self.lines[seen])
                seen += 1
                if predicate(obj):
                    return obj
            time.sleep(0.05)
        raise AssertionError(f"no such finding within {timeout}s; got {self.lines}")


def _assert_points_into(path: Path, finding: dict[str, Any], words: str) -> None:
    """The finding's first location is a line of ``path`` as it is now, near the words it reports."""
    where = finding["incident"]["first"]
    text = path.read_text().splitlines()
    assert where["file"] == path.name and 1 <= where["line"] <= len(text), (where, len(text))
    near = "\n".join(text[max(0, where["line"] - 8) : where["line"] + 8]).lower()
    assert words in near, (where, near)


def test_follow_reports_new_findings_through_rotation_and_truncation(tmp_path: Path) -> None:
    log = write(tmp_path / "verl_demo.log", noise_lines(50))
    proc = subprocess.Popen(
        [*CLI, "scan", "--follow", "--json", "--no-semantic", "--interval", "0.1", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C must reach it even when the suite itself runs with SIGINT ignored (started with `&`).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout is not None
    lines = _Lines(proc.stdout)
    try:
        with log.open("a") as fh:  # the job writes its failure
            fh.write(noise_lines(20) + real_verl_output("hydra_ray_init_old_key"))
        first = lines.wait_for(lambda f: f["entry_id"] == "ray-init-num-cpus-renamed")
        assert first["incident"]["first"]["file"] == "verl_demo.log"
        log.rename(tmp_path / "verl_demo.log.1")  # rotation: a new file under the old name
        write(tmp_path / "verl_demo.log", noise_lines(10))
        with (tmp_path / "verl_demo.log").open("a") as fh:
            fh.write(real_verl_output("hydra_trainer_nnode_typo"))
        typo = lines.wait_for(lambda f: f["entry_id"] == "trainer-nnode-typo")
        _assert_points_into(tmp_path / "verl_demo.log", typo, "nnode")  # numbered in the new file
        with (tmp_path / "verl_demo.log").open("w") as fh:  # truncation in place
            fh.write("".join(f"(WorkerDict pid=99000) {ln}\n" for ln in ACTOR_DIED.splitlines()))
        died = lines.wait_for(lambda f: f["entry_id"] == "ray-actor-died-unexpectedly")
        _assert_points_into(tmp_path / "verl_demo.log", died, "actor died")
        reported = [json.loads(x)["entry_id"] for x in lines.lines]
        assert reported.count("ray-init-num-cpus-renamed") == 1  # never reported twice
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert rc == 1


# --------------------------------------------------------------------------- --ray


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory) -> Any:
    pytest.importorskip("ray")
    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():
        ray_bin = Path(shutil.which("ray") or "ray")
    port = _free_port()
    temp = Path(f"/tmp/vd-ray-{os.getpid()}")
    proc = subprocess.Popen(
        [
            str(ray_bin),
            "start",
            "--head",
            "--block",
            f"--port={port}",
            "--num-cpus=2",
            "--include-dashboard=false",
            "--node-ip-address=127.0.0.1",
            f"--temp-dir={temp}",
            "--disable-usage-stats",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **RAY_ENV},
    )
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            pytest.fail("ray start exited early")
        time.sleep(0.5)
    yield address
    os.killpg(proc.pid, signal.SIGTERM)  # the process group of the head this test started, nothing else
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.slow
def test_ray_mode_gives_the_same_report(jobs: tuple[Path, Path], ray_head: str) -> None:
    local = run("scan", "--json", "--no-semantic", str(jobs[0]), str(jobs[1]))
    remote = run("scan", "--json", "--no-semantic", f"--ray={ray_head}", str(jobs[0]), str(jobs[1]), timeout=600)
    assert remote.returncode == 1, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert b["stats"]["executor"] == "ray" and b["stats"]["workers"] == 2
    assert a["findings"] == b["findings"]
    assert a["skipped"] == b["skipped"]


@pytest.mark.slow
def test_ray_mode_without_a_cluster_is_a_usage_error(jobs: tuple[Path, Path]) -> None:
    pytest.importorskip("ray")
    out = run("scan", "--no-semantic", f"--ray=127.0.0.1:{_free_port()}", str(jobs[0]), timeout=600)
    assert out.returncode == 2 and "Ray cluster" in out.stderr

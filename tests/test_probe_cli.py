"""Attack and bad-input probes against the command line, run as a real process (issue 13)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GOOD_FRONT, REPO, entry_text
from tests.server_harness import free_port

FAILURE = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
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


REDOS_FRONT = GOOD_FRONT.replace(
    "    check: {{env: SLURM_JOB_ID, present: true}}", "    check: {{text: '^(a+)+$'}}"
).format(id="ray-register", area="ray")


def test_corpus_condition_regex_cannot_hang(make_corpus: Callable[..., Path], tmp_path: Path) -> None:
    """A condition regex that backtracks exponentially: validate refuses it, and match/scan stay bounded."""
    root = make_corpus({"ray/ray-register.md": entry_text(REDOS_FRONT)})
    check = verl_doctor("corpus", "validate", "--corpus", str(root), timeout=120)
    assert check.returncode == 1, check.stdout.decode() + check.stderr.decode()
    assert "(a+)+" in (check.stdout + check.stderr).decode()
    log = tmp_path / "run.log"
    log.write_text("Unable to register worker with raylet\n" + ("a" * 60 + "!\n") * 50)
    for args in (["match", "--no-semantic", str(log)], ["scan", str(log)]):
        proc = verl_doctor(*args, "--corpus", str(root), timeout=60)  # stdlib re here never returns
        assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
        assert "ray-register" in proc.stdout.decode()


OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # writes "echo pwned" to the clipboard
CLEAR = "\x1b[2J\x1b[H"


def test_match_and_scan_print_no_control_sequences(tmp_path: Path) -> None:
    """Input lines (match) and file names (scan) reach the terminal without their escape sequences."""
    lines = FAILURE.read_text().splitlines()
    poisoned = [f"{OSC52}{CLEAR}{line}\x9b31m\r" if "ray_init" in line else line for line in lines]
    log = tmp_path / "poisoned.log"
    log.write_text("\n".join(poisoned) + "\n")
    job = tmp_path / "job"
    job.mkdir()
    (job / f"run{CLEAR}{OSC52}.log").write_text("\n".join(poisoned) + "\n")
    (job / "bad\x1b]0;title\x07.log").write_bytes(b"\x00\x01\x02" * 4000)  # binary: listed as skipped
    for args in (["match", "--no-semantic", str(log)], ["scan", str(job)], ["scan", "--markdown", str(job)]):
        proc = verl_doctor(*args)
        assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
        out = proc.stdout + proc.stderr
        assert b"ray-init-num-cpus-renamed" in proc.stdout, args
        for bad in (b"\x1b", b"\x07", b"\xc2\x9b", b"\r"):
            assert bad not in out, (args, bad)
    overrides = verl_doctor("check-overrides", "--", f"ray_init.num_cpus=16{OSC52}", "[/]x=1")
    assert b"\x1b" not in overrides.stdout + overrides.stderr
    assert overrides.returncode == 1, overrides.stderr.decode()[-2000:]


@pytest.mark.parametrize("device", ["/dev/zero", "/proc/self/pagemap"])
def test_match_on_an_endless_file_ends(device: str) -> None:
    if not os.access(device, os.R_OK):
        pytest.skip(f"{device} is not readable here")
    proc = verl_doctor("match", "--no-semantic", device, timeout=60)  # it used to read forever
    assert proc.returncode == 2, proc.stderr.decode()[-2000:]
    assert "binary" in proc.stderr.decode()


def test_match_on_an_endless_pipe_stops_and_says_so() -> None:
    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    yes = subprocess.Popen(["yes", "Unable to register worker with raylet"], stdout=subprocess.PIPE)
    try:
        proc = subprocess.run(
            [*cmd, "match", "--json", "--no-semantic", "-"], stdin=yes.stdout, capture_output=True, timeout=120, env=ENV
        )
    finally:
        yes.kill()
        yes.wait()
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    notes = json.loads(proc.stdout)["notes"]
    assert any("stopped reading after 256 MB" in n for n in notes), notes


def test_scan_json_of_file_names_that_are_not_utf8(tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    (job / os.fsdecode(b"run\xff\xfe.log")).write_bytes(FAILURE.read_bytes())
    (job / os.fsdecode(b"bin\xc3.log")).write_bytes(b"\x00" * 4096)
    for fmt in ("--json", "--sarif", "--markdown", "--no-semantic"):
        proc = verl_doctor("scan", fmt, str(job))
        assert proc.returncode == 1, (fmt, proc.stderr.decode()[-2000:])
        assert b"ray-init-num-cpus-renamed" in proc.stdout
    report = json.loads(verl_doctor("scan", "--json", str(job)).stdout)
    assert "run\\xff\\xfe.log" in {f["path"] for f in report["jobs"][0]["files"]}


def test_follow_sees_a_file_truncated_and_regrown_within_one_poll(tmp_path: Path) -> None:
    """The job rewrites its log (truncation, then more than the old size) between two polls of --follow."""
    from tests.scan_jobdir import ACTOR_DIED, noise_lines, real_verl_output, write
    from tests.test_scan_cli import CLI, _Lines

    log = write(tmp_path / "verl_demo.log", noise_lines(50) + real_verl_output("hydra_ray_init_old_key"))
    proc = subprocess.Popen(
        [*CLI, "scan", "--follow", "--json", "--no-semantic", "--interval", "1.5", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    lines = _Lines(proc.stdout)
    try:
        lines.wait_for(lambda f: f["entry_id"] == "ray-init-num-cpus-renamed")
        died = "".join(f"(WorkerDict pid=99000) {ln}\n" for ln in ACTOR_DIED.splitlines())
        rewritten = died + noise_lines(400, seed=3)
        assert len(rewritten) > log.stat().st_size
        with log.open("w") as fh:  # truncate and write past the old size in one go: no poll sees it short
            fh.write(rewritten)
        lines.wait_for(lambda f: f["entry_id"] == "ray-actor-died-unexpectedly", timeout=30)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_match_jsonl_errors_carry_the_request_id_and_long_lines_are_not_held() -> None:
    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    proc = subprocess.Popen(
        [*cmd, "match", "--jsonl", "--no-semantic"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(json.dumps({"id": "empty-one", "input": ""}).encode() + b"\n")
        proc.stdin.write(b'{"id": "huge", "input": "')  # a 300 MB line
        chunk = b"x" * (1 << 20)
        for _ in range(300):
            proc.stdin.write(chunk)
        proc.stdin.write(b'"}\n')
        proc.stdin.write(json.dumps({"id": "last", "input": "Unable to register worker with raylet"}).encode() + b"\n")
        proc.stdin.flush()
        rows = [json.loads(proc.stdout.readline()) for _ in range(3)]
        peak = _peak_rss_mb(proc.pid)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert rows[0]["id"] == "empty-one" and "empty" in rows[0]["error"]
    assert rows[1]["line"] == 2 and "longer than" in rows[1]["error"]
    assert rows[2]["id"] == "last" and rows[2]["matches"][0]["id"] == "ray-worker-register-raylet"
    assert peak < 250, f"peak RSS {peak:.0f} MB: the 300 MB line was held"


def _warning_then_traceback(frames: int) -> tuple[str, int]:
    """A main_ppo.log whose error block opens with a UserWarning and ends, far below, with the exception."""
    lines = [
        "[2026-11-30 10:00:00] starting",
        "/usr/lib/python3/site-packages/torch/utils/_pytree.py:185: UserWarning: _register_pytree_node is deprecated",
        "  warnings.warn(",
        "Traceback (most recent call last):",
    ]
    for i in range(frames):
        lines += [f'  File "/verl/trainer/mod{i}.py", line {i + 10}, in fn{i}', f"    call{i}()"]
    lines.append("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has 79.15 GiB")
    lines += ["after 1", "after 2"]
    return "\n".join(lines) + "\n", len(lines) - 2


@pytest.mark.parametrize("frames", [13, 120])
def test_scan_locations_point_at_the_exception_line(tmp_path: Path, frames: int) -> None:
    text, exc_line = _warning_then_traceback(frames)
    (tmp_path / "main_ppo.log").write_text(text)
    sarif = json.loads(verl_doctor("scan", "--sarif", "--no-semantic", str(tmp_path)).stdout)
    starts = [
        loc["physicalLocation"]["region"]["startLine"] for r in sarif["runs"][0]["results"] for loc in r["locations"]
    ]
    assert exc_line in starts, (starts, exc_line)
    report = json.loads(verl_doctor("scan", "--json", "--no-semantic", str(tmp_path)).stdout)
    incident = next(f["incident"] for f in report["findings"] if f["incident"] and "OutOfMemory" in f["title"])
    assert incident["first"]["line"] == exc_line
    shown = incident["excerpt"][exc_line - incident["excerpt_start"]]  # the excerpt is numbered as the file
    assert shown.startswith("torch.OutOfMemoryError"), shown


def test_scan_of_a_directory_without_logs_says_so(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    only_ckpt = tmp_path / "ckpt"
    (only_ckpt / "global_step_10").mkdir(parents=True)
    (only_ckpt / "global_step_10" / "model.pt").write_bytes(b"\x00" * 10)
    for target in (empty, only_ckpt):
        for fmt in ([], ["--json"], ["--sarif"]):
            proc = verl_doctor("scan", "--no-semantic", *fmt, str(target))
            assert proc.returncode == 2, (target, fmt, proc.stdout.decode()[-500:])
            assert "no logs found" in proc.stderr.decode()
            assert b"No problems found" not in proc.stdout


LAUNCH_SH = """\\
#!/bin/bash
set -x
export VLLM_ATTENTION_BACKEND=XFORMERS  # the shell's, not Hydra's
MODEL=Qwen/Qwen2.5-0.5B
cd /work && python3 -m verl.trainer.main_ppo \\\\
    data.train_files=$HOME/data/gsm8k/train.parquet \\\\
    actor_rollout_ref.model.path=$MODEL \\\\
    trainer.nnodes=$NNODES \\\\
    trainer.logger=['console','wandb'] \\\\
    trainer.project_name="${PROJECT:-verl} run" \\\\
    trainer.val_before_train \\\\
    trainer.n_gpus_per_node=8 $@  # trailing comment
"""


def test_check_overrides_reads_a_launch_script_as_a_shell_does(tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(LAUNCH_SH)
    proc = verl_doctor("check-overrides", "--json", "--file", str(script))
    verdicts = {v["text"]: v for v in json.loads(proc.stdout)["verdicts"]}
    assert list(verdicts) == [
        "data.train_files=$HOME/data/gsm8k/train.parquet",
        "actor_rollout_ref.model.path=$MODEL",
        "trainer.nnodes=$NNODES",
        "trainer.logger=[console,wandb]",
        "trainer.project_name=${PROJECT:-verl} run",
        "trainer.val_before_train",
        "trainer.n_gpus_per_node=8",
    ]
    assert not verdicts["trainer.nnodes=$NNODES"]["fails"]  # $VAR is a placeholder, not a bad integer
    bare = verdicts["trainer.val_before_train"]
    assert bare["fails"] and bare["status"] == "malformed" and "no value" in bare["message"]
    assert proc.returncode == 1
    alone = verl_doctor("check-overrides", "--json", "--", "trainer.nnodes")
    assert alone.returncode == 1 and json.loads(alone.stdout)["verdicts"][0]["status"] == "malformed"


NOISE = ("Loading weights", "DEBUG", "it/s]")


def test_semantic_runs_keep_library_noise_off_stderr(tmp_path: Path) -> None:
    """match (semantic), serve and mcp load the model and the lexical index without printing bars or DEBUG."""
    import anyio
    import httpx
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from tests.server_harness import serve_process

    proc = verl_doctor("match", "-", stdin=b"how do I set a proxy only for wandb?\n", timeout=300)
    assert proc.returncode in (0, 1), proc.stderr.decode()[-2000:]
    assert not any(n in proc.stderr.decode() for n in NOISE), proc.stderr.decode()[-2000:]

    log = tmp_path / "serve.log"
    with serve_process([], log, dict(ENV), wait=300) as base:
        assert httpx.get(f"{base}/v1/search", params={"query": "wandb proxy"}, timeout=120).status_code == 200
    served = log.read_text()
    assert not any(n in served for n in NOISE), served[-2000:]

    async def ask_mcp(errlog: Any) -> None:
        exe = Path(sys.executable).parent / "verl-doctor"
        params = StdioServerParameters(command=str(exe), args=["mcp"], cwd=str(REPO), env=dict(ENV))
        with anyio.fail_after(300):
            async with Client(stdio_client(params, errlog=errlog)) as client:
                result = await client.call_tool("search_faq", {"query": "wandb proxy", "top": 3})
                assert not result.is_error

    errors = tmp_path / "mcp.err"
    with errors.open("w") as errlog:
        anyio.run(ask_mcp, errlog)
    said = errors.read_text()
    assert not any(n in said for n in NOISE), said[-2000:]


def test_scan_fix_without_a_verl_version_says_which_line_is_for_which_releases(tmp_path: Path) -> None:
    (tmp_path / "output.log").write_text(FAILURE.read_text())  # no verl version anywhere in this job
    text = verl_doctor("scan", "--no-semantic", str(tmp_path)).stdout.decode()
    assert "verl >=0.6: ray_kwargs.ray_init.num_cpus=16" in text
    assert "verl >=0.4,<0.6: ray_init.num_cpus=16" in text
    together = [
        ln for ln in text.splitlines() if "ray_kwargs.ray_init.num_cpus=16" in ln and " ray_init.num_cpus" in ln
    ]
    assert not together, together  # the ranges are never run together as one fix
    markdown = verl_doctor("scan", "--markdown", "--no-semantic", str(tmp_path)).stdout.decode()
    assert "Fix (verl >=0.6):" in markdown and "Fix (verl >=0.4,<0.6):" in markdown
    (tmp_path / "output.log").write_text("verl version: 0.5.0\n" + FAILURE.read_text())
    pinned = verl_doctor("scan", "--no-semantic", str(tmp_path)).stdout.decode()
    assert "fix (verl 0.5.0): ray_init.num_cpus=16" in pinned, pinned


def test_mcp_help_lists_every_tool() -> None:
    from tests.test_mcp import TOOLS

    text = verl_doctor("mcp", "--help").stdout.decode()
    assert all(tool in text for tool in TOOLS), text


def test_corpus_show_suggests_ids_and_corpus_search_finds_entries() -> None:
    for partial in ("ray-init", "num_cpus", "ray-init-num-cpus-renamd"):
        proc = verl_doctor("corpus", "show", partial)
        assert proc.returncode == 1
        assert "did you mean ray-init-num-cpus-renamed" in proc.stderr.decode()
    found = verl_doctor("corpus", "search", "--no-semantic", "--json", "ray_init num_cpus", "-k", "3")
    assert found.returncode == 0, found.stderr.decode()[-2000:]
    assert "ray-init-num-cpus-renamed" in [h["id"] for h in json.loads(found.stdout)]
    nothing = verl_doctor("corpus", "search", "--no-semantic", "qqqzzzxxx")
    assert nothing.returncode == 1 and b"No entry matches" in nothing.stdout


def _in_a_terminal(args: list[str], columns: int = 60, timeout: float = 120) -> str:
    """Run ``verl-doctor ARGS`` with a pseudo-terminal of ``columns`` as stdout; what it printed, ANSI removed."""
    import fcntl
    import pty
    import re
    import select
    import struct
    import termios

    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {**ENV, "COLUMNS": str(columns), "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([*cmd, *args], stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, cwd=REPO, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
    finally:
        os.close(master)
        proc.wait(timeout=30)
    return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07", "", b"".join(chunks).decode("utf-8", "replace"))


def test_ask_in_a_terminal_wraps_bullets_instead_of_cutting_them() -> None:
    question = "how do I pass a proxy to wandb only?"
    answer = json.loads(verl_doctor("ask", "--no-llm", "--no-semantic", "--json", question).stdout)["answer"]
    bullets = [ln[2:].strip() for ln in answer.splitlines() if ln.startswith("- ") and len(ln) > 70]
    assert bullets, answer
    shown = " ".join(_in_a_terminal(["ask", "--no-llm", "--no-semantic", question]).split())
    for bullet in bullets:
        tail = " ".join(bullet.replace("`", "").replace("**", "").split()[-3:])
        assert tail in shown, (tail, shown[-1500:])


def test_interactive_ask_wraps_the_answer_and_a_follow_up_says_what_changed() -> None:
    """The chat (stdin and stdout a 60-column terminal): bullets wrapped, never cut, and the follow-up
    answer names what the new fact changes instead of printing the entry again."""
    import fcntl
    import pty
    import re
    import select
    import struct
    import termios

    exe = Path(sys.executable).parent / "verl-doctor"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-c", "from kb.cli import main; main()"]
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 60, 0, 0))
    env = {**ENV, "COLUMNS": "60", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen(
        [*cmd, "ask", "--no-llm", "--no-semantic"], stdin=slave, stdout=slave, stderr=slave, cwd=REPO, env=env
    )
    os.close(slave)
    chunks: list[bytes] = []

    def answer_to(line: bytes | None, timeout: float = 120) -> str:
        """Type ``line`` (None: only wait); what was printed until the next prompt, ANSI removed."""
        chunks.clear()
        if line is not None:
            os.write(master, line + b"\n")
        deadline = time.monotonic() + timeout
        while not b"".join(chunks).rstrip(b" ").endswith(b"\n>") and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    chunks.append(os.read(master, 65536))
                except OSError:
                    break
            elif proc.poll() is not None:
                break
        raw = b"".join(chunks).decode("utf-8", "replace")
        return re.sub(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07", "", raw)

    try:
        answer_to(None)  # the banner and the first prompt
        first = answer_to(b"Could not override 'ray_init.num_cpus'")
        second = answer_to(b"I'm on verl 0.5")
        os.write(master, b"\n")
        proc.wait(timeout=60)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    flat = " ".join(first.split())
    # The first answer's long bullets end whole (the console's soft wrap used to cut them at 60 columns).
    assert "so Ray still sizes itself from the whole node." in flat, flat[-2000:]
    assert "not ray_kwargs.ray_init.timeline_json_file." in flat
    assert "Why it happens." in first and "Why it happens." not in second
    follow = " ".join(second.split())
    assert "What changes with what you added:" in follow and "verl version: 0.5 (not given before)" in follow
    assert "Fix for verl 0.5:" in follow and "ray_init.num_cpus=16" in follow

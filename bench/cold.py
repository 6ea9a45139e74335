"""Cold starts of every surface, each a whole process, against `python -c "import sentence_transformers"`
measured in the same run (what any query paid before queries ran the ONNX model).

1. `verl-doctor match` on a traceback the rules decide
2. `verl-doctor match` on a question (semantic search)                      target <= 0.1x
3. `verl-doctor ask` on a question                                          target <= 0.15x
4. `verl-doctor serve` from start to a 200 from /healthz                    target <= 1.5 s
   (and to /healthz saying "model": "ready": the model loads in a thread once the server is up)
5. `verl-doctor mcp` (stdio) from start to the answer of a first `diagnose` call
6. `verl-doctor tui` in tmux from start to "semantic ready" in its title bar
7. `verl-doctor preflight` of a launch command (a real verl run's)          target <= 0.3 s

Usage: .venv/bin/python bench/cold.py [--repeat N] [--only NAME,...]
The cache (index, ONNX model, corpus) is warmed once first: "cold" is a new process, not a new machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DOCTOR = str(BIN / "verl-doctor")
QUESTION = "how do I stop ray workers failing to register with the raylet on slurm?"
TRACEBACK = REPO / "tests" / "fixtures" / "entries" / "ray-worker-register-raylet" / "positive-slurm-driver.log"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
#: the command of a real verl 0.9.1 run that verl refused at validation (train batch not divisible by the GPUs)
LAUNCH = (REPO / "tests" / "eval" / "verl_runs" / "batch_not_divisible_by_gpus" / "command.txt").read_text()


def _run(cmd: list[str], stdin: str | None = None) -> None:
    subprocess.run(cmd, env=ENV, input=stdin, text=True, capture_output=True, check=False, timeout=300)


#: CPU seconds of the server process when it first answered as wanted (its children's are in RUSAGE_CHILDREN).
_SERVER_CPU: list[float] = []


def _proc_cpu(pid: int) -> float:
    """User + system CPU seconds a live process has used so far."""
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve_until(ready: Callable[[dict[str, object]], bool]) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [DOCTOR, "serve", "--port", str(port)], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as r:
                    if r.status == 200 and ready(json.loads(r.read())):
                        _SERVER_CPU.append(_proc_cpu(proc.pid))
                        return
            except OSError:
                pass
            time.sleep(0.01)
        raise RuntimeError("serve never answered /healthz as wanted")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def serve_to_healthz() -> None:
    _serve_until(lambda health: True)


def serve_to_model_ready() -> None:
    """The model and index load in a thread after the server is up: when /healthz says model "ready"."""
    _serve_until(lambda health: health.get("model") == "ready")


def mcp_first_diagnose() -> None:
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "diagnose", "arguments": {"input": QUESTION}},
        },
    ]
    proc = subprocess.Popen(
        [DOCTOR, "mcp"], env=ENV, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        for line in proc.stdout:
            reply = json.loads(line)
            if reply.get("id") == 2:
                if "error" in reply or reply.get("result", {}).get("isError"):
                    raise RuntimeError(f"diagnose failed: {line[:300]}")
                return
        raise RuntimeError("mcp closed before answering")
    finally:
        proc.kill()
        proc.wait(timeout=30)


def tui_to_model_ready() -> None:
    session = f"bench-{os.getpid()}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "30", f"HF_HUB_OFFLINE=1 {DOCTOR} tui"],
        check=True,
        env=ENV,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            screen = subprocess.run(
                ["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True, check=False
            ).stdout
            if "semantic ready" in screen:
                return
            time.sleep(0.02)
        raise RuntimeError("the TUI never said 'semantic ready'")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False, capture_output=True)


BENCHES: dict[str, tuple[str, Callable[[], None], str]] = {
    "match-rules": (
        "cold `match`, a traceback the rules decide",
        lambda: _run([DOCTOR, "match", "--json", str(TRACEBACK)]),
        "",
    ),
    "match-question": ("cold `match`, a question", lambda: _run([DOCTOR, "match", "--json", "-"], QUESTION), "<= 0.1x"),
    "ask": ("cold `ask`, a question", lambda: _run([DOCTOR, "ask", "--json", QUESTION]), "<= 0.15x"),
    "serve": ("`serve` to a 200 from /healthz", serve_to_healthz, "<= 1.5 s"),
    "serve-model": ("`serve` to /healthz saying model ready", serve_to_model_ready, ""),
    "mcp": ("`mcp` (stdio) to its first diagnose", mcp_first_diagnose, ""),
    "tui": ("`tui` to 'semantic ready'", tui_to_model_ready, ""),
    "preflight": (
        "cold `preflight` of a launch command",
        lambda: _run(
            [DOCTOR, "preflight", "--verl-version", "0.9.1", "--", *shlex.split(LAUNCH.split("timeout 300 ", 1)[1])]
        ),
        "<= 0.3 s",
    ),
}


def median_time(fn: Callable[[], None], repeat: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds (user + system) of the processes ``fn`` runs. The machine
    is shared: the wall time says what a user waits, the CPU time what the command costs whatever the load.
    A server's CPU is read when it first answers (it is then stopped, so what it does after is not counted)."""
    walls, cpus = [], []
    for _ in range(repeat):
        _SERVER_CPU.clear()
        cpu0 = _children_cpu()
        start = time.perf_counter()
        fn()
        walls.append(time.perf_counter() - start)
        cpus.append(_SERVER_CPU[0] if _SERVER_CPU else _children_cpu() - cpu0)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated: " + ",".join(BENCHES))
    args = parser.parse_args()
    chosen = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in BENCHES]
    if unknown:
        sys.exit(f"unknown benchmark(s): {', '.join(unknown)}")
    if "tui" in chosen and shutil.which("tmux") is None:
        sys.exit("the tui benchmark needs tmux")
    ENV.setdefault("VERL_DOCTOR_CACHE", tempfile.mkdtemp(prefix="verl-doctor-cold-"))
    _run([DOCTOR, "index"])  # builds the index and exports the ONNX model once, outside the timings
    # The bytecode an installed package has (pip compiles it): under PYTHONDONTWRITEBYTECODE (set on this
    # machine) no warm-up run would write it, and every "cold" run would compile the sources again.
    _run([sys.executable, "-m", "compileall", "-q", *(str(REPO / d) for d in ("kb", "indexer", "server", "tui"))])
    baseline_cmd = [sys.executable, "-c", "import sentence_transformers"]
    _run(baseline_cmd)
    load_before = f"{os.getloadavg()[0]:.1f}"
    results: dict[str, tuple[float, float]] = {}
    for name in chosen:
        label, fn, _ = BENCHES[name]
        fn()  # one unmeasured run: page cache and compiled bytecode, as a user's second command has
        results[name] = median_time(fn, args.repeat)
    baseline, baseline_cpu = median_time(lambda: _run(baseline_cmd), args.repeat)
    print(f"load average before / after: {load_before} / {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    print(f"{'benchmark':42} {'median':>9} {'ratio':>8} {'CPU':>8} {'ratio':>8}  target")
    print(f"{'`import sentence_transformers` (baseline)':42} {baseline:8.2f}s {1:7.2f}x {baseline_cpu:7.2f}s {1:7.2f}x")
    for name in chosen:
        label, _, target = BENCHES[name]
        wall, cpu = results[name]
        # The TUI runs under tmux's server, not as a child of this process: its CPU is not seen here.
        cpu_text = f"{'n/a':>8} {'':>8}" if name == "tui" else f"{cpu:7.2f}s {cpu / baseline_cpu:7.2f}x"
        print(f"{label:42} {wall:8.2f}s {wall / baseline:7.2f}x {cpu_text}  {target}")


if __name__ == "__main__":
    main()

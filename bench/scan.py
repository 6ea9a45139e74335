"""Benchmark `verl-doctor scan` against ripgrep running the corpus patterns over the same job dirs.

    .venv/bin/python bench/scan.py          # 6,000 step lines, 100 MB, 400 MB, 1 GB, 4 GB, 3,000 small files
    .venv/bin/python bench/scan.py --sizes 100M --runs 3

For each size it writes a seeded verl-like run directory (two jobs: a metric drift plus the same
OOM traceback on 8 ranks, and a first failure with its NCCL-watchdog/actor-died cascade; driver logs
with step lines, Ray worker logs, Hydra overrides, the file logger's JSONL, a rotated .gz log), or
for ``NNNfiles`` one job with NNN small Ray logs (one holding an OOM traceback), or for ``NNNsteps`` one
job whose driver log is NNN verl 0.9 step lines of ~170 metrics (a drifting log-prob gap in them), then
times, in the same run and alternating, `verl-doctor scan --json --no-semantic JOB1 JOB2` and
`rg -z -c -f <(verl-doctor corpus patterns) DIR`, after one warm-up of each (page cache warm for
both). Peak memory is sampled from /proc over the whole process tree (the scan's worker processes
included): the sum of RSS at the worst moment, and the largest single process.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.scan_jobdir import ACTOR_DIED, OOM_TRACEBACK, OVERRIDES, VERSIONS, WATCHDOG  # noqa: E402

BIN = Path(sys.executable).parent  # the venv this runs in (a worktree may have none of its own)


def _noise_pool(rng: random.Random) -> list[str]:
    pool = []
    for i in range(4000):
        k = rng.randrange(9)
        pid, mm, ss = rng.randrange(80000, 99999), rng.randrange(60), rng.randrange(60)
        if k == 0:
            pool.append(
                f"(WorkerDict pid={pid}, ip=10.0.0.{rng.randrange(255)}) INFO 12-06 18:{mm:02d}:{ss:02d} "
                f"[metrics.py:455] Avg prompt throughput: {rng.uniform(100, 9000):.1f} tokens/s, Avg "
                f"generation throughput: {rng.uniform(100, 9000):.1f} tokens/s, Running: {rng.randrange(256)}"
                f" reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: {rng.uniform(0, 99):.1f}%, "
                "CPU KV cache usage: 0.0%.\n"
            )
        elif k == 1:
            pool.append(
                f"(TaskRunner pid={pid}) Training Progress:  {i % 100}%|#####     | {i % 110}/110 "
                f"[{mm:02d}:{ss:02d}<12:00, 12.0s/it]\n"
            )
        elif k == 2:
            pool.append(
                f"(WorkerDict pid={pid}) Processed prompts: 100%|##########| 512/512 [00:{ss:02d}<00:00, "
                f"{rng.uniform(1, 40):.1f}it/s, est. speed input: {rng.uniform(1000, 9000):.2f} toks/s, "
                f"output: {rng.uniform(1000, 9000):.2f} toks/s]\n"
            )
        elif k == 3:
            words = " ".join(
                rng.choice(
                    [
                        "the",
                        "answer",
                        "is",
                        "so",
                        "we",
                        "compute",
                        "x",
                        "=",
                        "12",
                        "then",
                        "total",
                        "apples",
                        "Step",
                        "first",
                        "add",
                        "multiply",
                    ]
                )
                for _ in range(rng.randrange(40, 300))
            )
            pool.append(
                f"(TaskRunner pid={pid}) [prompt] <|im_start|>user\\nSolve the problem. {words[:200]} "
                f"[response] {words} [ground_truth] {rng.randrange(1000)} [score] {rng.choice([0.0, 1.0])}\n"
            )
        elif k == 4:
            pool.append(
                f"(WorkerDict pid={pid}) /usr/local/lib/python3.10/dist-packages/torch/utils/checkpoint.py:"
                "87: UserWarning: None of the inputs have requires_grad=True. Gradients will be None\n"
            )
        elif k == 5:
            pool.append(
                f"(WorkerDict pid={pid}) INFO 12-06 18:{mm:02d}:{ss:02d} [block_manager.py:{i}] "
                f"Allocated {rng.randrange(1, 9000)} blocks for request {rng.getrandbits(64):016x}\n"
            )
        elif k == 6:
            pool.append(
                f"(TaskRunner pid={pid}) local_global_step_folder: checkpoints/verl_examples/gsm8k/global_step_{i}\n"
            )
        elif k == 7:
            pool.append(
                f"(WorkerDict pid={pid}) [2025-12-06 18:{mm:02d}:{ss:02d},{rng.randrange(999):03d}] "
                f"[INFO] fsdp_workers.py:{rng.randrange(2000)}: Actor use_remove_padding=True, "
                f"memory allocated {rng.uniform(10, 70):.2f} GB, reserved {rng.uniform(10, 79):.2f} GB\n"
            )
        else:
            pool.append(
                f"(raylet) [2025-12-06 18:{mm:02d}:{ss:02d},{rng.randrange(999):03d} I {pid} {pid}] "
                f"(raylet) worker_pool.cc:{rng.randrange(900)}: Started worker process with pid {pid}\n"
            )
    return pool


def _step_line(step: int, diff: float, rng: random.Random) -> str:
    items = [
        f"global_seqlen/min:{rng.randrange(300000, 400000)}",
        f"actor/entropy:{rng.uniform(0.3, 0.7)}",
        "training/rollout_probs_diff_valid:1",
        f"training/rollout_probs_diff_max:{rng.uniform(0.5, 0.99)}",
        f"training/rollout_probs_diff_mean:np.float64({diff})",
        f"training/rollout_probs_diff_std:{rng.uniform(0.01, 0.02)}",
        f"actor/pg_loss:{rng.uniform(-0.01, 0.01)}",
        f"actor/grad_norm:{rng.uniform(0.1, 0.4)}",
        "actor/lr:1e-06",
        f"critic/score/mean:{rng.random()}",
        f"response_length/mean:{rng.uniform(1000, 4000)}",
        f"response_length/clip_ratio:{rng.uniform(0, 0.05)}",
        f"perf/throughput:{rng.uniform(500, 3000)}",
        f"timing_s/step:{rng.uniform(100, 300)}",
    ]
    items += [f"timing_s/{k}:{rng.uniform(1, 90)}" for k in ("gen", "reward", "old_log_prob", "ref", "update_actor")]
    return f"(TaskRunner pid=2417) step:{step} - " + " - ".join(items) + "\n"


def _write_noise(
    path: Path,
    size: int,
    pool: list[str],
    rng: random.Random,
    head: str = "",
    tail: str = "",
    steps: tuple[int, float] | None = None,
) -> int:
    """Write ``size`` bytes of noise (with step lines when ``steps`` = (count, drift-from fraction))."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write(head)
        n_steps, drift = steps if steps else (0, 1.0)
        per_step = max(1, size // max(1, n_steps)) if n_steps else size
        step = 0
        while written < size:
            chunk = "".join(rng.choices(pool, k=2000))
            fh.write(chunk)
            written += len(chunk)
            while n_steps and step < n_steps and written >= (step + 1) * per_step:
                step += 1
                diff = 0.004 + (0.02 if step >= n_steps * drift else 0.0)
                fh.write(_step_line(step, diff, rng))
        fh.write(tail)
    return written


def build(root: Path, total: int, seed: int = 1234) -> list[Path]:
    """Two jobs under ``root``; returns their directories."""
    rng = random.Random(seed)
    pool = _noise_pool(rng)
    cmd = "+ python3 -m verl.trainer.main_ppo " + " ".join(OVERRIDES) + "\n"
    n_steps = 200
    # Job 1: the drift, then the same OOM on all 8 ranks.
    j1 = root / "job1"
    run = j1 / "outputs" / "2025-12-06" / "18-00-00"
    (run / ".hydra").mkdir(parents=True, exist_ok=True)
    (run / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in OVERRIDES))
    _write_noise(
        run / "verl_demo.log",
        int(total * 0.22),
        pool,
        rng,
        head=VERSIONS + cmd,
        tail="(TaskRunner pid=2417) training stopped: workers failed\n",
        steps=(n_steps, 0.6),
    )
    (j1 / "verl_examples").mkdir(parents=True, exist_ok=True)
    with (j1 / "verl_examples" / "gsm8k.jsonl").open("w") as fh:
        for s in range(1, n_steps + 1):
            fh.write(
                json.dumps(
                    {
                        "step": s,
                        "data": {"training/rollout_probs_diff_mean": 0.004 + (0.02 if s >= n_steps * 0.6 else 0.0)},
                    }
                )
                + "\n"
            )
    with gzip.open(run / "verl_demo.log.1.gz", "wt", compresslevel=1) as gz:
        for _ in range(max(1, int(total * 0.02) // 400_000)):
            gz.write("".join(rng.choices(pool, k=1000)))
    logs1 = j1 / "ray" / "session_2025-12-06_18-00-00_1" / "logs"
    for rank in range(8):
        pid = 88470 + rank
        tb = "".join(f"[rank{rank}]: {ln}\n" for ln in OOM_TRACEBACK.format(rank=rank, pid=pid).splitlines())
        _write_noise(logs1 / f"worker-{rank:04x}abcd-01000000-{pid}.err", int(total * 0.028), pool, rng, tail=tb)
    # Job 2: rank 3 fails first; the watchdogs of the other ranks and the driver's ActorDiedError follow.
    j2 = root / "job2"
    _write_noise(
        j2 / "verl_demo.log",
        int(total * 0.22),
        pool,
        rng,
        head=VERSIONS + cmd,
        tail="".join(f"(WorkerDict pid=99000) {ln}\n" for ln in ACTOR_DIED.splitlines()),
        steps=(n_steps, 2.0),
    )
    logs2 = j2 / "ray" / "session_2025-12-06_19-00-00_1" / "logs"
    for rank in range(8):
        pid = 99000 + rank
        if rank == 3:
            tail = "".join(f"[rank3]: {ln}\n" for ln in OOM_TRACEBACK.format(rank=3, pid=pid).splitlines())
        else:
            tail = WATCHDOG.format(rank=rank, minute=59) + f"[rank{rank}]: Received signal 15 (SIGTERM)\n"
        _write_noise(logs2 / f"worker-{rank:04x}ffff-02000000-{pid}.err", int(total * 0.028), pool, rng, tail=tail)
    return [j1, j2]


def build_many(root: Path, files: int, seed: int = 99) -> list[Path]:
    """One job whose Ray session holds ``files`` small worker logs (~32 KB each), one of them with the
    OOM traceback: what a long run's ``/tmp/ray/session_*/logs`` looks like."""
    rng = random.Random(seed)
    pool = _noise_pool(rng)
    logs = root / "many" / "ray" / "session_2025-12-06_18-00-00_1" / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    bad = files // 2
    for i in range(files):
        text = "".join(rng.choices(pool, k=130))
        if i == bad:
            text += "".join(f"[rank5]: {ln}\n" for ln in OOM_TRACEBACK.format(rank=5, pid=70000 + i).splitlines())
        (logs / f"python-core-worker-{i:08x}_{70000 + i}.log").write_text(text)
    return [root / "many"]


# The metrics of one verl 0.9 step line (a real MoE GRPO run's: tests/fixtures/entries/
# rollout-correction-offpolicy-gap), widened with the per-stage timings, validation and variance metrics
# that verl 0.9's metric_utils.py also prints.
_STEP_KEYS = str.split(
    "global_seqlen/min global_seqlen/max global_seqlen/minmax_diff global_seqlen/balanced_min "
    "global_seqlen/balanced_max global_seqlen/mean actor/entropy training/rollout_probs_diff_valid "
    "training/rollout_probs_diff_max training/rollout_probs_diff_mean training/rollout_probs_diff_std "
    "training/rollout_actor_probs_pearson_corr rollout_corr/training_ppl rollout_corr/training_log_ppl "
    "rollout_corr/kl rollout_corr/k3_kl rollout_corr/rollout_ppl rollout_corr/rollout_log_ppl "
    "rollout_corr/log_ppl_diff rollout_corr/log_ppl_abs_diff rollout_corr/log_ppl_diff_max "
    "rollout_corr/log_ppl_diff_min rollout_corr/ppl_ratio rollout_corr/chi2_token rollout_corr/chi2_seq "
    "actor/pg_clipfrac actor/ppo_kl actor/pg_clipfrac_lower actor/pg_loss actor/kl_loss actor/kl_coef actor/loss "
    "actor/grad_norm actor/perf/max_memory_allocated_gb actor/perf/max_memory_reserved_gb "
    "actor/perf/cpu_memory_used_gb actor/lr perf/mfu/actor training/global_step training/epoch critic/score/mean "
    "critic/score/max critic/score/min critic/rewards/mean critic/rewards/max critic/rewards/min "
    "critic/advantages/mean critic/advantages/max critic/advantages/min critic/returns/mean critic/returns/max "
    "critic/returns/min response_length/mean response_length/max response_length/min response_length/clip_ratio "
    "response_length_non_aborted/mean response_length_non_aborted/max response_length_non_aborted/min "
    "response_length_non_aborted/clip_ratio response/aborted_ratio prompt_length/mean prompt_length/max "
    "prompt_length/min prompt_length/clip_ratio timing_s/start_profile timing_s/gen timing_s/reward "
    "timing_s/old_log_prob timing_s/ref timing_s/adv timing_s/update_actor timing_s/update_weights timing_s/step "
    "timing_s/stop_profile timing_per_token_ms/gen timing_per_token_ms/ref timing_per_token_ms/adv "
    "timing_per_token_ms/update_actor perf/total_num_tokens perf/time_per_step perf/throughput "
    "critic/values/mean critic/values/max critic/values/min critic/vf_explained_var num_turns/max num_turns/mean "
    "num_turns/min tool_call_counts/max tool_call_counts/mean tool_call_counts/min "
    "variance_proxy/expected_a_squared variance_proxy/expected_w variance_proxy/proxy1_signal_strength "
    "variance_proxy/proxy2_total_power variance_proxy/proxy3_pure_noise"
)
_STEP_KEYS += [f"val-core/openai/gsm8k/reward/mean@{k}" for k in (1, 2, 4, 8, 16, 32)]
_STEP_KEYS += [f"val-aux/openai/gsm8k/{m}/mean@{k}" for m in ("score", "acc", "pred") for k in (1, 2, 4, 8, 16, 32)]
_STEP_KEYS += [f"timing_s/{s}" for s in ("testing", "save_checkpoint", "values", "update_critic", "marked_gen")]
_STEP_KEYS += [f"actor/perf/{m}_rank{r}" for m in ("tokens_per_s", "mem_gb") for r in range(16)]


def build_steps(root: Path, steps: int, seed: int = 7) -> list[Path]:
    """One job whose driver log is ``steps`` verl 0.9 step lines of ~170 metrics each (printed as verl
    does, a third of the values as ``np.float64(...)``), training/rollout_probs_diff_mean drifting from 60 %
    of the steps on: the metric-heavy log a long run leaves, and a metric signature to find in it."""
    rng = random.Random(seed)
    job = root / "steps"
    job.mkdir(parents=True, exist_ok=True)
    (job / ".hydra").mkdir(exist_ok=True)
    (job / ".hydra" / "overrides.yaml").write_text("- algorithm.adv_estimator=grpo\n- trainer.logger=console\n")
    with open(job / "main_ppo.log", "w") as fh:
        for step in range(1, steps + 1):
            items = []
            for key in _STEP_KEYS:
                if key == "training/rollout_probs_diff_mean":
                    value = 0.004 + (0.02 if step >= steps * 0.6 else 0.0) + rng.uniform(0, 0.001)
                elif key == "training/global_step":
                    value = step
                else:
                    value = rng.random()
                items.append(f"{key}:np.float64({value})" if rng.random() < 0.3 else f"{key}:{value}")
            fh.write(f"(TaskRunner pid=40417) step:{step} - " + " - ".join(items) + "\n")
    return [job]


def _tree_rss(pid: int) -> tuple[int, int]:
    """(sum of RSS, largest RSS) in bytes over ``pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    total = largest = 0
    stack = [pid]
    page = os.sysconf("SC_PAGE_SIZE")
    while stack:
        p = stack.pop()
        stack += children.get(p, [])
        try:
            with open(f"/proc/{p}/statm") as fh:
                rss = int(fh.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
        total += rss
        largest = max(largest, rss)
    return total, largest


def measure(cmd: list[str] | str, shell: bool = False) -> dict[str, float]:
    peak = [0, 0]
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, shell=shell, stdout=subprocess.PIPE, stderr=subprocess.PIPE, executable="/bin/bash" if shell else None
    )
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            total, largest = _tree_rss(proc.pid)
            peak[0], peak[1] = max(peak[0], total), max(peak[1], largest)
            time.sleep(0.1)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    out, err = proc.communicate()
    elapsed = time.perf_counter() - started
    done.set()
    t.join()
    return {
        "seconds": elapsed,
        "rss_sum": peak[0],
        "rss_max": peak[1],
        "rc": proc.returncode,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace"),
    }


def _size(text: str) -> int:
    units = {"K": 1e3, "M": 1e6, "G": 1e9}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def check_planted(report: dict[str, object]) -> list[str]:
    """Which planted problems the scan found (names of the ones it missed)."""
    findings = report["findings"]
    assert isinstance(findings, list)
    if all(f["job"].endswith("/many") for f in findings) and findings:
        oom = [f for f in findings if f["entry_id"] == "actor-update-cuda-oom-offload"]
        return [] if oom and oom[0]["incident"]["ranks"] == [5] else ["the OOM in one of the small files"]
    if findings and all(f["job"].endswith("/steps") for f in findings):
        drift = [f for f in findings if f["entry_id"] == "rollout-training-logprob-mismatch" and f["kind"] == "metric"]
        return [] if drift else ["metric drift in the step lines"]
    missed = []
    by_entry = {(f["job"].rsplit("/", 1)[-1], f["entry_id"], f["kind"]) for f in findings}
    if not any(e == ("job1", "rollout-training-logprob-mismatch", "metric") for e in by_entry):
        missed.append("metric drift")
    oom8 = [
        f
        for f in findings
        if f["job"].endswith("job1")
        and f["incident"]
        and f["incident"]["count"] == 8
        and f["incident"]["ranks"] == list(range(8))
    ]
    if not oom8:
        missed.append("8-rank failure shown once with its ranks")
    j2 = [f for f in findings if f["job"].endswith("job2")]
    root = next((f for f in j2 if f["kind"] == "failure"), None)
    if root is None or root["incident"]["ranks"] != [3]:
        missed.append("first failure (rank 3)")
    else:
        casc = [f for f in j2 if f["kind"] == "cascade" and f["caused_by"] == root["incident"]["id"]]
        if not any(f["entry_id"] == "nccl-watchdog-timeout" for f in casc):
            missed.append("watchdog cascade attributed to the first failure")
    if not any(f["kind"] == "override" for f in findings):
        missed.append("bad override")
    return missed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--sizes",
        default="6000steps,100M,400M,1G,4G,3000files",
        help="Sizes, NNNfiles for many small logs, NNNsteps for a driver log of verl step lines.",
    )
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "verl-doctor-bench"))
    ap.add_argument("--keep", action="store_true", help="Keep the generated directories.")
    args = ap.parse_args()
    if shutil.which("rg") is None:
        sys.exit("ripgrep is missing: apt-get install -y ripgrep")
    patterns = Path(args.dir) / "patterns.txt"
    patterns.parent.mkdir(parents=True, exist_ok=True)
    patterns.write_text(
        subprocess.run(
            [str(BIN / "verl-doctor"), "corpus", "patterns"], check=True, capture_output=True, text=True
        ).stdout
    )
    rows = []
    for size_text in args.sizes.split(","):
        root = Path(args.dir) / size_text
        shutil.rmtree(root, ignore_errors=True)
        t0 = time.perf_counter()
        if size_text.endswith("files"):  # e.g. 3000files: many small Ray logs
            jobs = build_many(root, int(size_text.removesuffix("files")))
        elif size_text.endswith("steps"):  # e.g. 6000steps: a driver log of verl step lines
            jobs = build_steps(root, int(size_text.removesuffix("steps")))
        else:
            jobs = build(root, _size(size_text))
        on_disk = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
        print(f"[{size_text}] wrote {on_disk / 1e6:.0f} MB in {time.perf_counter() - t0:.1f} s", flush=True)
        scan_cmd = [str(BIN / "verl-doctor"), "scan", "--json", "--no-semantic", *map(str, jobs)]
        rg_cmd = ["rg", "-z", "-c", "--no-messages", "-f", str(patterns), str(root)]
        measure(scan_cmd)  # warm-up: page cache, Hyperscan database cache
        measure(rg_cmd)
        scans, rgs = [], []
        for _ in range(args.runs):
            scans.append(measure(scan_cmd))
            rgs.append(measure(rg_cmd))
        best_scan = min(scans, key=lambda r: r["seconds"])
        best_rg = min(rgs, key=lambda r: r["seconds"])
        report = json.loads(best_scan["stdout"]) if best_scan["stdout"].strip().startswith("{") else None
        missed = check_planted(report) if report else ["no report: " + best_scan["stderr"][-300:]]
        row = {
            "size": size_text,
            "bytes": on_disk,
            "scan_s": round(best_scan["seconds"], 2),
            "rg_s": round(best_rg["seconds"], 2),
            "scan_MBps": round(on_disk / 1e6 / best_scan["seconds"], 1),
            "rg_MBps": round(on_disk / 1e6 / best_rg["seconds"], 1),
            "ratio_vs_rg": round(best_rg["seconds"] / best_scan["seconds"], 2),
            "scan_peak_rss_sum_MB": round(max(r["rss_sum"] for r in scans) / 1e6, 1),
            "scan_peak_rss_max_MB": round(max(r["rss_max"] for r in scans) / 1e6, 1),
            "rg_peak_rss_sum_MB": round(max(r["rss_sum"] for r in rgs) / 1e6, 1),
            "scan_exit": best_scan["rc"],
            "findings": len(report["findings"]) if report else None,
            "planted_missed": missed,
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print(
        "\n| size | bytes | scan s | rg s | scan MB/s | rg MB/s | scan vs rg | peak RSS sum (max proc) "
        "| planted missed |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['size']} | {r['bytes'] / 1e6:.0f} MB | {r['scan_s']} | {r['rg_s']} | {r['scan_MBps']} | "
            f"{r['rg_MBps']} | {r['ratio_vs_rg']}x | {r['scan_peak_rss_sum_MB']} MB ({r['scan_peak_rss_max_MB']} MB)"
            f" | {', '.join(r['planted_missed']) or 'none'} |"
        )
    # The rate once running: what one more byte costs, start-up left out (sizes of the same kind).
    by_bytes = [r for r in rows if not str(r["size"]).endswith(("files", "steps"))]
    sized = sorted(by_bytes, key=lambda r: r["bytes"])
    for a, b in itertools.pairwise(sized):
        extra = (b["bytes"] - a["bytes"]) / 1e6
        scan_rate = extra / max(b["scan_s"] - a["scan_s"], 1e-3)
        rg_rate = extra / max(b["rg_s"] - a["rg_s"], 1e-3)
        print(
            f"marginal rate {a['size']} -> {b['size']}: scan {scan_rate:.0f} MB/s, rg {rg_rate:.0f} MB/s "
            f"({scan_rate / rg_rate:.2f}x)"
        )


if __name__ == "__main__":
    main()

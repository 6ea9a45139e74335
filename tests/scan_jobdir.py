"""Builders of verl-like job directories on disk for the scan tests (real files, real layouts).

The failure text reuses real verl 0.9.1 output (tests/eval/verl_runs) and entry fixtures; the layout
follows verl-facts §6: Hydra's outputs/DATE/TIME/.hydra, the driver log piped through tee, Ray's
session logs with a session_latest symlink, the file logger's JSONL, checkpoints.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parent.parent
VERL_RUNS = REPO / "tests" / "eval" / "verl_runs"
ENTRY_FIXTURES = REPO / "tests" / "fixtures" / "entries"

VERSIONS = """\
$ pip list 2>/dev/null | grep -E '^(verl|vllm|torch) '
torch                             2.7.1
verl                              0.9.1
vllm                              0.10.1.1
$ nvidia-smi -L
GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-3b1f7c2e-5a0d-4e8b-9c61-0f2a8d7e4b19)
GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-8e4a2d9c-1b7f-4c3a-a5e0-6d9b2f1c8a47)
"""

OVERRIDES = [
    "algorithm.adv_estimator=grpo",
    "data.train_batch_size=128",
    "actor_rollout_ref.model.path=Qwen/Qwen3-8B",
    "actor_rollout_ref.rollout.name=vllm",
    "actor_rollout_ref.rollout.calculate_log_probs=True",
    "actor_rollout_ref.actor.use_torch_compile=False",  # ignored by verl 0.9.1: a bad override
    "trainer.n_gpus_per_node=8",
    "trainer.nnodes=1",
]

OOM_TRACEBACK = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/verl/workers/fsdp_workers.py", line 875, in update_actor
    metrics = self.actor.update_policy(data=data)
  File "/usr/local/lib/python3.10/dist-packages/verl/workers/actor/dp_actor.py", line 512, in update_policy
    grad_norm = self._optimizer_step()
  File "/usr/local/lib/python3.10/dist-packages/torch/optim/adamw.py", line 211, in step
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.02 GiB. GPU {rank} has a total capacity of \
79.15 GiB of which 712.00 MiB is free. Process {pid} has 78.44 GiB memory in use.
"""

WATCHDOG = (
    "[rank{rank}]:[E1206 18:{minute:02d}:12.715298746 ProcessGroupNCCL.cpp:607] [Rank {rank}] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=_REDUCE_SCATTER_BASE, NumelIn=544997376, "
    "NumelOut=68124672, Timeout(ms)=600000) ran for 6000{rank}1 milliseconds before timing out.\n"
    "[rank{rank}]:[E1206 18:{minute:02d}:12.716120233 ProcessGroupNCCL.cpp:621] [Rank {rank}] Some NCCL "
    "operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU "
    "operations might run on corrupted/incomplete data.\n"
    "[rank{rank}]:[E1206 18:{minute:02d}:12.716137804 ProcessGroupNCCL.cpp:627] [Rank {rank}] To avoid data "
    "inconsistency, we are taking the entire process down.\n"
)

ACTOR_DIED = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.10/dist-packages/verl/trainer/main_ppo.py", line 183, in run
    trainer.fit()
  File "/usr/local/lib/python3.10/dist-packages/verl/trainer/ppo/ray_trainer.py", line 910, in fit
    gen_batch_output = self.actor_rollout_wg.generate_sequences(gen_batch)
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict
\tpid: 1373150
"""


def step_line(step: int, diff_mean: float) -> str:
    return (
        f"(TaskRunner pid=2417) step:{step} - actor/entropy:0.60{step % 10} - "
        f"training/rollout_probs_diff_valid:1 - training/rollout_probs_diff_max:0.93 - "
        f"training/rollout_probs_diff_mean:np.float64({diff_mean}) - actor/pg_loss:0.0051 - "
        f"actor/grad_norm:0.21{step % 10} - actor/lr:1e-06 - critic/score/mean:0.18 - "
        f"response_length/mean:2995 - timing_s/step:188.4\n"
    )


def noise_lines(n: int, seed: int = 0) -> str:
    out = []
    for i in range(n):
        k = (i * 7919 + seed) % 5
        if k == 0:
            out.append(f"(WorkerDict pid=88473) INFO 12-06 18:0{i % 10}:00 [block_manager.py:{i}] allocated blocks\n")
        elif k == 1:
            out.append(f"(TaskRunner pid=2417) Training Progress: {i % 100}%|#####     | {i}/110 [00:01<00:02]\n")
        elif k == 2:
            out.append(f"(WorkerDict pid=88474) Processed prompts: 100%|##########| 128/128 [00:0{i % 9}<00:00]\n")
        elif k == 3:
            out.append(
                "(WorkerDict pid=88475) /usr/lib/python3.10/site-packages/torch/utils/checkpoint.py:90: "
                "note: use_reentrant parameter should be passed explicitly\n"
            )
        else:
            out.append(f"(TaskRunner pid=2417) local_global_step_folder: checkpoints/verl_examples/gsm8k/g_{i}\n")
    return "".join(out)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


def command_line() -> str:
    return "+ python3 -m verl.trainer.main_ppo " + " ".join(OVERRIDES) + "\n"


def build_drift_job(root: Path, steps: int = 30, drift_from: int = 12) -> Path:
    """A run whose rollout/training log-prob mismatch drifts above 0.01, then every rank runs out of
    memory in update_actor (the same traceback in 8 worker-*.err files), with a bad override."""
    run = root / "outputs" / "2025-12-06" / "18-00-00"
    write(run / ".hydra" / "overrides.yaml", "".join(f"- {o}\n" for o in OVERRIDES))
    write(run / ".hydra" / "config.yaml", "trainer:\n  project_name: verl_examples\n")
    driver = [VERSIONS, command_line(), "(TaskRunner pid=2417) Total training steps: 110\n"]
    jsonl = []
    for step in range(1, steps + 1):
        diff = 0.004 + (0.02 if step >= drift_from else 0.0) + step * 1e-5
        driver.append(noise_lines(40, seed=step))
        driver.append(step_line(step, round(diff, 6)))
        jsonl.append(f'{{"step": {step}, "data": {{"training/rollout_probs_diff_mean": {diff:.6f}}}}}\n')
    driver.append("(TaskRunner pid=2417) Error: the actors died; see the worker logs\n")
    write(run / "verl_demo.log", "".join(driver))
    write(root / "verl_examples" / "gsm8k.jsonl", "".join(jsonl))
    session = root / "ray" / "session_2025-12-06_18-00-00_000000_1"
    for rank in range(8):
        pid = 88470 + rank
        body = noise_lines(20, seed=rank) + "".join(
            f"[rank{rank}]: {line}\n" for line in OOM_TRACEBACK.format(rank=rank, pid=pid).splitlines()
        )
        write(session / "logs" / f"worker-{rank:04x}abcd-01000000-{pid}.err", body)
    os.symlink(session.name, root / "ray" / "session_latest")
    ckpt = root / "checkpoints" / "verl_examples" / "gsm8k"
    write(ckpt / "global_step_10" / "actor" / "model_world_size_8_rank_0.pt", b"\x80\x02binary")
    write(ckpt / "latest_checkpointed_iteration.txt", "10")
    return root


def build_cascade_job(root: Path) -> Path:
    """Rank 3 runs out of memory first; the other ranks' NCCL watchdogs time out ten minutes later,
    the driver sees the actor die, and the workers get SIGTERM."""
    write(
        root / "driver.log",
        VERSIONS
        + command_line()
        + noise_lines(30)
        + step_line(1, 0.003)
        + "".join(f"(WorkerDict pid=99000) {ln}\n" for ln in ACTOR_DIED.splitlines()),
    )
    logs = root / "ray_logs"
    for rank in range(8):
        pid = 99000 + rank
        if rank == 3:
            body = "".join(f"[rank3]: {ln}\n" for ln in OOM_TRACEBACK.format(rank=3, pid=pid).splitlines())
        else:
            body = WATCHDOG.format(rank=rank, minute=44) + f"[rank{rank}]: Received signal 15 (SIGTERM)\n"
        write(logs / f"worker-{rank:04x}ffff-02000000-{pid}.err", noise_lines(10, seed=rank) + body)
    return root


def real_verl_output(name: str = "hydra_ray_init_old_key") -> str:
    return (VERL_RUNS / name / "output.log").read_text(encoding="utf-8")


def gzip_bytes(text: str) -> bytes:
    return gzip.compress(text.encode("utf-8"))


def zstd_bytes(text: str) -> bytes:
    return zstandard.ZstdCompressor().compress(text.encode("utf-8"))


def build_bad_input_job(root: Path) -> Path:
    """Everything that must be skipped with a reason, around one real failure that must still be found."""
    real = real_verl_output("default_8_gpus_batch_not_divisible")
    full = gzip_bytes(noise_lines(3000) + real)
    write(root / "truncated.log.gz", full[: len(full) - 40])  # the stream ends early
    write(root / "compressed" / "slurm-77.out.zst", zstd_bytes(real_verl_output("hydra_ray_init_old_key")))
    write(root / "worker-dead.out", b"\x00\x01\x02ELF" + bytes(range(256)) * 64)
    write(root / "huge-line.log", "x" * (10 * 1024 * 1024) + "\n" + real_verl_output("hydra_trainer_nnode_typo"))
    os.symlink(".", root / "loop")
    os.symlink("self", root / "self")
    os.symlink("does-not-exist", root / "broken.log")
    os.mkfifo(root / "worker-fifo.err")
    return root

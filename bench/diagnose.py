"""Engine benchmarks, each measured against its named baseline in the same run.

1. Warm diagnosis of a 300-line Ray-wrapped traceback vs the bare embedding call on the same text
   (target: <= 1.5x). The traceback has no rule hit, so the semantic layer runs.
2. Warm semantic query: a question (no rule decides it, so it is embedded and searched) diagnosed by a
   loaded diagnoser, a new wording each time so no cache answers it (target: <= 15 ms, median).
3. Cold `verl-doctor match` on a traceback the rules decide vs `python -c "import sentence_transformers"`
   (target: <= 0.2x).

Usage: .venv/bin/python bench/diagnose.py [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
FRAME_FILE = "/opt/verl/verl/workers/engine/fsdp/transformer_impl.py"


def ray_wrapped_traceback(lines: int = 300) -> str:
    """A long, noisy paste: Ray prefixes, ANSI colours, many frames, an error no rule knows."""
    out = ["\x1b[36m(TaskRunner pid=41873)\x1b[0m Traceback (most recent call last):"]
    i = 0
    while len(out) < lines - 3:
        out.append(f'(TaskRunner pid=41873)   File "{FRAME_FILE}", line {100 + i}, in forward_step')
        out.append(f"(TaskRunner pid=41873)     output = self.module(**inputs_{i})")
        out.append(f"(WorkerDict pid=2211, ip=10.0.0.7) [rank{i % 8}]: INFO step {i} waiting for collective")
        i += 1
    out.append("(TaskRunner pid=41873) RuntimeError: shape mismatch in rotary embedding cache for position ids")
    out.append("ray.exceptions.RayTaskError(RuntimeError): ray::TaskRunner.run() (pid=41873, ip=10.0.0.7)")
    return "\n".join(out[:lines]) + "\n"


def timed(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bench_warm(repeat: int) -> tuple[float, float]:
    from indexer import load_diagnoser
    from indexer.semantic import Embedder

    diagnoser = load_diagnoser(REPO / "corpus")
    text = ray_wrapped_traceback()
    diagnoser.diagnose(text)  # load model, build or load the index
    embedder: Embedder = diagnoser.retriever.embedder  # type: ignore[union-attr]
    # Both sides bypass the embedder's small result cache: each call sees text it has not seen before.
    counter = iter(range(1_000_000))

    def fresh() -> str:
        return text.replace("position ids", f"position ids (case {next(counter)})")

    bare = timed(lambda: embedder.encode([fresh()]), repeat)
    warm = timed(lambda: diagnoser.diagnose(fresh()), repeat)
    return warm, bare


QUESTIONS = (
    "how do I stop ray workers failing to register with the raylet on slurm",
    "why does my rollout log prob differ from the training log prob",
    "what should ppo_micro_batch_size_per_gpu be when I raise rollout.n",
    "how do I resume training from a checkpoint after the job was killed",
)


def bench_warm_query(repeat: int) -> tuple[float, float, str]:
    """Median wall and CPU seconds of one warm question diagnosed (CPU counts onnxruntime's threads)."""
    from indexer import load_diagnoser

    diagnoser = load_diagnoser(REPO / "corpus")
    diagnoser.diagnose(QUESTIONS[0])  # load the model and the index
    retriever = diagnoser.retriever
    backend = getattr(getattr(retriever, "embedder", None), "backend", "?")
    walls, cpus = [], []
    for i in range(max(repeat, 20)):
        question = f"{QUESTIONS[i % len(QUESTIONS)]} (run {i})?"  # never seen: the embedding cache misses
        wall, cpu = time.perf_counter(), time.process_time()
        result = diagnoser.diagnose(question, top=3)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        assert "decided by rules; semantic search not needed" not in result.notes
    return statistics.median(walls), statistics.median(cpus), backend


def bench_cold(repeat: int) -> tuple[float, float]:
    sample = REPO / "tests" / "fixtures" / "entries" / "ray-worker-register-raylet" / "positive-slurm-driver.log"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    cmd_match = [str(BIN / "verl-doctor"), "match", "--json", str(sample)]
    cmd_import = [sys.executable, "-c", "import sentence_transformers"]

    def run(cmd: list[str]) -> None:
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)

    run(cmd_match)
    run(cmd_import)
    return timed(lambda: run(cmd_match), repeat), timed(lambda: run(cmd_import), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("VERL_DOCTOR_CACHE", tempfile.mkdtemp(prefix="verl-doctor-bench-"))
    warm, bare = bench_warm(args.repeat)
    print(
        f"warm diagnosis, 300-line Ray traceback: {warm * 1000:.1f} ms; bare embedding of the same text: "
        f"{bare * 1000:.1f} ms; ratio {warm / bare:.2f}x (target <= 1.5x)"
    )
    query, query_cpu, backend = bench_warm_query(args.repeat)
    print(
        f"warm semantic query (a question, {backend} embedding): {query * 1000:.1f} ms median wall, "
        f"{query_cpu * 1000:.1f} ms CPU (target <= 15 ms); load average {os.getloadavg()[0]:.1f}"
    )
    cold, imp = bench_cold(args.repeat)
    print(
        f"cold `verl-doctor match` (rules decide): {cold * 1000:.0f} ms; `import sentence_transformers`: "
        f"{imp * 1000:.0f} ms; ratio {cold / imp:.2f}x (target <= 0.2x)"
    )


if __name__ == "__main__":
    main()

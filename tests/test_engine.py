"""The engine on what users paste: signals, rules, version-specific overrides, bad input, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from kb.cli import main
from kb.loglines import split_lines
from kb.signals import extract_signals
from tests.conftest import REPO as REPO_ROOT

RAY_WRAPPED = """\
(TaskRunner pid=41873) Traceback (most recent call last):
\x1b[36m(TaskRunner pid=41873)\x1b[0m   File "/opt/verl/verl/trainer/main_ppo.py", line 312, in run
(TaskRunner pid=41873)     trainer.init_workers()
(WorkerDict pid=2211, ip=10.0.0.7) [rank0]: ValueError: Total available GPUs 1 is less than total desired GPUs 8
ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=41873, ip=10.0.0.7, actor_id=abc)
"""


def test_signals_from_noisy_ray_output():
    lines = split_lines(RAY_WRAPPED + "verl==0.6.1 torch==2.6.0 vllm==0.8.5\nGPU 0: NVIDIA A100-SXM4-80GB\n")
    assert lines[1].text.startswith('  File "/opt/verl/verl/trainer/main_ppo.py"')
    assert lines[3].text.startswith("ValueError: Total available GPUs")
    signals = extract_signals(lines)
    assert [e.type for e in signals.exceptions] == ["ValueError", "ValueError"]
    assert signals.exceptions[-1].wrapped_in == "RayTaskError"
    assert signals.versions == {"verl": "0.6.1", "torch": "2.6.0", "vllm": "0.8.5"}
    assert signals.gpus == ["A100"]
    assert signals.frames[0].is_verl


def test_metric_series_from_step_lines_and_jsonl():
    text = (
        "step:1 - actor/grad_norm:np.float64(0.41) - critic/score/mean:0.0 - training/global_step:1\n"
        "step:2 - actor/grad_norm:0.523 - critic/score/mean:0.000 - actor/pg_loss:nan\n"
        '{"step": 3, "data": {"actor/grad_norm": 0.9, "actor/pg_loss": 0.1}}\n'
    )
    signals = extract_signals(split_lines(text))
    assert [p.value for p in signals.metrics["actor/grad_norm"]] == [0.41, 0.523, 0.9]
    assert [p.step for p in signals.metrics["actor/pg_loss"]] == [2, 3]


def test_hydra_error_and_overrides_are_read():
    text = (
        "Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'ray_init.num_cpus=16']\n"
        "Traceback (most recent call last):\n"
        "omegaconf.errors.ConfigAttributeError: Key 'ray_init' is not in struct\n"
        "    full_key: ray_init\n"
        "    object_type=dict\n"
        "hydra.errors.ConfigCompositionException: Could not override 'ray_init.num_cpus'.\n"
    )
    signals = extract_signals(split_lines(text))
    assert signals.overrides == {"algorithm.adv_estimator": "grpo", "ray_init.num_cpus": "16"}
    assert {h.kind for h in signals.hydra} >= {"not_in_struct", "could_not_override", "full_key"}


def test_rules_decide_and_overrides_follow_the_version(diagnoser):
    text = (
        "verl==0.5.0\n[2025-03-10 14:02:19,904 E 22 22] core_worker.cc:499: Failed to register worker 01000000ff to"
        " Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory\n"
    )
    result = diagnoser.diagnose(text)
    top = result.matches[0]
    assert top.id == "ray-worker-register-raylet" and top.verdict == "match" and not result.abstained
    assert [o.line for o in top.overrides] == ["ray_init.num_cpus=16"]
    assert top.evidence[0].kind == "regex" and top.evidence[0].line_no == 2
    newer = diagnoser.diagnose(text.replace("verl==0.5.0", "verl==0.9.1")).matches[0]
    assert [o.line for o in newer.overrides] == ["ray_kwargs.ray_init.num_cpus=16"]


def test_abstains_on_unrelated_input(diagnoser):
    result = diagnoser.diagnose(
        'Traceback (most recent call last):\n  File "app.py", line 3\nZeroDivisionError: division by zero\n'
    )
    assert result.abstained
    assert all(m.verdict == "possible" for m in result.matches)


def test_match_cli_json_and_bad_input(runner, tmp_path):
    log = tmp_path / "err.log"
    # From a verl job (its TaskRunner's prefix): a generic Ray failure is claimed only with verl evidence.
    log.write_text(
        "(TaskRunner pid=41873) core_worker.cc:499: Failed to register worker to Raylet. "
        "Unable to register worker with raylet.\n"
    )
    result = runner.invoke(main, ["match", "--json", "--no-semantic", str(log)])
    assert result.exit_code == 0
    payload = json.loads(result.output)
    assert payload["matches"][0]["id"] == "ray-worker-register-raylet"
    assert set(payload) >= {"kb_version", "abstained", "signals", "matches"}

    empty = tmp_path / "empty.log"
    empty.write_text("   \n")
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x00\x00\x00\x00" * 1000)
    for path, message in [
        (empty, "is empty"),
        (binary, "looks binary"),
        (tmp_path / "missing.log", "cannot read"),
        (tmp_path, "is a directory"),
    ]:
        result = runner.invoke(main, ["match", "--no-semantic", str(path)])
        assert result.exit_code == 2, result.output
        assert message in result.output and "Traceback" not in result.output

    latin = tmp_path / "latin.log"
    latin.write_bytes(b"(TaskRunner pid=7) caf\xe9 Unable to register worker with raylet\n")
    result = runner.invoke(main, ["match", "--json", "--no-semantic", str(latin)])
    assert result.exit_code == 0 and "not valid UTF-8" in json.loads(result.output)["notes"][0]


def test_huge_input_and_huge_line_stay_bounded(runner, tmp_path):
    big = tmp_path / "big.log"
    with big.open("wb") as fh:
        fh.write(b"x" * (10 * 1024 * 1024) + b"\n")  # one 10 MB line
        for _ in range(400_000):
            fh.write(b"INFO step ok nothing to see here at all today\n")
        fh.write(b"(WorkerDict pid=2211) Unable to register worker with raylet. No such file or directory\n")
    result = runner.invoke(main, ["match", "--json", "--no-semantic", str(big)])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output)
    assert payload["matches"][0]["id"] == "ray-worker-register-raylet"
    assert any("MB; diagnosed its first" in n for n in payload["notes"])


def test_jsonl_batch_mode(runner):
    requests = "\n".join(
        [
            json.dumps({"id": "a", "input": "Unable to register worker with raylet"}),
            "not json",
            json.dumps({"id": "c", "input": ""}),
        ]
    )
    result = runner.invoke(main, ["match", "--jsonl", "--no-semantic"], input=requests + "\n")
    rows = [json.loads(line) for line in result.output.splitlines()]
    assert rows[0]["id"] == "a" and rows[0]["matches"][0]["id"] == "ray-worker-register-raylet"
    assert "error" in rows[1] and rows[1]["id"] is None and rows[1]["line"] == 2
    assert rows[2]["id"] == "c" and rows[2]["line"] == 3 and "empty" in rows[2]["error"]  # the request's own id


def test_rules_only_path_never_imports_the_model(tmp_path):
    log = tmp_path / "err.log"
    # verl's own Ray prefix: a bare raylet line could be any Ray job's, and is then a near miss by design
    log.write_text("(TaskRunner pid=41873) Unable to register worker with raylet\n")
    code = (
        "import sys; from kb.cli import main\n"
        "code = None\n"
        "try:\n    main(['match', '--json', sys.argv[1]])\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "bad = [m for m in ('torch', 'sentence_transformers', 'faiss') if m in sys.modules]\n"
        "sys.stderr.write(f'EXIT:{code} IMPORTED:' + ','.join(bad))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True, text=True, timeout=120)
    assert proc.stderr.strip().endswith("IMPORTED:"), proc.stderr
    assert "EXIT:0 IMPORTED:" in proc.stderr, proc.stderr  # a confident match, not an error swallowed


def test_eval_cli_reports_figures(runner, tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"input": "Unable to register worker with raylet", "expected": ["ray-worker-register-raylet"]})
        + "\n"
        + json.dumps({"input": "ZeroDivisionError: division by zero", "expected": []})
        + "\n"
    )
    result = runner.invoke(main, ["eval", "--json", "--no-semantic", str(cases)])
    report = json.loads(result.output)
    assert report["top1"] == 1.0 and report["negatives"] == 1 and report["negatives_confident"] == 0.0


def test_concurrent_diagnoses_share_one_engine(diagnoser):
    """The server runs diagnoses in a thread pool: the pattern engine's scratch space must be per thread."""
    from concurrent.futures import ThreadPoolExecutor

    text = "core_worker.cc:499: Failed to register worker to Raylet. Unable to register worker with raylet.\n" * 50
    with ThreadPoolExecutor(8) as pool:
        tops = list(pool.map(lambda _: diagnoser.diagnose(text).matches[0].id, range(64)))
    assert set(tops) == {"ray-worker-register-raylet"}


# --------------------------------------------------------------------------- metric trends


def _series(values: list[float]) -> list[Any]:
    from kb.signals import MetricPoint

    return [MetricPoint(step=i + 1, value=v, line_no=i + 1) for i, v in enumerate(values)]


def test_a_noisy_slow_creep_is_a_trend_when_the_signature_allows_small_changes() -> None:
    import random

    from kb.rules import _trend

    rng = random.Random(3)
    creep = [120 + 0.7 * s + rng.uniform(-2.5, 2.5) for s in range(40)]  # +23 %, noisy step to step
    assert _trend(_series(creep), rising=True, min_change=0.1)
    assert not _trend(_series(creep), rising=True)  # the default asks for a doubling
    assert not _trend(_series(creep), rising=False, min_change=0.1)
    noise = [134 + rng.uniform(-2.5, 2.5) for _ in range(40)]
    assert not _trend(_series(noise), rising=True, min_change=0.01)
    spike = [1.0] * 39 + [9.0]  # one bad step is not a trend
    assert not _trend(_series(spike), rising=True)
    halving = [10 - 0.02 * s + rng.uniform(-0.3, 0.3) for s in range(300)]  # long: thinned to 200 points
    assert _trend(_series(halving), rising=False, min_change=0.4)


def test_change_and_tolerance_belong_to_their_test() -> None:
    from pydantic import ValidationError

    from kb.entry import MetricSignature

    assert MetricSignature(metric="a", trend="rising", change=0.1).change == 0.1
    assert MetricSignature(metric="a", flat=0, tolerance=0.01).tolerance == 0.01
    with pytest.raises(ValidationError, match="'change' belongs to a 'trend'"):
        MetricSignature(metric="a", above=1, change=0.1)
    with pytest.raises(ValidationError, match="'tolerance' belongs to a 'flat'"):
        MetricSignature(metric="a", trend="rising", tolerance=0.1)


def test_environment_variables_of_a_fix(runner: Any, tmp_path: Any) -> None:
    from pydantic import ValidationError

    from kb.entry import EnvVar

    assert EnvVar(name="NCCL_IB_DISABLE", value=1).value == "1"  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="not an environment variable name"):
        EnvVar(name="nccl-ib", value="1")
    log = tmp_path / "nccl.log"
    log.write_text(
        (
            REPO_ROOT / "tests" / "fixtures" / "entries" / "nccl-socket-ifname" / "positive-docker0-bootstrap.log"
        ).read_text()
    )
    out = runner.invoke(main, ["match", "--json", "--no-semantic", str(log)])
    match = next(m for m in json.loads(out.output)["matches"] if m["id"] == "nccl-socket-ifname")
    assert match["env"][0] == {
        "name": "NCCL_SOCKET_IFNAME",
        "value": "eth0",
        "line": "NCCL_SOCKET_IFNAME=eth0",
        "note": match["env"][0]["note"],
    }
    text = runner.invoke(main, ["match", "--no-semantic", str(log)]).output
    assert "Environment:" in text and "export NCCL_SOCKET_IFNAME=eth0" in text

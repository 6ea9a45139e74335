"""Provenance (issue 16 item 1): generic failures are claimed only with verl evidence; on another stack's
input nothing is claimed and the result says what the input looks like."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kb.cli import main
from kb.loglines import split_lines
from kb.provenance import assess
from kb.signals import extract_signals
from tests.conftest import FIXTURES, REPO

RUNS = REPO / "tests" / "eval" / "verl_runs"

# A plain DDP job's NCCL watchdog timeout: the same lines as verl's, no verl anywhere.
DDP_TIMEOUT = """\
[rank2]:[E ProcessGroupNCCL.cpp:563] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4084, \
OpType=ALLREDUCE, NumelIn=4821568, NumelOut=4821568, Timeout(ms)=600000) ran for 600030 milliseconds before timing out.
[rank2]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 2] Exception (either an error or timeout) detected by watchdog at \
work: 4084, last enqueued NCCL work: 4084, last completed NCCL work: 4083.
WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 426 closing signal SIGTERM
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
train_ddp.py FAILED
"""

# TRL's GRPOTrainer running out of GPU memory.
TRL_OOM = """\
Traceback (most recent call last):
  File "/opt/ml/code/run_grpo.py", line 502, in <module>
    main()
  File "/opt/conda/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", line 1218, in _generate_and_score
    output_reward_func = reward_func(prompts=prompts, completions=completions, **reward_kwargs)
  File "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.64 GiB. GPU 3 has a total capacity of 79.15 GiB of \
which 2.10 GiB is free. Of the allocated memory 70.02 GiB is allocated by PyTorch, and 5.55 GiB is reserved by \
PyTorch but unallocated. If reserved but unallocated memory is large try setting \
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
"""

# The same watchdog timeout inside verl's Ray workers.
VERL_TIMEOUT = """\
(WorkerDict pid=2211, ip=10.0.0.7) [rank0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation \
timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds \
before timing out.
(TaskRunner pid=41873)   File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 1012, in fit
"""


def _match(runner: Any, tmp_path: Path, text: str) -> dict[str, Any]:
    path = tmp_path / "input.log"
    path.write_text(text)
    out = runner.invoke(main, ["match", "--json", "--no-semantic", "--top", "10", str(path)])
    assert out.exit_code in (0, 1), out.output
    return json.loads(out.output)


def _first(result: dict[str, Any]) -> dict[str, Any]:
    return result["matches"][0]


def test_a_plain_ddp_nccl_timeout_is_a_near_miss_that_says_it_is_no_verl_job(runner: Any, tmp_path: Path) -> None:
    result = _match(runner, tmp_path, DDP_TIMEOUT)
    assert _first(result)["id"] == "nccl-watchdog-timeout"
    assert all(m["verdict"] == "possible" for m in result["matches"]) and result["abstained"]
    assert result["provenance"]["verl"] is False
    assert result["provenance"]["stack"] == "a torchrun script"
    assert any("not verl" in n for n in result["notes"])


def test_the_same_timeout_from_verl_workers_is_claimed(runner: Any, tmp_path: Path) -> None:
    result = _match(runner, tmp_path, VERL_TIMEOUT)
    assert _first(result)["id"] == "nccl-watchdog-timeout" and _first(result)["verdict"] == "match"
    assert result["provenance"]["stack"] == "verl" and result["provenance"]["evidence"]


def test_trls_grpo_trainer_oom_says_where_it_comes_from(runner: Any, tmp_path: Path) -> None:
    result = _match(runner, tmp_path, TRL_OOM)
    assert not any(m["verdict"] == "match" for m in result["matches"])
    prov = result["provenance"]
    assert prov["stack"] == "TRL" and prov["verl"] is False
    assert any("trl/trainer/grpo_trainer.py" in c["text"] for c in prov["evidence"])
    assert "comes from TRL" in prov["summary"] and "not verl" in prov["summary"]
    text = runner.invoke(main, ["match", "--no-semantic", str(tmp_path / "input.log")]).output
    assert "This input comes from TRL" in text


def test_a_bare_one_line_paste_stays_answerable(runner: Any, tmp_path: Path) -> None:
    generic = _match(runner, tmp_path, "RuntimeError: DataLoader worker (pid 263230) is killed by signal: Bus error.\n")
    assert _first(generic)["id"] == "dataloader-shm-bus-error" and _first(generic)["verdict"] == "possible"
    assert generic["provenance"]["verl"] is None
    specific = _match(runner, tmp_path, "ModuleNotFoundError: No module named 'transfer_queue'\n")
    assert _first(specific)["id"] == "transfer-queue-missing" and _first(specific)["verdict"] == "match"


@pytest.mark.parametrize(
    "case", ["v1_transfer_queue_missing", "hydra_append_existing_key", "hydra_grammar_unclosed_bracket"]
)
def test_real_verl_runs_read_as_verl(case: str) -> None:
    """verl 0.9.1's own output (its platform manager's start-up lines, its keys in Hydra's errors, its frames)."""
    text = (RUNS / case / "output.log").read_text()
    assert assess(split_lines(text), extract_signals(split_lines(text))).verl is True


def test_real_verl_hydra_errors_are_claimed(runner: Any, tmp_path: Path) -> None:
    text = (RUNS / "hydra_append_existing_key" / "output.log").read_text()
    first = _first(_match(runner, tmp_path, text))
    assert first["id"] == "hydra-append-existing-key" and first["verdict"] == "match"


def test_a_hydra_app_that_is_not_verl_is_not_claimed(runner: Any, tmp_path: Path) -> None:
    text = (
        "$ python bug/main.py '+polynomial={x:1, y:2, z:3}'\n\n"
        "Could not append to config. An item is already at 'polynomial'.\n\n"
        "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
    )
    result = _match(runner, tmp_path, text)
    assert _first(result)["id"] == "hydra-append-existing-key" and _first(result)["verdict"] == "possible"


def test_generic_is_a_validated_front_matter_field() -> None:
    from pydantic import ValidationError

    from kb.corpus import load_corpus
    from kb.entry import FrontMatter
    from tests.conftest import CORPUS

    entries = {e.id: e for e in load_corpus(CORPUS).entries}
    assert entries["nccl-watchdog-timeout"].meta.generic and not entries["transfer-queue-missing"].meta.generic
    base = entries["nccl-watchdog-timeout"].meta.model_dump()
    with pytest.raises(ValidationError):
        FrontMatter.model_validate(base | {"generic": "sometimes"})


def test_verl_fixtures_of_generic_entries_keep_their_verl_evidence() -> None:
    """A verl user's NCCL and OOM fixtures carry verl's frames or prefixes: still verl."""
    for rel in ["nccl-watchdog-timeout/positive-allreduce-600s.log", "critic-cuda-oom/positive-update-critic.log"]:
        text = (FIXTURES / rel).read_text()
        assert assess(split_lines(text), extract_signals(split_lines(text))).verl is True, rel


@pytest.mark.parametrize(
    "text",
    [
        # alibaba/ROLL#165, verbatim: a ROLL user's loss_agg_mode question named a verl entry's topic
        "GSPO's loss_agg_mode\nHi,\nI'm using ROLL to train with gspo, and I find that`actor/pg_loss` in my log is "
        "extremely high. The issue only manifests in GSPO. With GRPO, the `pg_loss` is normal.",
        "https://github.com/alibaba/ROLL/blob/main/docs_roll/docs/English/UserGuide/algorithms/GSPO.md",
    ],
)
def test_a_roll_user_is_read_as_another_stack(text: str) -> None:
    found = assess(split_lines(text), extract_signals(split_lines(text)))
    assert found.verl is False and found.stack == "ROLL", found


def test_rolling_in_prose_is_not_roll() -> None:
    text = "how do I roll back to the previous checkpoint after a bad rollout?"
    assert assess(split_lines(text), extract_signals(split_lines(text))).verl is None


def test_mlx_vlm_server_is_another_stack() -> None:
    # Blaizzy/mlx-vlm's server, as its users paste it (the tool-agent-image entry's near-miss fixture)
    text = "When using `mlx_vlm.server` with multi-turn conversations that include images, the server returns:\n"
    assert assess(split_lines(text), extract_signals(split_lines(text))).stack == "MLX"

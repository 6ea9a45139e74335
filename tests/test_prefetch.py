"""A command that will probably embed its input loads the exported model in a thread while it imports the
engine (indexer.onnx_model.prefetch, kb.cli.common.prefetch_model): the next load() takes that encoder, the
vectors are the ones a load in place gives, and a guess never loads torch or changes an answer."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from indexer import onnx_model
from kb.cli.common import likely_semantic
from tests.conftest import REPO

QUESTION = "how do I stop ray workers failing to register with the raylet on slurm?"
TRACEBACK = REPO / "tests" / "fixtures" / "entries" / "ray-worker-register-raylet" / "positive-slurm-driver.log"


def _drop_pending_prefetch() -> None:
    with onnx_model._PENDING_LOCK:
        pending, onnx_model._pending = onnx_model._pending, None
    if pending is not None:
        pending.join(timeout=120)


@pytest.fixture(autouse=True)
def no_leftover_prefetch() -> Iterator[None]:
    """A prefetch is once per process: one that an in-process command of another test started and nobody
    took would stand in for the one this test starts (seen in a random order on CI)."""
    _drop_pending_prefetch()
    yield
    _drop_pending_prefetch()


@pytest.fixture(scope="module")
def exported(diagnoser) -> str:  # type: ignore[no-untyped-def]
    assert diagnoser.retriever is not None  # builds the index through sentence-transformers, which exports ONNX
    model_dir = onnx_model.model_path()
    assert onnx_model.onnx_path(model_dir).is_file()
    return model_dir


def test_load_takes_the_prefetched_encoder(exported: str) -> None:
    onnx_model.prefetch(onnx_model.model_path)
    pending = onnx_model._pending
    assert pending is not None and not pending.daemon  # joined at exit, never cut off mid-load
    encoder = onnx_model.load(exported)
    assert encoder is not None and encoder is pending.encoder
    assert onnx_model._pending is None  # taken once: the next load builds its own
    fresh = onnx_model.load(exported)
    assert fresh is not None and fresh is not encoder
    assert np.array_equal(encoder.encode([QUESTION]), fresh.encode([QUESTION]))


def test_a_prefetch_for_another_model_is_not_used(exported: str, tmp_path: Path) -> None:
    onnx_model.prefetch(lambda: str(tmp_path))  # nothing exported for this directory: nothing loaded
    assert onnx_model.load(exported) is not None
    assert onnx_model._pending is None


def test_a_prefetch_for_another_cache_is_not_used(
    exported: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prefetch left by an earlier command (here: under the session's cache) is not the encoder of a load
    under another cache directory, where the exported file may be missing or broken."""
    onnx_model.load(exported)  # takes whatever an earlier test left pending
    onnx_model.prefetch(onnx_model.model_path)
    pending = onnx_model._pending
    assert pending is not None
    pending.join()
    assert pending.loaded
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path))
    assert onnx_model.load(exported) is None  # nothing is exported under the new cache


def test_a_failed_prefetch_is_raised_where_the_encoder_is_wanted(exported: str) -> None:
    def broken() -> str:
        raise OSError("model directory unreadable")

    onnx_model.prefetch(broken)
    with pytest.raises(OSError, match="unreadable"):
        onnx_model.load(exported)
    assert onnx_model.load(exported) is not None  # the next load tries again


def test_without_the_exported_file_nothing_heavy_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path))  # an empty cache: no ONNX file
    # A prefetch an earlier test left (a command that failed before it embedded anything, under the session's
    # cache) would be the one examined below: taken first, as the next command's load would take it.
    assert onnx_model.load(onnx_model.model_path()) is None
    onnx_model.prefetch(onnx_model.model_path)
    pending = onnx_model._pending
    assert pending is not None
    pending.join(timeout=60)
    assert not pending.loaded and pending.encoder is None
    assert onnx_model.load(onnx_model.model_path()) is None  # the caller falls back as before


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (QUESTION, True),
        ("why is my rollout log prob different from the training one", True),
        (TRACEBACK.read_text(), False),
        ("RuntimeError: CUDA error: out of memory", False),
        ('  File "/opt/verl/verl/trainer/main_ppo.py", line 42, in main', False),
        ("\n".join(f"step:{i} - actor/entropy:0.5" for i in range(60)), False),  # a long paste is a log
    ],
)
def test_likely_semantic(text: str, expected: bool) -> None:
    assert likely_semantic(text) is expected


@pytest.mark.parametrize("source", ["question", "traceback"])
def test_match_answers_as_without_the_prefetch(exported: str, source: str) -> None:
    """The CLI's answer with the prefetch (a question) is the one the engine gives in place."""
    from indexer import load_diagnoser

    text = QUESTION if source == "question" else TRACEBACK.read_text()
    cmd = [sys.executable, "-m", "kb", "match", "--json", "-"]
    out = subprocess.run(cmd, input=text, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert out.returncode in (0, 1), out.stderr
    expected = load_diagnoser().diagnose_input(text, top=3)
    got = json.loads(out.stdout)
    assert [m["id"] for m in got["matches"]] == [m.id for m in expected.matches]
    assert [m["confidence"] for m in got["matches"]] == [m.confidence for m in expected.matches]

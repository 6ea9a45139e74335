"""Queries embed with the exported ONNX model: the same vectors as sentence-transformers, and no torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from indexer import onnx_model
from indexer.semantic import Embedder, model_path
from kb.retriever import entry_document
from tests.conftest import REPO


@pytest.fixture(scope="module")
def embedders(diagnoser) -> tuple[Embedder, Embedder]:  # type: ignore[no-untyped-def]
    assert diagnoser.retriever is not None  # builds the index through sentence-transformers, which exports ONNX
    assert onnx_model.onnx_path(model_path()).is_file()
    onnx = Embedder()
    assert onnx.backend == "onnx"
    return onnx, Embedder(backend="torch")


def _real_inputs() -> list[str]:
    """Every input the eval sets and entry fixtures hold (the real benchmark's verbatim pastes among them)."""
    texts: list[str] = []
    for path in sorted((REPO / "tests" / "eval").rglob("*.jsonl")):
        if path.name == "holdout.jsonl":  # the frozen holdout is read by the benchmark alone
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                obj = json.loads(line)
                if "input" in obj:
                    texts.append(str(obj["input"]))
                texts += [str(m["content"]) for m in obj.get("messages", []) if m.get("role") == "user"]
    for path in sorted((REPO / "tests" / "fixtures" / "entries").rglob("*")):
        if path.is_file() and path.suffix in {".log", ".txt", ".md"}:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return texts


@pytest.mark.timeout(2400)  # two models over ~2,000 texts: minutes on two busy cores
def test_onnx_vectors_equal_sentence_transformers(embedders: tuple[Embedder, Embedder], diagnoser) -> None:  # type: ignore[no-untyped-def]
    onnx, torch = embedders
    inputs = _real_inputs()
    assert len(inputs) >= 1000
    # Every entry document and a thousand real inputs, as the ONNX path promises; more only costs minutes.
    texts = [entry_document(e) for e in diagnoser.entries.values()] + inputs[:: max(1, len(inputs) // 1000)][:1000]
    a, b = onnx.encode(texts), torch.encode(texts)
    cosine = (a * b).sum(axis=1)
    worst = int(np.argmin(cosine))
    assert cosine.min() >= 0.999, (cosine.min(), texts[worst][:200])


def test_a_question_is_answered_without_importing_torch(embedders: tuple[Embedder, Embedder]) -> None:
    code = (
        "import sys\n"
        "from indexer import load_diagnoser\n"
        f"d = load_diagnoser({str(REPO / 'corpus')!r}, issues=False)\n"
        "r = d.diagnose('how do I stop ray workers failing to register with the raylet on slurm?')\n"
        "print(r.matches[0].id if r.matches else '-', d.retriever.embedder.backend)\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=dict(os.environ), cwd=REPO
    )
    assert out.returncode == 0, out.stderr
    first, modules = out.stdout.splitlines()
    assert first == "ray-worker-register-raylet onnx"
    assert modules == "[]"


def test_a_broken_onnx_file_is_exported_again(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path))
    path = onnx_model.onnx_path(model_path())
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not an onnx graph")
    assert onnx_model.load(model_path()) is None
    assert not path.exists()
    embedder = Embedder()  # falls back to sentence-transformers and exports the file again
    assert embedder.backend == "torch" and path.is_file()
    assert onnx_model.load(model_path()) is not None


def test_the_fused_graph_maps_its_weights_from_a_file_beside_it(embedders: tuple[Embedder, Embedder]) -> None:
    plain_path = onnx_model.onnx_path(model_path())
    fused = onnx_model._fused_path(plain_path)
    assert fused.is_file() and (fused.parent / "model.data").stat().st_size > 50_000_000
    assert fused.stat().st_size < 2_000_000  # the graph alone: its weights are not parsed out of it
    texts = ["how do I stop ray workers failing to register with the raylet on slurm?", "CUDA out of memory"]
    loaded = onnx_model.load(model_path())
    assert loaded is not None
    plain = onnx_model.OnnxEncoder(model_path(), plain_path)
    np.testing.assert_allclose(loaded.encode(texts), plain.encode(texts), atol=1e-5)

"""The entries' vector index: persisted as numpy and FAISS, searched with numpy as FAISS ranks."""

from __future__ import annotations

from collections.abc import Sequence

import faiss
import numpy as np

from indexer.semantic import EntryIndex


class _Vectors:
    """An embedder of fixed random unit vectors: the index, not the model, is under test here."""

    name = "test-vectors"
    fingerprint = "test-vectors-1"

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(7)
        docs = rng.normal(size=(n, 384)).astype(np.float32)
        self.docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        self.encoded = 0

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.encoded += 1
        return self.docs[: len(texts)]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        # A query near document 3, then 11: a ranking FAISS and numpy must agree on.
        q = self.docs[3] + 0.8 * self.docs[11]
        return (q / np.linalg.norm(q))[None, :].astype(np.float32)


def test_vectors_are_saved_both_ways_and_an_older_faiss_only_index_is_read_without_the_model(
    tmp_path, monkeypatch, diagnoser
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path))
    entries = list(diagnoser.entries.values())[:40]
    vectors = _Vectors(len(entries))
    built = EntryIndex(entries, vectors, "fp")  # type: ignore[arg-type]
    assert built.rebuilt and (built.path / "entries.npy").is_file() and (built.path / "entries.faiss").is_file()

    reference = faiss.read_index(str(built.path / "entries.faiss"))
    scores, order = reference.search(vectors.encode(["q"]), 10)
    ours = [(entry_id, score) for entry_id, score, kind in built.search("q", k=10) if kind == "semantic"]
    assert [entry_id for entry_id, _ in ours] == [entries[i].id for i in order[0]]
    np.testing.assert_allclose([s for _, s in ours], np.maximum(scores[0], 0), atol=1e-6)

    (built.path / "entries.npy").unlink()  # as an earlier release left it: FAISS only
    again = EntryIndex(entries, vectors, "fp")  # type: ignore[arg-type]
    assert not again.rebuilt and vectors.encoded == 1 and (again.path / "entries.npy").is_file()
    np.testing.assert_array_equal(again.vectors, built.vectors)

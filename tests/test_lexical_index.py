"""The entries' BM25 scores as bm25s scores them, without importing bm25s (and scipy) on a query."""

from __future__ import annotations

import json

import bm25s
import numpy as np

from indexer.semantic import _BM25, tokenize
from kb.retriever import entry_document
from tests.conftest import REPO


def test_scores_and_ranking_equal_bm25s_on_every_eval_input(diagnoser) -> None:  # type: ignore[no-untyped-def]
    docs = [tokenize(entry_document(e)) for e in diagnoser.entries.values()]
    ours = _BM25(docs)
    reference = bm25s.BM25(k1=1.2, b=0.75)
    reference.index([d or ["_"] for d in docs], show_progress=False)
    queries = [
        tokenize(str(json.loads(line)["input"])[:1200])
        for path in sorted((REPO / "tests" / "eval").rglob("*.jsonl"))
        if path.name != "holdout.jsonl"  # the frozen holdout is read by the benchmark alone
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and "input" in json.loads(line)
    ]
    assert len(queries) >= 500
    for query in queries:
        ids = reference.get_tokens_ids(query)
        expected = reference.get_scores_from_ids(ids) if ids else np.zeros(len(docs), dtype=np.float32)
        np.testing.assert_allclose(ours.scores(query), expected, atol=1e-4)
        if not query:
            continue
        results, scores = reference.retrieve([query], k=8, show_progress=False)
        theirs = [(int(i), float(s)) for i, s in zip(results[0], scores[0], strict=False) if s > 0]
        mine = ours.top(query, 8)
        assert len(mine) == len(theirs), query[:20]
        if not theirs:
            continue
        # The same ranking; entries tied on the last score kept may be either of the tied ones.
        best = theirs[0][1]
        np.testing.assert_allclose([s for _, s in mine], [s / best for _, s in theirs], atol=1e-4)
        last = theirs[-1][1] / best
        assert {i for i, s in mine if s > last + 1e-4} == {i for i, s in theirs if s / best > last + 1e-4}


def test_the_cached_index_scores_as_a_fresh_one_and_a_spoiled_file_is_rebuilt(tmp_path, diagnoser) -> None:  # type: ignore[no-untyped-def]
    texts = [entry_document(e) for e in diagnoser.entries.values()]
    fresh = _BM25([tokenize(t) for t in texts])
    built = _BM25.cached(texts, tmp_path)
    (saved,) = tmp_path.glob("bm25-*.pickle")
    loaded = _BM25.cached(texts, tmp_path)
    query = tokenize("ray workers fail to register with the raylet on slurm")
    for index in (built, loaded):
        np.testing.assert_array_equal(index.scores(query), fresh.scores(query))
        assert index.top(query, 8) == fresh.top(query, 8)
    # Other texts: another file, never the first one's index.
    other = _BM25.cached(texts[:-1], tmp_path)
    assert len(list(tmp_path.glob("bm25-*.pickle"))) == 2 and other.scores(query).shape == (len(texts) - 1,)
    saved.write_bytes(b"not a pickle")
    np.testing.assert_array_equal(_BM25.cached(texts, tmp_path).scores(query), fresh.scores(query))

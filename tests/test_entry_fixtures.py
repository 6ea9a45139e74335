"""Every entry against its own fixtures, through the full engine (rules + the real embedding model).

Invariants: a positive fixture ranks its entry in the top three; a negative never gets its entry
claimed as a confident match. The exact outcome (rank, verdict, evidence lines) is kept in
``tests/fixtures/entries/<id>/expected.json``; when a rule changes on purpose, re-bless with
``pytest tests/test_entry_fixtures.py --bless``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURES


def _fixture_files(entry_dir: Path) -> list[Path]:
    return sorted(p for p in entry_dir.iterdir() if p.is_file() and p.name.startswith(("positive", "negative")))


_OUTCOMES: dict[tuple[str, str], dict] = {}  # (entry id, fixture name) -> outcome, shared by the tests below


def _outcome(diagnoser, entry_id: str, path: Path) -> dict:
    key = (entry_id, path.name)
    if key not in _OUTCOMES:
        result = diagnoser.diagnose(path.read_text(encoding="utf-8", errors="replace"), top=5)
        ids = [m.id for m in result.matches]
        mine = next((m for m in result.matches if m.id == entry_id), None)
        _OUTCOMES[key] = {
            "rank": ids.index(entry_id) + 1 if entry_id in ids else None,
            "verdict": mine.verdict if mine else None,
            "evidence_lines": sorted({e.line_no for e in mine.evidence if e.line_no}) if mine else [],
            "top": ids[0] if ids else None,
        }
    return _OUTCOMES[key]


#: One test per entry with fixtures (``-k ENTRY_ID`` selects one).
ENTRY_IDS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("entry_id", ENTRY_IDS)
def test_fixtures_match_their_entries(diagnoser, request, entry_id: str) -> None:
    if entry_id not in diagnoser.entries:
        pytest.skip(f"{entry_id}: fixtures without an entry in this corpus")
    bless = request.config.getoption("--bless")
    failures, changed = [], []
    entry_dir = FIXTURES / entry_id
    snapshot_path = entry_dir / "expected.json"
    snapshot = json.loads(snapshot_path.read_text()) if snapshot_path.exists() else {}
    fresh = {}
    for path in _fixture_files(entry_dir):
        got = _outcome(diagnoser, entry_id, path)
        fresh[path.name] = got
        if path.name.startswith("positive"):
            if got["rank"] is None or got["rank"] > 3:
                failures.append(f"{entry_id}/{path.name}: entry not in the top 3 (top is {got['top']})")
        elif got["verdict"] == "match":
            failures.append(f"{entry_id}/{path.name}: near miss claimed as a confident match")
        if not bless and snapshot.get(path.name) != got:
            changed.append(f"{entry_id}/{path.name}: expected {snapshot.get(path.name)}, got {got}")
    if bless:
        snapshot_path.write_text(json.dumps(fresh, indent=1, sort_keys=True) + "\n")
    assert not failures, "\n".join(failures)
    if changed and not bless:
        pytest.fail("fixture outcomes changed (re-bless with --bless if intended):\n" + "\n".join(changed))


def test_positive_fixtures_rank_their_entry_first(diagnoser) -> None:
    top1 = positives = 0
    for entry_id in sorted(diagnoser.entries):
        entry_dir = FIXTURES / entry_id
        if not entry_dir.is_dir():
            continue
        for path in _fixture_files(entry_dir):
            if path.name.startswith("positive"):
                positives += 1
                top1 += _outcome(diagnoser, entry_id, path)["rank"] == 1
    assert top1 / positives >= 0.95, f"only {top1}/{positives} positive fixtures rank their entry first"

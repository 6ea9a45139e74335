"""Preflight held to verl's own verdicts: tests/fixtures/preflight/verl-<V>.jsonl records, for generated configs,
what verl's start-up validation did at release V (run in a venv with that wheel by scripts/preflight_oracle/; see
the fixtures' README). Per release:

- verdict agreement: preflight finds an error iff verl failed -- target 100 %;
- same check: where verl failed, the first error's ``verl_message`` regex (for that release) matches the message
  verl raised -- target >= 98 %.

A release whose fixture file does not exist is skipped, and the test says so; the figures are printed (-s)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kb.preflight import preflight
from kb.preflight.checks import CHECKS
from kb.versions import KNOWN_RELEASES
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "preflight"
VERDICT_TARGET = 1.0
CHECK_TARGET = 0.98


def existed_there(path: str) -> bool:
    """Whether a local path existed on the machine that recorded the fixtures: the generator's dummy paths are
    under /nonexistent/ (scripts/preflight_oracle/generate.py, MODEL), the one real directory is the tiny model
    the critic's config loads (CRITIC_MODEL). This machine's file system says nothing about that one."""
    return not path.startswith("/nonexistent/")


def _cases(release: str) -> list[dict[str, Any]]:
    path = FIXTURES / f"verl-{release}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _first_regex(result: Any, release: str) -> str | None:
    errors = [f for f in result.findings if f.severity == "error"]
    return CHECKS[errors[0].check].message_regex(release) if errors else None


@pytest.mark.parametrize("release", KNOWN_RELEASES)
def test_preflight_agrees_with_verl(release: str) -> None:
    path = FIXTURES / f"verl-{release}.jsonl"
    # Every release preflight models has verl's own verdicts recorded; a lost file must fail, not skip.
    assert path.is_file(), f"{path.relative_to(REPO)} is missing: run scripts/preflight_oracle for verl {release}"
    cases = _cases(release)
    verdict_ok = 0
    fails = 0
    same = 0
    wrong_verdict: list[str] = []
    wrong_check: list[str] = []
    for case in cases:
        result = preflight(case["overrides"], release, path_exists=existed_there)
        predicted = "starts" if result.starts else "fails"
        if predicted == case["verdict"]:
            verdict_ok += 1
        else:
            first = result.errors[0].check if result.errors else None
            wrong_verdict.append(
                f"{case['id']}: verl {case['verdict']} ({case.get('message')!r:.160}), preflight {predicted} ({first})"
            )
        if case["verdict"] == "fails":
            fails += 1
            regex = _first_regex(result, release)
            message = case.get("message") or ""
            if regex is not None and re.search(regex, message):
                same += 1
            else:
                first = result.errors[0].check if result.errors else None
                wrong_check.append(f"{case['id']}: verl said {message!r:.200}; preflight's first error {first}")
    verdict_rate = verdict_ok / len(cases)
    check_rate = same / fails if fails else 1.0
    print(
        f"\nverl {release}: {len(cases)} configs ({fails} fail in verl): verdict agreement "
        f"{verdict_rate:.1%} ({verdict_ok}/{len(cases)}), same check {check_rate:.1%} ({same}/{fails})"
    )
    for line in (wrong_verdict + wrong_check)[:15]:
        print("   ", line)
    assert verdict_rate >= VERDICT_TARGET, "\n".join(wrong_verdict[:20])
    assert check_rate >= CHECK_TARGET, "\n".join(wrong_check[:20])


def test_the_fixtures_keep_to_the_contract() -> None:
    files = sorted(FIXTURES.glob("verl-*.jsonl"))
    assert files, "no preflight fixtures"
    for path in files:
        release = path.stem.removeprefix("verl-")
        assert release in KNOWN_RELEASES, path.name
        cases = _cases(release)
        assert len({c["id"] for c in cases}) == len(cases), f"{path.name}: ids are not unique"
        for case in cases:
            assert case["release"] == release and case["verdict"] in ("starts", "fails"), case["id"]
            assert isinstance(case["overrides"], list), case["id"]

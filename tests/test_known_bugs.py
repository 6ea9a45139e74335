"""Known bugs by version: `fixed_in` is checked against the releases, and the engine answers by release."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from indexer import load_diagnoser
from kb.cli import main
from tests.conftest import GOOD_BODY, entry_text

PR = "https://github.com/verl-project/verl/pull/3461"
BUG = """\
id: lora-sync-bug
title: LoRA weights never reach the rollout engine after sleep
area: rollout
verl: "{verl}"
fixed_in: {{verl: "{fixed}", pr: "{pr}"}}
symptoms:
  - regex: 'LoRA adapter weights were not loaded into the rollout engine'
    weight: {weight}
fix:
  overrides:
    - {{key: actor_rollout_ref.rollout.layered_summon, value: true, verl: "{verl}"}}
  actions:
    - Upgrade verl.
sources:
  - {source}
"""


def _entry(verl: str = ">=0.5,<0.6", fixed: str = "0.6.0", weight: float = 0.9, source: str = PR) -> str:
    return entry_text(BUG.format(verl=verl, fixed=fixed, pr=PR, weight=weight, source=source), GOOD_BODY)


def _validate(make_corpus, text: str) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    root = make_corpus({"rollout/lora-sync-bug.md": text})
    result = CliRunner().invoke(main, ["corpus", "validate", "--corpus", str(root)])
    return result.exit_code, result.output


def test_a_known_bug_validates_when_its_range_ends_at_the_fix(make_corpus) -> None:  # type: ignore[no-untyped-def]
    code, out = _validate(make_corpus, _entry())
    assert code == 0, out


def test_validate_names_each_broken_known_bug(make_corpus) -> None:  # type: ignore[no-untyped-def]
    code, out = _validate(make_corpus, _entry(verl=">=0.5"))
    assert code == 1 and "covers 0.6.0, 0.6.1" in out and "end it with ',<0.6.0'" in out, out
    code, out = _validate(make_corpus, _entry(fixed="0.6.5"))
    assert code == 1 and "fixed_in.verl 0.6.5 is no known release" in out, out
    code, out = _validate(make_corpus, _entry(source="https://github.com/verl-project/verl/issues/3437"))
    assert code == 1 and f"cite the fix {PR} in sources" in out, out
    code, out = _validate(make_corpus, _entry().replace(PR, "https://example.com/pull/1", 1))
    assert code == 1 and "must be a verl pull request URL" in out, out


def _diagnose(make_corpus, weight: float, release: str | None):  # type: ignore[no-untyped-def]
    root: Path = make_corpus({"rollout/lora-sync-bug.md": _entry(weight=weight)})
    diagnoser = load_diagnoser(root, semantic=False, issues=False)
    head = f"verl=={release}\n" if release else ""
    return diagnoser.diagnose(head + "WARNING LoRA adapter weights were not loaded into the rollout engine\n")


def test_on_an_affected_release_the_answer_is_the_workaround_and_the_fix(make_corpus) -> None:  # type: ignore[no-untyped-def]
    m = _diagnose(make_corpus, 0.9, "0.5.0").matches[0]
    assert m.verdict == "match" and m.known_bug is not None and m.known_bug.affected is True
    assert m.known_bug.fixed_in == "0.6.0" and m.known_bug.pr == PR
    assert "fixed in verl 0.6.0" in m.known_bug.summary()
    assert [o.line for o in m.overrides] == ["actor_rollout_ref.rollout.layered_summon=True"]


def test_on_a_fixed_release_it_is_a_near_miss_unless_the_symptom_is_exact(make_corpus) -> None:  # type: ignore[no-untyped-def]
    near = _diagnose(make_corpus, 0.9, "0.7.0").matches[0]
    assert near.verdict == "possible" and near.known_bug is not None and near.known_bug.affected is False
    assert "already has the fix" in near.known_bug.summary()
    exact = _diagnose(make_corpus, 0.97, "0.7.0").matches[0]
    assert exact.verdict == "match"


def test_with_the_release_unknown_the_answer_says_where_it_was_fixed(make_corpus) -> None:  # type: ignore[no-untyped-def]
    m = _diagnose(make_corpus, 0.9, None).matches[0]
    assert m.verdict == "match" and m.known_bug is not None and m.known_bug.affected is None
    assert "on an older release" in m.known_bug.summary()

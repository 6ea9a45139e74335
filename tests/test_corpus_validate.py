"""`corpus validate`: each kind of broken entry is named by file and line; the rest still load."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from kb.cli import main
from tests.conftest import GOOD_BODY, GOOD_FRONT, entry_text


def _validate(runner, root: Path) -> tuple[int, str]:
    result = runner.invoke(main, ["corpus", "validate", "--corpus", str(root)])
    return result.exit_code, result.output


def test_good_corpus_passes(runner, make_corpus, good_entry):
    root = make_corpus({"ray/ray-register.md": good_entry()})
    code, out = _validate(runner, root)
    assert code == 0, out
    assert "1 entries valid" in out


def _broken(runner, make_corpus, good_entry, rel: str, text: str | bytes) -> str:
    root = make_corpus({"ray/ray-good.md": good_entry("ray-good"), rel: text})
    code, out = _validate(runner, root)
    assert code == 1, out
    assert "ray-good.md" not in out, "one broken entry must not hide or taint the others"
    assert "Traceback" not in out
    return out


@pytest.mark.parametrize(
    ("change", "line", "message"),
    [
        (lambda f: f.replace("area: ray", "area: rays"), 4, "unknown area 'rays'"),
        (lambda f: f.replace("title: Ray workers cannot register with the raylet\n", ""), 2, "'title' is required"),
        (lambda f: f.replace("    weight: 0.95", "    weight: 3"), 8, "less than or equal to 1"),
        (lambda f: f + "colour: blue\n", 20, "'colour' is not a field"),
        (lambda f: f.replace("'Unable to register worker with raylet'", "'(a+)\\1'"), 7, "back-reference"),
        (lambda f: f.replace("'Unable to register worker with raylet'", "'(?<=x)raylet'"), 7, "lookahead/lookbehind"),
        (lambda f: f.replace("'Unable to register worker with raylet'", "'(unclosed'"), 7, "does not compile"),
        (
            lambda f: f.replace(
                "sources:\n  - https://github.com/verl-project/verl/blob/main/docs/faq/faq.rst\n", "sources: []\n"
            ),
            18,
            "'sources'",
        ),
        (
            lambda f: f.replace("ray_kwargs.ray_init.num_cpus, value: 16", "trainer.nnodez, value: 2"),
            14,
            "closest keys in 0.9.1: trainer.nnodes",
        ),
        (
            lambda f: f.replace("ray_kwargs.ray_init.num_cpus, value: 16", "ray_init.num_cpus, value: 16"),
            14,
            "ignored by verl 0.6.0",
        ),
        (
            lambda f: f.replace("ray_kwargs.ray_init.num_cpus", "+ray_kwargs.ray_init.num_cpus"),
            14,
            "without Hydra's prefix",
        ),
        (lambda f: f.replace('verl: ">=0.4,<0.6"', 'verl: "<0.3"'), 15, "covers no release"),
        (
            lambda f: f.replace(
                "symptoms:\n  - regex: 'Unable to register worker with raylet'\n    weight: 0.95\n", ""
            ),
            2,
            "at least one symptom or metric",
        ),
    ],
    ids=[
        "area",
        "missing-title",
        "weight",
        "extra-field",
        "backref",
        "lookbehind",
        "bad-regex",
        "no-sources",
        "unknown-key",
        "ignored-key",
        "plus-prefix",
        "uncheckable-range",
        "no-symptom",
    ],
)
def test_broken_front_matter_is_named_by_file_and_line(runner, make_corpus, good_entry, change, line, message):
    front = change(GOOD_FRONT.format(id="ray-bad", area="ray"))
    out = _broken(runner, make_corpus, good_entry, "ray/ray-bad.md", entry_text(front))
    assert re.search(rf"ray-bad\.md:{line}: .*{re.escape(message)}", out), out


def test_missing_and_misordered_sections(runner, make_corpus, good_entry):
    body = GOOD_BODY.replace("## Check that it worked\n\nThe errors are gone.\n", "")
    out = _broken(
        runner, make_corpus, good_entry, "ray/ray-bad.md", entry_text(GOOD_FRONT.format(id="ray-bad", area="ray"), body)
    )
    assert "ray-bad.md:21: body section '## Check that it worked' is missing" in out
    swapped = (
        GOOD_BODY.replace("## What you see", "## TMP").replace("## Fix", "## What you see").replace("## TMP", "## Fix")
    )
    out = _broken(
        runner,
        make_corpus,
        good_entry,
        "ray/ray-bad.md",
        entry_text(GOOD_FRONT.format(id="ray-bad", area="ray"), swapped),
    )
    assert "in the order" in out


def test_duplicate_ids_across_areas(runner, make_corpus, good_entry):
    root = make_corpus(
        {"ray/ray-dup.md": good_entry("ray-dup"), "network/ray-dup.md": good_entry("ray-dup", "network")}
    )
    code, out = _validate(runner, root)
    assert code == 1
    assert "id 'ray-dup' is also used by" in out


def test_id_and_area_must_match_file_and_folder(runner, make_corpus, good_entry):
    out = _broken(runner, make_corpus, good_entry, "network/ray-bad.md", good_entry("ray-other"))
    assert "network/ray-bad.md:2: id 'ray-other' does not match the file name" in out
    assert "network/ray-bad.md:4: area 'ray' does not match the folder 'network/'" in out


def test_missing_fixtures(runner, make_corpus, good_entry):
    root = make_corpus({"ray/ray-good.md": good_entry("ray-good")}, with_fixtures=False)
    (root.parent / "tests" / "fixtures" / "entries").mkdir(parents=True)  # a checkout's fixture root, empty
    code, out = _validate(runner, root)
    assert code == 1
    assert "no fixtures: " in out and "ray-good/ must hold positive*.log and negative*.log" in out


def test_a_copied_corpus_stands_alone(runner, tmp_path):
    from tests.conftest import CORPUS

    copy = tmp_path / "elsewhere" / "corpus"
    shutil.copytree(CORPUS, copy)
    code, out = _validate(runner, copy)
    assert code == 0, out
    assert out.strip().endswith(
        "entries valid (fixtures not checked: no "
        + str(tmp_path / "elsewhere" / "tests" / "fixtures" / "entries")
        + "; --fixtures DIR names them)"
    )
    result = runner.invoke(main, ["corpus", "validate", "--corpus", str(copy), "--fixtures", str(tmp_path / "none")])
    assert result.exit_code == 1 and "no fixtures: " in result.output  # named fixtures must exist


def test_no_front_matter_and_bad_yaml(runner, make_corpus, good_entry):
    out = _broken(runner, make_corpus, good_entry, "ray/ray-bad.md", "# just a heading\n")
    assert "ray-bad.md:1: no YAML front matter" in out
    out = _broken(runner, make_corpus, good_entry, "ray/ray-bad.md", "---\nid: [unclosed\ntitle: x\n---\n")
    assert re.search(r"ray-bad\.md:\d+: front matter is not valid YAML", out), out


def test_non_utf8_entry(runner, make_corpus, good_entry):
    raw = (
        entry_text(GOOD_FRONT.format(id="ray-bad", area="ray"))
        .encode()
        .replace(b"Ray runs inside", b"Ray runs \xff inside")
    )
    out = _broken(runner, make_corpus, good_entry, "ray/ray-bad.md", raw)
    assert re.search(r"ray-bad\.md:10: not UTF-8 text \(byte 0xff", out), out


def test_yaml_bomb_is_refused_quickly(runner, make_corpus, good_entry):
    bomb = "---\n" + 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    for i, (prev, name) in enumerate(zip("abcdefgh", "bcdefghi", strict=True)):
        bomb += f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        del i
    bomb += "---\n"
    out = _broken(runner, make_corpus, good_entry, "ray/ray-bad.md", bomb)
    assert "ray-bad.md:3: front matter is not valid YAML: YAML aliases (*name) are not allowed" in out


def test_missing_and_empty_corpus_dir(runner, tmp_path):
    code, out = _validate(runner, tmp_path / "nope")
    assert code == 2 and "does not exist" in out and "Traceback" not in out
    (tmp_path / "empty").mkdir()
    code, out = _validate(runner, tmp_path / "empty")
    assert code == 2 and "no entries under" in out


def test_bundled_corpus_is_valid(runner):
    from tests.conftest import CORPUS

    result = runner.invoke(main, ["corpus", "validate", "--corpus", str(CORPUS)])
    assert result.exit_code == 0, result.output

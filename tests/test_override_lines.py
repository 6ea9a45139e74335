"""Every override line verl-doctor prints survives a shell and reads back in Hydra as meant, on every
surface and width: lists as Hydra lists, quoting a shell keeps, never a cut line."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys

from click.testing import CliRunner
from hydra.core.override_parser.overrides_parser import OverridesParser

from kb.cli import main
from kb.overrides import render_override
from tests.conftest import CORPUS, GOOD_BODY, REPO, entry_text

LOGGER_ENTRY = """\
id: logger-list
title: trainer.logger names a backend verl does not know
area: tooling
verl: ">=0.4"
symptoms:
  - regex: 'logger .{{0,40}} is not supported'
fix:
  overrides:
    - {{key: trainer.logger, value: {value}, verl: ">=0.4"}}
sources:
  - https://github.com/verl-project/verl/blob/main/verl/utils/tracking.py
"""


def test_a_list_renders_as_a_hydra_list_one_shell_word() -> None:
    line = render_override("trainer.logger", ["console", "wandb"], "0.9.1")
    assert line == "'trainer.logger=[console,wandb]'"
    (word,) = shlex.split(line)
    parsed = OverridesParser.create().parse_override(word)
    assert parsed.key_or_group == "trainer.logger" and parsed.value() == ["console", "wandb"]
    assert render_override("ray_kwargs.ray_init.num_cpus", 16, "0.9.1") == "ray_kwargs.ray_init.num_cpus=16"


def test_validate_refuses_a_list_written_as_a_string(make_corpus) -> None:  # type: ignore[no-untyped-def]
    root = make_corpus({"tooling/logger-list.md": entry_text(LOGGER_ENTRY.format(value="\"['console']\""), GOOD_BODY)})
    result = CliRunner().invoke(main, ["corpus", "validate", "--corpus", str(root)])
    assert result.exit_code == 1 and "write a list as a YAML list" in result.output, result.output
    root = make_corpus({"tooling/logger-list.md": entry_text(LOGGER_ENTRY.format(value="[console]"), GOOD_BODY)})
    result = CliRunner().invoke(main, ["corpus", "validate", "--corpus", str(root)])
    assert result.exit_code == 0, result.output


def test_no_bundled_line_is_cut_when_piped_at_80_columns() -> None:
    """`corpus show` of every entry through a pipe at 80 columns prints each rendered line whole."""
    from kb.corpus import load_corpus
    from kb.engine import rendered_overrides

    entries = load_corpus(CORPUS).entries
    longest = max(entries, key=lambda e: max((len(o.line) for o in rendered_overrides(e, "0.9.1")), default=0))
    expected = [o.line for o in rendered_overrides(longest, "0.9.1")]
    assert max(len(line) for line in expected) > 70
    out = subprocess.run(
        [sys.executable, "-m", "kb", "corpus", "show", longest.id, "--verl-version", "0.9.1"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "80"},
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    printed = out.stdout.splitlines()
    for line in expected:
        assert any(p.startswith(line) for p in printed), (line, printed)
    assert "…" not in "".join(p for p in printed if "=" in p)

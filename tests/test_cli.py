"""The command line as a package: one group, one set of exit codes, one ``--corpus`` option."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
import pytest
from click.testing import CliRunner

from kb.cli import common, main
from tests.conftest import REPO

if TYPE_CHECKING:
    from kb.engine import Diagnoser


def _commands(group: click.Group, prefix: str = "") -> dict[str, click.Command]:
    out: dict[str, click.Command] = {}
    for name, cmd in group.commands.items():
        out[prefix + name] = cmd
        if isinstance(cmd, click.Group):
            out.update(_commands(cmd, f"{prefix}{name} "))
    return out


def test_an_internal_error_is_one_line_and_exit_code_3(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_a: object, **_k: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.delenv("VERL_DOCTOR_DEBUG", raising=False)
    monkeypatch.setattr(common, "build_diagnoser", broken)
    r = runner.invoke(main, ["match", "-"], input="x\n")
    assert r.exit_code == common.EXIT_INTERNAL == 3
    assert "internal error: RuntimeError: boom" in r.output and "Traceback" not in r.output


def test_every_corpus_option_is_the_same_one() -> None:
    helps = {
        name: next(p.help for p in cmd.params if p.name == "corpus_path")
        for name, cmd in _commands(main).items()
        if any(p.name == "corpus_path" for p in cmd.params)
    }
    assert {"match", "scan", "ask", "mcp", "tui", "serve", "eval", "index", "corpus list"} <= set(helps)
    assert set(helps.values()) == {"Corpus directory (default: the bundled corpus, or $VERL_DOCTOR_CORPUS)."}


def test_python_dash_m_kb_is_the_command_line() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kb", "--help"], capture_output=True, text=True, cwd=REPO, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("Usage: verl-doctor") and "check-overrides" in out.stdout


def test_the_suite_never_reads_the_users_cache(diagnoser: Diagnoser, isolated_from_the_user: Path) -> None:
    from kb.cache import cache_dir

    assert cache_dir() == isolated_from_the_user != Path(os.path.expanduser("~/.cache/verl-doctor"))
    archive = diagnoser.issue_archive
    assert archive is not None and archive.similar("Unable to register worker with raylet") == []


def test_corpus_list_and_show_json_print_the_apis_entry_model(runner: CliRunner) -> None:
    from pydantic import TypeAdapter

    from kb.entry_detail import EntryDetail

    listed = runner.invoke(main, ["corpus", "list", "--json", "--area", "config"])
    assert listed.exit_code == 0, listed.output
    entries = TypeAdapter(list[EntryDetail]).validate_json(listed.output)
    assert entries and {e.area for e in entries} == {"config"}
    shown = runner.invoke(main, ["corpus", "show", "ray-init-num-cpus-renamed", "--json", "--verl-version", "0.9.1"])
    assert shown.exit_code == 0, shown.output
    entry = EntryDetail.model_validate_json(shown.output)
    assert entry.id == "ray-init-num-cpus-renamed" and entry.conditions and entry.symptoms[0].regex
    assert all(o.line.startswith(("ray_kwargs.", "+ray_kwargs.")) for o in entry.overrides)
    assert '"check": {\n    "text"' in shown.output and "null" not in shown.output.split('"overrides"')[0]
    bad = runner.invoke(main, ["corpus", "show", "ray-init-num-cpus-renamed", "--json", "--verl-version", "nope"])
    assert bad.exit_code == common.EXIT_USAGE and "not a version number" in bad.output


def test_match_jsonl_prints_the_batch_models(runner: CliRunner) -> None:
    import json

    from kb.batch import BatchError, BatchResult

    lines = [json.dumps({"id": 7, "input": "Unable to register worker with raylet"}), "[]"]
    r = runner.invoke(main, ["match", "--jsonl", "--no-semantic"], input="\n".join(lines) + "\n")
    first, second = r.output.splitlines()
    assert first.startswith('{"id":7,"line":1,')  # the request's id and line first, then the result
    assert BatchResult.model_validate_json(first).matches[0].id == "ray-worker-register-raylet"
    assert BatchError.model_validate_json(second) == BatchError(
        id=None, line=2, error="each line must be a JSON object with a string 'input'"
    )

"""The README's command table is the click help's, its request-field table kb/request_fields.py's:
regenerate them with ``python scripts/update_readme.py``."""

from __future__ import annotations

from kb.cli import main
from kb.cli.reference import FIELDS_END, FIELDS_START, command_table, readme_table, replace_table, request_table
from tests.conftest import REPO


def test_the_command_table_is_the_click_help() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert readme_table(readme) == command_table(main), "README drifted: run python scripts/update_readme.py"


def test_the_table_has_every_command_and_drift_is_seen() -> None:
    table = command_table(main)
    for command in ("match", "scan", "corpus validate", "issues import", "check-overrides", "tui", "eval"):
        assert f"| `verl-doctor {command}" in table
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    drifted = replace_table(readme, table.replace("Forget every imported archive.", "Forget nothing."))
    assert readme_table(drifted) != table
    assert replace_table(drifted, table) == readme


def test_the_request_field_table_is_the_code_s() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = request_table(main)
    assert readme_table(readme, FIELDS_START, FIELDS_END) == table, "README drifted: run scripts/update_readme.py"
    for cell in ("| `input` |", "`POST /v1/diagnose`", "`match [FILE\\|-]`", "`ask --verl-version`", "`text` (MCP"):
        assert cell in table, cell


def test_the_docs_name_the_span_of_known_releases() -> None:
    """Prose that names "every release from A to B" names kb.versions.KNOWN_SPAN (messages derive it)."""
    import re

    from kb.versions import KNOWN_SPAN

    span = re.compile(r"every release from\s+(\d+\.\d+\.\d+)\s+to\s+(\d+\.\d+\.\d+)")
    found = {
        doc: [f"{a} to {b}" for a, b in span.findall((REPO / doc).read_text(encoding="utf-8"))]
        for doc in ("README.md", "corpus/README.md")
    }
    assert all(found.values()), found
    assert {doc: spans for doc, spans in found.items() if set(spans) != {KNOWN_SPAN}} == {}

"""Rewrite the README's command table from the click help and its request-field table from
kb/request_fields.py (``python scripts/update_readme.py``); ``--check`` only says whether they are current
(exit 1 when not). ``tests/test_readme.py`` runs the check."""

from __future__ import annotations

import sys
from pathlib import Path

from kb.cli import main
from kb.cli.reference import FIELDS_END, FIELDS_START, command_table, replace_table, request_table

README = Path(__file__).resolve().parent.parent / "README.md"


def run(check: bool) -> int:
    text = README.read_text(encoding="utf-8")
    new = replace_table(text, command_table(main))
    new = replace_table(new, request_table(main), FIELDS_START, FIELDS_END)
    if new == text:
        return 0
    if check:
        print(f"{README.name}: a generated table differs from the code; run scripts/update_readme.py")
        return 1
    README.write_text(new, encoding="utf-8")
    print(f"{README.name}: tables rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(run("--check" in sys.argv[1:]))

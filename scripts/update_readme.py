"""Rewrite the README's command table from the click help (``python scripts/update_readme.py``);
``--check`` only says whether it is current (exit 1 when not). ``tests/test_readme.py`` runs the check."""

from __future__ import annotations

import sys
from pathlib import Path

from kb.cli import main
from kb.cli.reference import command_table, readme_table, replace_table

README = Path(__file__).resolve().parent.parent / "README.md"


def run(check: bool) -> int:
    text = README.read_text(encoding="utf-8")
    table = command_table(main)
    if readme_table(text) == table:
        return 0
    if check:
        print(f"{README.name}: the command table differs from the click help; run scripts/update_readme.py")
        return 1
    README.write_text(replace_table(text, table), encoding="utf-8")
    print(f"{README.name}: command table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(run("--check" in sys.argv[1:]))

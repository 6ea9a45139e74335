"""The README's command table, written from the click commands themselves (their usage, first help
paragraph and options), so that the two cannot drift: ``scripts/update_readme.py`` rewrites the table and
``tests/test_readme.py`` fails when the README's copy differs."""

from __future__ import annotations

import click

#: Where the README says more about a command.
SEE_ALSO = {
    "scan": "[Scanning a job directory](#scanning-a-job-directory)",
    "ask": "[Asking in words](#asking-in-words-and-past-issues)",
    "issues import": "[Asking in words](#asking-in-words-and-past-issues)",
    "serve": "[HTTP API](#http-api-faq-page-and-mcp)",
    "mcp": "[HTTP API](#http-api-faq-page-and-mcp)",
    "tui": "[The TUI](#the-tui)",
    "check-overrides": "[check-overrides](#check-overrides)",
    "preflight": "[Preflight](#preflight)",
}

START = "<!-- commands: generated from the click help by scripts/update_readme.py; do not edit by hand -->"
END = "<!-- end of commands -->"


def _leaves(group: click.Group, ctx: click.Context, prefix: str = "") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        if isinstance(cmd, click.Group):
            out += _leaves(cmd, ctx, f"{prefix}{name} ")
        else:
            out.append((prefix + name, cmd))
    return out


def _summary(cmd: click.Command) -> str:
    """The help's first paragraph, on one line."""
    first = (cmd.help or "").strip().split("\n\n")[0]
    return " ".join(first.split())


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def command_table(main: click.Group) -> str:
    """One row per command: its usage, what its help says first, its options, and where to read more."""
    ctx = click.Context(main, info_name="verl-doctor")
    rows = ["| command | what it does | options |", "|---|---|---|"]
    for path, cmd in _leaves(main, ctx):
        sub = click.Context(cmd, info_name=path, parent=ctx)
        args = " ".join(p.make_metavar(sub) for p in cmd.params if isinstance(p, click.Argument))
        options = [
            max(p.opts, key=len)
            for p in cmd.params
            if isinstance(p, click.Option) and not p.hidden and p.name != "help"
        ]
        what = _summary(cmd)
        if path in SEE_ALSO:
            what += f" See {SEE_ALSO[path]}."
        usage = f"verl-doctor {path}" + (f" {args}" if args else "")
        opts = ", ".join(f"`{o}`" for o in options)
        rows.append(f"| `{_cell(usage)}` | {_cell(what)} | {opts} |")
    return "\n".join(rows) + "\n"


def replace_table(readme: str, table: str) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    head, rest = readme.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{table}{END}{tail}"


def readme_table(readme: str) -> str:
    """The table the README holds between the markers."""
    return readme.split(START, 1)[1].split(END, 1)[0].lstrip("\n")

"""The README's reference tables, written from the code so that they cannot drift: the command table from
the click commands themselves (their usage, first help paragraph and options), the request-field table
from kb/request_fields.py (with each CLI spelling read from click). ``scripts/update_readme.py`` rewrites
them and ``tests/test_readme.py`` fails when the README's copy differs."""

from __future__ import annotations

import click

from kb.request_fields import REQUEST_FIELDS

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


FIELDS_START = "<!-- request fields: generated from kb/request_fields.py by scripts/update_readme.py -->"
FIELDS_END = "<!-- end of request fields -->"


def _cli_spelling(main: click.Group, path: str, param_name: str) -> str:
    """How the command line spells a field: ``ask --verl-version``, or ``match [FILE|-]`` for an argument."""
    ctx = click.Context(main, info_name="verl-doctor")
    cmd: click.Command | None = main
    for part in path.split():
        cmd = cmd.get_command(ctx, part) if isinstance(cmd, click.Group) else None
    if cmd is None:
        raise LookupError(f"no command '{path}'")
    param = next((p for p in cmd.params if p.name == param_name), None)
    if param is None:
        raise LookupError(f"'{path}' has no parameter '{param_name}'")
    if isinstance(param, click.Argument):
        return f"{path} {param.make_metavar(click.Context(cmd, info_name=path, parent=ctx))}"
    return f"{path} {max(param.opts, key=len)}"


def request_table(main: click.Group) -> str:
    """One row per request field: what it means and where each surface takes it, with the old names."""
    rows = [
        "| field | what it is | HTTP | MCP tools | CLI | old names still accepted |",
        "|---|---|---|---|---|---|",
    ]
    for f in REQUEST_FIELDS:
        http = ", ".join(f"`{_cell(r)}`" for r in f.http)
        mcp = ", ".join(f"`{t}`" for t in f.mcp)
        cli = ", ".join(f"`{_cell(_cli_spelling(main, path, name))}`" for path, name in f.cli)
        old = ", ".join(f"`{a.old}` ({a.surface} `{_cell(a.where)}`)" for a in f.aliases)
        what = f.meaning + (f". {f.note}" if f.note else "")
        rows.append(f"| `{f.name}` | {_cell(what)} | {http} | {mcp} | {cli} | {old} |")
    return "\n".join(rows) + "\n"


def replace_table(readme: str, table: str, start: str = START, end: str = END) -> str:
    """``readme`` with the text between the markers replaced by ``table``."""
    head, rest = readme.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{table}{end}{tail}"


def readme_table(readme: str, start: str = START, end: str = END) -> str:
    """The table the README holds between the markers."""
    return readme.split(start, 1)[1].split(end, 1)[0].lstrip("\n")

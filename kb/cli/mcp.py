"""``verl-doctor mcp``: the MCP tools over stdio, for IDEs and chat clients that launch a local server.

stdout carries the protocol and nothing else: messages go to stderr, and the SDK's stdio transport
diverts fd 1 to stderr while it owns the wire.
"""

from __future__ import annotations

from pathlib import Path

import click

from kb.cli import common
from kb.cli.common import corpus_option, fail


@click.command("mcp")
@corpus_option
@click.option(
    "--scan-root",
    "scan_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="A directory the scan tool may read (repeatable); without one, scans are refused.",
)
@click.option("--no-semantic", is_flag=True, help="Rules and lexical search only: never load the embedding model.")
def mcp_cmd(corpus_path: str | None, scan_roots: tuple[str, ...], no_semantic: bool) -> None:
    """Serve the MCP tools (diagnose, ask, scan, search_faq, get_entry, check_overrides, preflight) and the
    FAQ entries as resources over stdio.

    \b
    Tools (parameters as on the HTTP API; see the README's request fields):
      diagnose         input, top: a traceback, log excerpt or question -> ranked known problems and fixes
      ask              question, earlier, verl_version, top: an answer in words citing the entries
      scan             path: a job directory inside a --scan-root -> incidents across ranks
      search_faq       query, top: entries by words, an error message or an id
      get_entry        entry_id, verl_version: one entry, its overrides for a verl release
      check_overrides  overrides, input, verl_version: Hydra overrides checked before submitting
      preflight        input, verl_version, nnodes, gpus_per_node: would verl start with this launch?
    Resources: verl-doctor://entries (the index) and verl-doctor://entries/{id} (an entry's Markdown).

    \b
    claude mcp add verl-doctor -- verl-doctor mcp --scan-root ~/jobs
    {"mcpServers": {"verl-doctor": {"command": "verl-doctor", "args": ["mcp"]}}}

    The same server runs over streamable HTTP at /mcp under `verl-doctor serve`.
    """
    roots: list[Path] = []
    for root in scan_roots:
        path = Path(root).expanduser()
        if not path.is_dir():
            fail(f"--scan-root {root} is not a directory")
        roots.append(path.resolve())

    from server.mcp_server import MCPSetup, build_server

    diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    build_server(diagnoser, MCPSetup(scan_roots=roots, warm_up=not no_semantic)).run("stdio")

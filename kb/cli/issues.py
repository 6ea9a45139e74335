"""``verl-doctor issues import|status|search|clear``: the archive of past GitHub issues."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli.common import EXIT_FINDINGS, EXIT_OK, fail

if TYPE_CHECKING:
    from indexer.semantic import Embedder


@click.group("issues")
def issues_group() -> None:
    """An archive of past GitHub issues, listed beside the entries by `match`, `ask` and the API.

    \b
    gh issue list -R verl-project/verl --state all --limit 5000 \\
        --json number,title,body,url,state,labels,comments > verl-issues.json
    verl-doctor issues import verl-issues.json
    """


@issues_group.command("import")
@click.argument("export", type=click.Path(dir_okay=False))
@click.option("--no-embed", is_flag=True, help="Do not embed now (lexical search only until the model is loaded).")
def issues_import(export: str, no_embed: bool) -> None:
    """Import a GitHub issues export (gh issue list --json ... or the REST API's issue objects) as the archive."""
    from indexer.issues import import_export
    from kb.issues import ExportError

    path = Path(export)
    if not path.is_file():
        fail(f"{export}: no such file")
    embedder = None
    if not no_embed:
        from indexer.semantic import Embedder

        embedder = Embedder()
    try:
        info, _ = import_export(path, embedder)
    except ExportError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot import {export}: {exc.strerror or exc}")
    click.echo(f"imported {info.issues} issues from {export} into {info.path}")


@issues_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def issues_status(as_json: bool) -> None:
    """Which archive is active (exit 1 when none has been imported)."""
    from indexer.issues import active_info

    info = active_info()
    if as_json:
        click.echo(info.model_dump_json(indent=1) if info else "null")
    elif info is None:
        click.echo("no issue archive imported; see `verl-doctor issues --help`")
    else:
        click.echo(f"{info.issues} issues from {info.source} ({info.path})")
    sys.exit(EXIT_OK if info else EXIT_FINDINGS)


@issues_group.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option(
    "--top", "-k", "top", default=5, show_default=True, type=click.IntRange(1, 50), help="How many issues."
)
@click.option("--no-semantic", is_flag=True, help="Lexical search only: no embedding model.")
def issues_search(query: tuple[str, ...], top: int, no_semantic: bool) -> None:
    """Past issues similar to QUERY (words or an error line)."""
    from indexer.issues import load_active

    embedder: Embedder | None = None

    def get_embedder() -> Embedder:
        nonlocal embedder
        if embedder is None:
            from indexer.semantic import Embedder

            embedder = Embedder()
        return embedder

    index = load_active(None if no_semantic else get_embedder)
    if index is None:
        fail("no issue archive imported; see `verl-doctor issues --help`", EXIT_FINDINGS)
    hits = index.similar(" ".join(query), k=top, semantic=not no_semantic)
    for hit in hits:
        click.echo(f"#{hit.number} {hit.score:.2f} {hit.title}\n    {hit.url}")
    sys.exit(EXIT_OK if hits else EXIT_FINDINGS)


@issues_group.command("clear")
def issues_clear() -> None:
    """Forget every imported archive."""
    from indexer.issues import clear_archives

    n = clear_archives()
    click.echo(f"removed {n} imported export(s)")

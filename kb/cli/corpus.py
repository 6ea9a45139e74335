"""``verl-doctor corpus validate|list|show|search|patterns``: inspect and validate the knowledge base."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kb.cli.common import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, corpus_dir, corpus_option, fail, load_corpus_or_fail


@click.group("corpus")
def corpus_group() -> None:
    """Inspect and validate the knowledge base (Markdown entries under corpus/<area>/)."""


@corpus_group.command("validate")
@corpus_option
@click.option(
    "--fixtures",
    "fixtures_path",
    metavar="DIR",
    help="Fixture root (default: tests/fixtures/entries beside the corpus; without one, fixtures are not checked).",
)
def corpus_validate(corpus_path: str | None, fixtures_path: str | None) -> None:
    """Check every entry: schema, unique ids, linear-time regexes, body sections, sources, fixtures, and every
    override key against the config of each verl release its range covers. Exit 1 when anything is wrong."""
    from kb.validate import default_fixtures_dir, fixtures_to_check, validate_corpus

    root = corpus_dir(corpus_path)
    fixtures = Path(fixtures_path) if fixtures_path else None
    loaded, problems = validate_corpus(root, fixtures)
    for problem in problems:
        click.echo(str(problem))
    if loaded is None:
        sys.exit(EXIT_USAGE)
    n = len(loaded.entries) + len({p.path for p in loaded.problems})
    unchecked = (
        ""
        if fixtures_to_check(root, fixtures) is not None
        else f" (fixtures not checked: no {default_fixtures_dir(root)}; --fixtures DIR names them)"
    )
    if problems:
        click.echo(
            f"{len(problems)} problem(s) in {len({p.path for p in problems})} file(s); {n} entries checked{unchecked}"
        )
        sys.exit(EXIT_FINDINGS)
    click.echo(f"{n} entries valid{unchecked}")


@corpus_group.command("list")
@corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print every entry in full as JSON (the API's EntryDetail).")
@click.option("--area", help="Only entries of this area.")
def corpus_list(corpus_path: str | None, as_json: bool, area: str | None) -> None:
    """List the entries: id, area and title (or everything with --json)."""
    loaded = load_corpus_or_fail(corpus_path)
    entries = sorted((e for e in loaded.entries if area is None or e.area == area), key=lambda e: (e.area, e.id))
    if as_json:
        from pydantic import TypeAdapter

        from kb.entry_detail import EntryDetail, entry_detail

        details = [entry_detail(e) for e in entries]
        click.echo(TypeAdapter(list[EntryDetail]).dump_json(details, indent=1).decode("utf-8"))
        return
    for e in entries:
        click.echo(f"{e.id:<48} {e.area:<11} {e.title}")


@corpus_group.command("show")
@click.argument("entry_id")
@corpus_option
@click.option("--verl-version", metavar="V", help="Render the overrides for this verl version.")
@click.option("--json", "as_json", is_flag=True, help="Print the entry as JSON (the API's EntryDetail).")
def corpus_show(entry_id: str, corpus_path: str | None, verl_version: str | None, as_json: bool) -> None:
    """Show one entry: its fields, the overrides per verl version, and its body."""
    if verl_version is not None:
        from kb.versions import VersionError, parse_version

        try:
            parse_version(verl_version)
        except VersionError as exc:
            fail(str(exc))
    loaded = load_corpus_or_fail(corpus_path)
    entry = loaded.get(entry_id)
    if entry is None:
        from kb.suggest import no_such_entry

        fail(no_such_entry(entry_id, [e.id for e in loaded.entries]), EXIT_FINDINGS)
    if as_json:
        from kb.entry_detail import entry_detail

        click.echo(entry_detail(entry, verl_version).model_dump_json(indent=1))
        return
    from kb.render_text import render_entry

    render_entry(entry, verl_version)


@corpus_group.command("search")
@click.argument("query")
@corpus_option
@click.option(
    "--top", "-k", "top", default=10, show_default=True, type=click.IntRange(1, 50), help="How many entries."
)
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.option("--no-semantic", is_flag=True, help="Lexical only: never load the embedding model.")
def corpus_search(query: str, corpus_path: str | None, top: int, as_json: bool, no_semantic: bool) -> None:
    """Search the entries (semantic and lexical, as the FAQ page does); exit 1 when nothing matches."""
    from kb.cli import common
    from kb.render_text import render_hits

    found = render_hits(common.build_diagnoser(corpus_path, semantic=not no_semantic), query, top, as_json)
    sys.exit(EXIT_OK if found else EXIT_FINDINGS)


@corpus_group.command("patterns")
@corpus_option
@click.option("--all", "include_said", is_flag=True, help="Also the phrases people write (symptoms marked `said`).")
def corpus_patterns(corpus_path: str | None, include_said: bool) -> None:
    """Print the symptom regexes `scan` searches a job's logs for, one a line (for `rg -f`)."""
    loaded = load_corpus_or_fail(corpus_path)
    seen = set()
    for e in sorted(loaded.entries, key=lambda e: e.id):
        for s in e.meta.symptoms:
            if s.regex and (include_said or not s.said) and s.regex not in seen:
                seen.add(s.regex)
                click.echo(s.regex)

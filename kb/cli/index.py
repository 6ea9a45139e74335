"""``verl-doctor index``: the semantic index of the corpus rebuilt now."""

from __future__ import annotations

import click

from kb.cli.common import corpus_option, load_corpus_or_fail


@click.command("index")
@corpus_option
def index_cmd(corpus_path: str | None) -> None:
    """Rebuild the semantic index of the corpus now (it also rebuilds itself when stale)."""
    import shutil

    from indexer.semantic import Embedder, EntryIndex

    loaded = load_corpus_or_fail(corpus_path)
    embedder = Embedder()
    index = EntryIndex(loaded.entries, embedder, loaded.fingerprint)
    if not index.rebuilt:
        shutil.rmtree(index.path, ignore_errors=True)
        index = EntryIndex(loaded.entries, embedder, loaded.fingerprint)
    click.echo(f"indexed {len(loaded.entries)} entries with {embedder.name} into {index.path}")

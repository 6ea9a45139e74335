"""The semantic layer and the one composition root: :func:`load_diagnoser` builds a fully wired
:class:`kb.engine.Diagnoser` (corpus, rules, semantic layer, issue archive). Every front end (the CLI,
the server, the TUI) and the benchmarks call it; this module itself imports nothing heavy.

    from indexer import load_diagnoser
    diagnoser = load_diagnoser()
    print(diagnoser.diagnose(open("error.log").read()).model_dump_json(indent=1))
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb.engine import Diagnoser
    from kb.retriever import IssueSearcher, Retriever

__all__ = ["load_diagnoser"]


def load_diagnoser(corpus: str | Path | None = None, semantic: bool = True, issues: bool = True) -> Diagnoser:
    """The corpus (``corpus``: a directory; default the bundled one, or $VERL_DOCTOR_CORPUS) and its
    compiled rules, a lazy retriever (the embedding model loads on first use only, never with
    ``semantic=False``) and the imported issue archive (``verl-doctor issues import``), followed as it
    changes.

    Raises ``kb.corpus.CorpusError`` when the corpus cannot be read; entries that fail to load are
    skipped and listed in ``diagnoser.corpus.problems``.
    """
    from kb.corpus import load_corpus
    from kb.corpus_files import default_corpus_dir
    from kb.engine import Diagnoser

    loaded = load_corpus(Path(corpus) if corpus else default_corpus_dir())

    def retriever() -> Retriever:
        from indexer.semantic import Embedder, EntryIndex

        return EntryIndex(loaded.entries, Embedder(), loaded.fingerprint)

    def archive() -> IssueSearcher | None:
        from indexer.issues import ActiveArchive

        return ActiveArchive(lambda: getattr(diagnoser.retriever, "embedder", None))

    diagnoser = Diagnoser(loaded, retriever if semantic else None, archive if issues else None)
    return diagnoser

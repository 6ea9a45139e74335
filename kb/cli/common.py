"""What every command shares: one ``fail()``, one set of exit codes, one ``--corpus`` option, and the
diagnoser from the composition root (:func:`indexer.load_diagnoser`) with the CLI's error handling."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

if TYPE_CHECKING:
    from kb.corpus import Corpus
    from kb.engine import Diagnoser

#: Success (for ``match``: a confident match; for ``scan``: no findings).
EXIT_OK = 0
#: Findings: nothing confident, a failing override, a broken entry, problems in a job.
EXIT_FINDINGS = 1
#: Usage or I/O error: a bad option, an unreadable file, a corpus that cannot be loaded.
EXIT_USAGE = 2
#: An internal error (a bug): one line on stderr; VERL_DOCTOR_DEBUG=1 shows the traceback.
EXIT_INTERNAL = 3
#: Interrupted (Ctrl-C).
EXIT_INTERRUPTED = 130


#: Set by the command group when it runs as the process itself (the console script, ``python -m kb``), not
#: called in-process (click's CliRunner in the tests, another program): only then may :func:`finish` end it.
own_process = False


def finish(code: int) -> NoReturn:
    """End a command whose work is done and written (``match``, ``ask``) with exit status ``code``.

    In its own process it ends as the interpreter would, minus the teardown: other threads are joined,
    the atexit handlers run and the streams are flushed, but every module and object (pydantic's,
    numpy's, onnxruntime's) is not freed one by one, which cost 0.08 s of CPU, a seventh of a cold
    question. Called in-process, it raises SystemExit as ``sys.exit`` does."""
    if not own_process:
        sys.exit(code)
    import atexit
    import contextlib
    import os
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said on it
            stream.flush()
    os._exit(code)


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``verl-doctor: message`` on stderr and exit with ``code``."""
    click.echo(f"verl-doctor: {message}", err=True)
    sys.exit(code)


corpus_option = click.option(
    "--corpus",
    "corpus_path",
    metavar="DIR",
    help="Corpus directory (default: the bundled corpus, or $VERL_DOCTOR_CORPUS).",
)


def corpus_dir(value: str | None) -> Path:
    """The directory ``--corpus`` names, else the default corpus."""
    from kb.corpus_files import default_corpus_dir

    return Path(value) if value else default_corpus_dir()


def load_corpus_or_fail(corpus_path: str | None) -> Corpus:
    """The corpus ``--corpus`` names (exit 2 when it cannot be read); skipped entries are named on stderr."""
    from kb.corpus import CorpusError, load_corpus

    try:
        corpus = load_corpus(corpus_dir(corpus_path))
    except CorpusError as exc:
        fail(str(exc))
    for problem in corpus.problems:
        click.echo(f"warning: skipped {problem}", err=True)
    return corpus


def build_diagnoser(corpus_path: str | None = None, semantic: bool = True) -> Diagnoser:
    """The composition root's diagnoser; a corpus that cannot be read ends the command (exit 2), and
    entries that fail to load are named on stderr and skipped."""
    from indexer import load_diagnoser
    from kb.corpus import CorpusError

    try:
        diagnoser = load_diagnoser(corpus_dir(corpus_path), semantic=semantic)
    except CorpusError as exc:
        fail(str(exc))
    for problem in diagnoser.corpus.problems:
        click.echo(f"warning: skipped {problem}", err=True)
    return diagnoser


def prefetch_model() -> None:
    """Start loading the exported embedding model in a thread (``indexer.onnx_model.prefetch``): for a
    command that will probably embed its input, the ONNX session is made while this thread imports the
    engine and loads the corpus. Answers do not change, only when the model is ready."""
    from indexer import onnx_model

    onnx_model.prefetch(onnx_model.model_path)


#: What tells a log or traceback from a question at a glance (the rules often decide those without the model).
_ERROR_SIGNS = re.compile(
    r"Traceback \(most recent call last\)|^\s*File \"|\b[A-Z]\w*(?:Error|Exception)\b|\bERROR\b|\berror:", re.M
)


def likely_semantic(text: str) -> bool:
    """Whether the input will probably be searched with the embedding model (a short text with no error
    line: a question), so that loading it early pays. A wrong guess costs only time, never an answer."""
    return text.count("\n") < 40 and _ERROR_SIGNS.search(text) is None

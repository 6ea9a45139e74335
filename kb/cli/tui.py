"""``verl-doctor tui``: the terminal app. Importing this module imports neither Textual nor the model."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from kb.cli.common import corpus_option, fail


def reopen_terminal() -> None:
    """Point stdin (and stderr, where Textual draws, when it is redirected) at the controlling terminal.

    After ``tail run.log | verl-doctor tui`` has read the pipe to its end, the keyboard still has to
    reach the app: Textual reads keys from file descriptor 0, so /dev/tty is opened and put there.
    """
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        fail(
            f"the TUI needs a terminal for the keyboard, and /dev/tty cannot be opened ({exc.strerror or exc}); "
            "use `verl-doctor match` in pipelines"
        )
    try:
        os.dup2(fd, 0)
        if not os.isatty(2):
            os.dup2(fd, 2)
    finally:
        os.close(fd)


@click.command("tui")
@click.argument("source", required=False, metavar="[FILE|DIR|-]")
@corpus_option
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
@click.option("--top", default=5, show_default=True, type=click.IntRange(1, 20), help="How many diagnoses to list.")
@click.option("--light", is_flag=True, help="Start with the light theme (Ctrl+T toggles).")
def tui_cmd(source: str | None, corpus_path: str | None, no_semantic: bool, top: int, light: bool) -> None:
    """The terminal app: paste a traceback and see the diagnosis with its evidence, browse the FAQ,
    scan a job directory.

    \b
    verl-doctor tui                       # paste in the app, Ctrl+D diagnoses
    verl-doctor tui error.log             # diagnose a file at once
    verl-doctor tui /shared/jobs/run-17   # scan a job's output directory
    tail -300 run.log | verl-doctor tui   # diagnose piped text (the keyboard comes from /dev/tty)

    F1 in the app lists every key.
    """
    from kb.inputs import InputError, read_input

    text: str | None = None
    notes: list[str] = []
    name: str | None = None
    scan: Path | None = None
    piped = source == "-" or (source is None and not sys.stdin.isatty())
    try:
        if piped:
            try:
                given = read_input(sys.stdin.buffer, "stdin")
                text, notes, name = given.text, given.notes, "stdin"
            except InputError as exc:
                if source == "-":
                    fail(str(exc))
                # An empty pipe (or /dev/null) is no input: the app opens with an empty paste area.
            reopen_terminal()
        elif source is not None:
            path = Path(source)
            if path.is_dir():
                scan = path
            else:
                with path.open("rb") as fh:
                    given = read_input(fh, source)
                text, notes, name = given.text, given.notes, path.name
    except OSError as exc:
        fail(f"cannot read {source}: {exc.strerror or exc}")
    except InputError as exc:
        fail(str(exc))
    if not sys.stdin.isatty():
        fail("the TUI needs a terminal; use `verl-doctor match` in pipelines")

    # Progress bars of the model loader would draw over the app.
    quiet = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error", "TQDM_DISABLE": "1"}
    for var, value in quiet.items():
        os.environ.setdefault(var, value)

    from tui.app import DoctorApp
    from tui.config import TuiSettings

    settings = TuiSettings(
        corpus=Path(corpus_path) if corpus_path else None,
        semantic=not no_semantic,
        top=top,
        theme="light" if light else "dark",
    )
    app = DoctorApp(settings, text=text, source=name, scan=scan, notes=notes)
    app.run()
    # The terminal is restored by now. Tearing down torch and the tokenizer threads can take seconds
    # after the model has loaded, and there is nothing left to save: leave at once.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(app.return_code or 0)

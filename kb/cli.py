"""The ``verl-doctor`` command line.

This is the one module of ``kb`` that wires the other packages in; heavy imports (the embedding
model, the server, the TUI) happen inside the commands that need them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from kb import __version__

EXIT_FINDINGS = 1
EXIT_USAGE = 2


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"verl-doctor: {message}", err=True)
    sys.exit(code)


def _corpus_dir(value: str | None) -> Path:
    from kb.corpus_files import default_corpus_dir

    return Path(value) if value else default_corpus_dir()


def _load(corpus_dir: Path) -> Any:
    from kb.corpus import CorpusError, load_corpus

    try:
        corpus = load_corpus(corpus_dir)
    except CorpusError as exc:
        _fail(str(exc))
    for problem in corpus.problems:
        click.echo(f"warning: skipped {problem}", err=True)
    return corpus


class _Group(click.Group):
    """Turns unexpected exceptions into one clear line; VERL_DOCTOR_DEBUG=1 shows the traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            _fail("interrupted", 130)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(0)
        except Exception as exc:
            if os.environ.get("VERL_DOCTOR_DEBUG"):
                raise
            _fail(f"internal error: {type(exc).__name__}: {exc} (set VERL_DOCTOR_DEBUG=1 for the traceback)", 3)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="verl-doctor")
def main() -> None:
    """Diagnose verl failures: the known problem, why it happens, and the exact fix for your verl version.

    \b
    verl-doctor corpus validate            check every entry of the knowledge base
    verl-doctor check-overrides -- k=v ... check Hydra overrides before you submit a job
    verl-doctor match error.log            diagnose a traceback, a log or a question
    verl-doctor scan JOB_DIR               every log of a job: incidents, cascades, metric drift
    verl-doctor ask "..."                  answers in words, citing the entries
    verl-doctor serve | tui | mcp          HTTP API + FAQ web page, terminal app, MCP server
    """


# --------------------------------------------------------------------------- corpus


@main.group()
def corpus() -> None:
    """Inspect and validate the knowledge base (Markdown entries under corpus/<area>/)."""


_corpus_option = click.option(
    "--corpus",
    "corpus_path",
    metavar="DIR",
    help="Corpus directory (default: the bundled corpus, or $VERL_DOCTOR_CORPUS).",
)


@corpus.command("validate")
@_corpus_option
@click.option(
    "--fixtures",
    "fixtures_path",
    metavar="DIR",
    help="Fixture root (default: tests/fixtures/entries beside the corpus).",
)
def corpus_validate(corpus_path: str | None, fixtures_path: str | None) -> None:
    """Check every entry: schema, unique ids, linear-time regexes, body sections, sources, fixtures, and every
    override key against the config of each verl release its range covers. Exit 1 when anything is wrong."""
    from kb.validate import validate_corpus

    root = _corpus_dir(corpus_path)
    loaded, problems = validate_corpus(root, Path(fixtures_path) if fixtures_path else None)
    for problem in problems:
        click.echo(str(problem))
    if loaded is None:
        sys.exit(EXIT_USAGE)
    n = len(loaded.entries) + len({p.path for p in loaded.problems})
    if problems:
        click.echo(f"{len(problems)} problem(s) in {len({p.path for p in problems})} file(s); {n} entries checked")
        sys.exit(EXIT_FINDINGS)
    click.echo(f"{n} entries valid")


@corpus.command("list")
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print every entry in full as JSON.")
@click.option("--area", help="Only entries of this area.")
def corpus_list(corpus_path: str | None, as_json: bool, area: str | None) -> None:
    """List the entries: id, area and title (or everything with --json)."""
    loaded = _load(_corpus_dir(corpus_path))
    entries = sorted((e for e in loaded.entries if area is None or e.area == area), key=lambda e: (e.area, e.id))
    if as_json:
        click.echo(json.dumps([e.to_public() for e in entries], indent=1, ensure_ascii=False))
        return
    for e in entries:
        click.echo(f"{e.id:<48} {e.area:<11} {e.title}")


@corpus.command("show")
@click.argument("entry_id")
@_corpus_option
@click.option("--verl-version", metavar="V", help="Render the overrides for this verl version.")
@click.option("--json", "as_json", is_flag=True, help="Print the entry as JSON.")
def corpus_show(entry_id: str, corpus_path: str | None, verl_version: str | None, as_json: bool) -> None:
    """Show one entry: its fields, the overrides per verl version, and its body."""
    loaded = _load(_corpus_dir(corpus_path))
    entry = loaded.get(entry_id)
    if entry is None:
        from kb.suggest import no_such_entry

        _fail(no_such_entry(entry_id, [e.id for e in loaded.entries]), EXIT_FINDINGS)
    if as_json:
        click.echo(json.dumps(entry.to_public(), indent=1, ensure_ascii=False))
        return
    from kb.render_text import render_entry

    render_entry(entry, verl_version)


@corpus.command("search")
@click.argument("query")
@_corpus_option
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 50), help="How many entries.")
@click.option("--json", "as_json", is_flag=True, help="Print the hits as JSON.")
@click.option("--no-semantic", is_flag=True, help="Lexical only: never load the embedding model.")
def corpus_search(query: str, corpus_path: str | None, k: int, as_json: bool, no_semantic: bool) -> None:
    """Search the entries (semantic and lexical, as the FAQ page does); exit 1 when nothing matches."""
    from kb.render_text import render_hits

    sys.exit(render_hits(build_diagnoser(corpus_path, semantic=not no_semantic), query, k, as_json))


@corpus.command("patterns")
@_corpus_option
def corpus_patterns(corpus_path: str | None) -> None:
    """Print every symptom regex, one a line (for `rg -f`)."""
    loaded = _load(_corpus_dir(corpus_path))
    seen = set()
    for e in sorted(loaded.entries, key=lambda e: e.id):
        for s in e.meta.symptoms:
            if s.regex and s.regex not in seen:
                seen.add(s.regex)
                click.echo(s.regex)


# --------------------------------------------------------------------------- check-overrides


@main.command("check-overrides", context_settings={"ignore_unknown_options": True})
@click.option("--verl-version", metavar="V", help="verl version to check against (default: the newest known, 0.9.1).")
@click.option(
    "--file",
    "file_path",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="Read overrides from a .hydra/overrides.yaml, a launch script or a saved command line ('-' for stdin).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.argument("overrides", nargs=-1, type=click.UNPROCESSED)
def check_overrides_cmd(
    verl_version: str | None, file_path: str | None, as_json: bool, overrides: tuple[str, ...]
) -> None:
    """Check Hydra overrides against a verl release before you submit a job.

    \b
    verl-doctor check-overrides --verl-version 0.9.1 -- ray_init.num_cpus=16 trainer.nnode=2
    verl-doctor check-overrides --file outputs/2025-06-01/12-00-00/.hydra/overrides.yaml
    verl-doctor check-overrides -- "python -m verl.trainer.main_ppo data.train_batch_size=256 ..."

    Each override is fine, needs '+', must drop '+', is unknown (with a did-you-mean from the rename
    table and the key set), or is accepted but ignored by that version. Exit 1 when any would fail or
    be ignored.
    """
    from kb.overrides import check_overrides, extract_overrides
    from kb.versions import VersionError

    texts: list[str] = []
    if file_path:
        try:
            raw = sys.stdin.read() if file_path == "-" else Path(file_path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            _fail(f"cannot read {file_path}: {getattr(exc, 'strerror', None) or exc}")
        texts += extract_overrides(raw)
    for arg in overrides:
        texts += extract_overrides(arg) if (" " in arg.strip() or "\n" in arg) else [arg]
    if not texts:
        _fail("no overrides given: pass them after '--' or with --file")
    try:
        report = check_overrides(texts, verl_version)
    except VersionError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(report.model_dump_json(indent=1))
    else:
        from kb.render_text import render_override_report

        render_override_report(report)
    sys.exit(EXIT_FINDINGS if report.failed else 0)


# --------------------------------------------------------------------------- diagnosis


def build_diagnoser(corpus_path: str | None = None, semantic: bool = True) -> Any:
    """The corpus, its rules and a lazy retriever (the embedding model loads on first use only)."""
    from kb.engine import Diagnoser

    loaded = _load(_corpus_dir(corpus_path))

    def retriever() -> Any:
        from indexer.semantic import Embedder, EntryIndex

        return EntryIndex(loaded.entries, Embedder(), loaded.fingerprint)

    def issues() -> Any:  # the imported issue archive (verl-doctor issues import), followed as it changes
        from indexer.issues import ActiveArchive

        return ActiveArchive(lambda: getattr(diagnoser.retriever, "embedder", None))

    diagnoser = Diagnoser(loaded, retriever if semantic else None, issues)
    return diagnoser


@main.command("match")
@click.argument("source", default="-", metavar="[FILE|-]")
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON (the schema every surface uses).")
@click.option(
    "--jsonl", is_flag=True, help='Batch mode: one {"id", "input"} request a line on stdin, one result a line out.'
)
@click.option("--top", default=3, show_default=True, type=click.IntRange(1, 20), help="How many diagnoses to show.")
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
def match_cmd(source: str, corpus_path: str | None, as_json: bool, jsonl: bool, top: int, no_semantic: bool) -> None:
    """Diagnose a traceback, a log excerpt or a question (FILE, or stdin with '-').

    \b
    verl-doctor match error.log
    python -m verl.trainer.main_ppo ... 2>&1 | tail -200 | verl-doctor match
    verl-doctor match --json error.log

    Exit 0 when a known problem matches, 1 when nothing matches with confidence, 2 on bad input.
    """
    from kb.inputs import InputError, read_input

    diagnoser = build_diagnoser(corpus_path, semantic=not no_semantic)
    if jsonl:
        _match_jsonl(diagnoser, top)
        return
    try:
        if source == "-":
            if sys.stdin.isatty():
                click.echo("Paste the traceback or log, then press Ctrl-D:", err=True)
            given = read_input(sys.stdin.buffer, "stdin")
        else:
            path = Path(source)
            if path.is_dir():
                _fail(f"{source} is a directory; use `verl-doctor scan {source}` for a job's output directory")
            with path.open("rb") as fh:
                given = read_input(fh, source)
    except OSError as exc:
        _fail(f"cannot read {source}: {exc.strerror or exc}")
    except InputError as exc:
        _fail(str(exc))
    result = diagnoser.diagnose(given.text, top=top)
    result.notes = given.notes + result.notes
    if as_json:
        click.echo(result.model_dump_json(indent=1))
    else:
        from kb.render_text import render_result

        render_result(result)
    sys.exit(0 if not result.abstained else EXIT_FINDINGS)


def _match_jsonl(diagnoser: Any, top: int) -> None:
    from kb.batch import match_jsonl

    match_jsonl(diagnoser, top, sys.stdin.buffer, sys.stdout)


@main.command("index")
@_corpus_option
def index_cmd(corpus_path: str | None) -> None:
    """Rebuild the semantic index of the corpus now (it also rebuilds itself when stale)."""
    import shutil

    from indexer.semantic import Embedder, EntryIndex

    loaded = _load(_corpus_dir(corpus_path))
    embedder = Embedder()
    index = EntryIndex(loaded.entries, embedder, loaded.fingerprint)
    if not index.rebuilt:
        shutil.rmtree(index.path, ignore_errors=True)
        index = EntryIndex(loaded.entries, embedder, loaded.fingerprint)
    click.echo(f"indexed {len(loaded.entries)} entries with {embedder.name} into {index.path}")


@main.command("eval")
@click.argument("cases", nargs=-1, required=True, type=click.Path(exists=True))
@_corpus_option
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON.")
@click.option("--no-semantic", is_flag=True, help="Rules only.")
@click.option(
    "--ask",
    "ask_path",
    is_flag=True,
    help="Score `verl-doctor ask` (conversations, citations, the LLM at $VERL_DOCTOR_LLM_URL if set).",
)
def eval_cmd(cases: tuple[str, ...], corpus_path: str | None, as_json: bool, no_semantic: bool, ask_path: bool) -> None:
    """Score the engine on eval cases (JSONL files or directories of them): top-1, top-3, MRR,
    abstention precision and recall, a per-area table, and every miss."""
    from kb.evaluation import load_cases, run_eval

    try:
        loaded_cases = load_cases([Path(c) for c in cases])
    except ValueError as exc:
        _fail(str(exc))
    diagnoser = build_diagnoser(corpus_path, semantic=not no_semantic)
    if ask_path:
        from kb.cli_ask import run_ask_eval_cmd

        run_ask_eval_cmd(diagnoser, loaded_cases, as_json)
        return
    report = run_eval(diagnoser, loaded_cases)
    if as_json:
        click.echo(report.model_dump_json(indent=1))
    else:
        from kb.evaluation import render_report

        render_report(report)


# --------------------------------------------------------------------------- server


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@main.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one).")
@click.option(
    "--scan-root",
    "scan_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="A directory POST /v1/scan may read (repeatable).",
)
@click.option(
    "--token",
    envvar="VERL_DOCTOR_TOKEN",
    help="Bearer token required on /v1, /mcp and the pages (or $VERL_DOCTOR_TOKEN).",
)
@click.option("--insecure", is_flag=True, help="Allow a non-loopback address without --token.")
@click.option(
    "--max-body", default=5 * 1024 * 1024, show_default=True, type=click.IntRange(1024), help="Body size cap in bytes."
)
@_corpus_option
@click.option("--no-semantic", is_flag=True, help="Rules and lexical search only: no embedding model.")
def serve_cmd(
    host: str,
    port: int,
    scan_roots: tuple[str, ...],
    token: str | None,
    insecure: bool,
    max_body: int,
    corpus_path: str | None,
    no_semantic: bool,
) -> None:
    """Run the HTTP API, the FAQ web pages and MCP (streamable HTTP at /mcp) with uvicorn.

    \b
    verl-doctor serve                          # http://127.0.0.1:8000/  (docs at /docs)
    verl-doctor serve --scan-root /shared/jobs --port 9000
    verl-doctor serve --host 0.0.0.0 --token "$(openssl rand -hex 16)"
    """
    from server.settings import token_problem

    if problem := token_problem(token):
        _fail(problem)
    if not _is_loopback(host) and not token and not insecure:
        _fail(f"refusing to serve on {host} without --token (bearer auth); pass --insecure to do it anyway")
    roots = []
    for root in scan_roots:
        path = Path(root)
        if not path.is_dir():
            _fail(f"--scan-root {root} is not a directory")
        roots.append(path.resolve())
    import uvicorn

    from server.app import create_app
    from server.settings import ServerSettings

    settings = ServerSettings(
        host=host,
        port=port,
        scan_roots=roots,
        token=token,
        insecure=insecure,
        max_body_bytes=max_body,
        corpus=Path(corpus_path) if corpus_path else None,
        semantic=not no_semantic,
    )
    app = create_app(settings)
    uvicorn.run(app, host=host, port=port, log_level="info")


# --------------------------------------------------------------------------- commands in their own modules
# Each module imports only click at import time; the heavy parts load inside the command.

from kb.cli_ask import ask_cmd, issues_group  # noqa: E402
from kb.cli_mcp import mcp_cmd  # noqa: E402
from kb.cli_scan import scan_cmd  # noqa: E402
from tui.cli import tui_cmd  # noqa: E402

for _command in (scan_cmd, ask_cmd, issues_group, mcp_cmd, tui_cmd):
    main.add_command(_command)

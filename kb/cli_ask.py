"""``verl-doctor ask`` (answers from the knowledge base, multi-turn) and ``verl-doctor issues`` (the archive).

Registered at the end of :mod:`kb.cli`; heavy imports stay inside the commands.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

EXIT_FINDINGS = 1
EXIT_USAGE = 2


def _fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"verl-doctor: {message}", err=True)
    sys.exit(code)


def _read_messages(source: str) -> list[Any]:
    from pydantic import ValidationError

    from kb.ask import ChatMessage

    try:
        raw = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        _fail(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}")
    except ValueError as exc:
        _fail(f"{source} is not JSON: {exc}")
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not data:
        _fail(f"{source} must hold a JSON list of {{'role', 'content'}} messages (or {{'messages': [...]}})")
    try:
        return [ChatMessage.model_validate(m) for m in data]
    except ValidationError as exc:
        first = exc.errors()[0]
        _fail(f"{source}: message {first['loc'][0] if first['loc'] else '?'}: {first['msg']}")


def _print_answer(answer: Any) -> None:
    from kb.render_text import console, render_markdown_answer

    out = console()
    if out.is_terminal:
        render_markdown_answer(answer.answer, out)
    else:
        click.echo(answer.answer)  # Markdown as it is, for pipes and files
    if answer.llm_note:
        click.echo(f"note: {answer.llm_note}", err=True)


@click.command("ask")
@click.argument("question", nargs=-1)
@click.option(
    "--messages",
    "messages_path",
    metavar="FILE",
    help="A conversation as JSON: a list of {role, content} messages ('-' for stdin). Follow-ups use earlier turns.",
)
@click.option("--verl-version", metavar="V", help="Render the overrides for this verl version.")
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (answer, citations, abstained, ...).")
@click.option("--no-llm", is_flag=True, help="Never use the LLM at $VERL_DOCTOR_LLM_URL; answer extractively.")
@click.option("--corpus", "corpus_path", metavar="DIR", help="Corpus directory (default: the bundled corpus).")
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
def ask_cmd(
    question: tuple[str, ...],
    messages_path: str | None,
    verl_version: str | None,
    as_json: bool,
    no_llm: bool,
    corpus_path: str | None,
    no_semantic: bool,
) -> None:
    """Answer a question (or a pasted traceback) from the knowledge base, citing the entries.

    \b
    verl-doctor ask "how do train, mini and micro batch sizes relate when rollout.n is 5?"
    verl-doctor ask --verl-version 0.5.0 "how do I set num_cpus for ray?"
    verl-doctor ask - < error.log                  # a traceback on stdin
    verl-doctor ask --messages chat.json --json    # a conversation; the last user turn is answered
    verl-doctor ask                                # in a terminal: a chat, follow-ups use earlier turns

    With $VERL_DOCTOR_LLM_URL set (an OpenAI-compatible server) an LLM writes the answer from the retrieved
    entries; a reply with an override or quoted log line that is in neither the entries nor your messages
    is dropped for the extractive answer. Exit 0 answered, 1 nothing fits (the closest entries are listed).
    """
    from kb.ask import ChatMessage, ask
    from kb.cli import build_diagnoser
    from kb.inputs import InputError, read_input
    from kb.llm import LLMClient
    from kb.versions import VersionError, parse_version

    if verl_version is not None:
        try:
            parse_version(verl_version)
        except VersionError as exc:
            _fail(str(exc))
    messages: list[ChatMessage] = []
    if messages_path:
        messages = _read_messages(messages_path)
    text = " ".join(question).strip()
    if text == "-":
        try:
            text = read_input(sys.stdin.buffer, "stdin").text
        except InputError as exc:
            _fail(str(exc))
    if text:
        messages.append(ChatMessage(role="user", content=text))
    llm = None if no_llm else LLMClient.from_env()
    diagnoser = build_diagnoser(corpus_path, semantic=not no_semantic)
    if not messages:
        if not sys.stdin.isatty():
            _fail("give a question, '-' for stdin, or --messages FILE")
        _chat(diagnoser, verl_version, llm)
        return
    try:
        answer = ask(diagnoser, messages, verl_version=verl_version, llm=llm)
    except ValueError as exc:
        _fail(str(exc))
    if as_json:
        click.echo(answer.model_dump_json(indent=1))
    else:
        _print_answer(answer)
    sys.exit(EXIT_FINDINGS if answer.abstained else 0)


def _chat(diagnoser: Any, verl_version: str | None, llm: Any) -> None:
    """A terminal chat: every answer sees the earlier turns."""
    from kb.ask import ChatMessage, ask

    click.echo("Ask about verl (an empty line or Ctrl-D ends). Follow-ups like 'I'm on 0.5' use earlier turns.")
    history: list[ChatMessage] = []
    while True:
        try:
            line = input("> ").strip()
        except EOFError:
            break
        if not line:
            break
        history.append(ChatMessage(role="user", content=line))
        answer = ask(diagnoser, history, verl_version=verl_version, llm=llm)
        _print_answer(answer)
        history.append(ChatMessage(role="assistant", content=answer.answer))


# --------------------------------------------------------------------------- issues


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
        _fail(f"{export}: no such file")
    embedder = None
    if not no_embed:
        from indexer.semantic import Embedder

        embedder = Embedder()
    try:
        info, _ = import_export(path, embedder)
    except ExportError as exc:
        _fail(str(exc))
    except OSError as exc:
        _fail(f"cannot import {export}: {exc.strerror or exc}")
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
    sys.exit(0 if info else EXIT_FINDINGS)


@issues_group.command("search")
@click.argument("query", nargs=-1, required=True)
@click.option("-k", "top", default=5, show_default=True, type=click.IntRange(1, 50), help="How many issues.")
@click.option("--no-semantic", is_flag=True, help="Lexical search only: no embedding model.")
def issues_search(query: tuple[str, ...], top: int, no_semantic: bool) -> None:
    """Past issues similar to QUERY (words or an error line)."""
    from indexer.issues import load_active

    embedder: Any = None

    def get_embedder() -> Any:
        nonlocal embedder
        if embedder is None:
            from indexer.semantic import Embedder

            embedder = Embedder()
        return embedder

    index = load_active(None if no_semantic else get_embedder)
    if index is None:
        _fail("no issue archive imported; see `verl-doctor issues --help`", EXIT_FINDINGS)
        return
    hits = index.similar(" ".join(query), k=top, semantic=not no_semantic)
    for hit in hits:
        click.echo(f"#{hit.number} {hit.score:.2f} {hit.title}\n    {hit.url}")
    sys.exit(0 if hits else EXIT_FINDINGS)


@issues_group.command("clear")
def issues_clear() -> None:
    """Forget every imported archive."""
    from indexer.issues import clear_archives

    n = clear_archives()
    click.echo(f"removed {n} imported export(s)")


def run_ask_eval_cmd(diagnoser: Any, cases: list[Any], as_json: bool) -> None:
    """`verl-doctor eval --ask`: the engine figures over the ask path, then the answer-only ones."""
    from kb.ask import run_ask_eval
    from kb.evaluation import render_report
    from kb.llm import LLMClient

    report = run_ask_eval(diagnoser, cases, LLMClient.from_env())
    if as_json:
        click.echo(report.model_dump_json(indent=1))
        return
    render_report(report.report)
    click.echo(
        f"answers: {report.answered} cite an entry, {report.abstained} abstain; cite-or-abstain "
        f"{report.cited_or_abstained:.1%}; first citation expected on answered positives "
        f"{report.answered_precision:.1%}"
    )
    if report.llm_used or report.llm_rejected:
        click.echo(f"LLM: {report.llm_used} answers written by the LLM, {report.llm_rejected} replies rejected")
    click.echo(f"overrides in answers that no cited entry holds: {len(report.unsupported_overrides)}")
    for item in report.unsupported_overrides:
        click.echo(f"  {item}")

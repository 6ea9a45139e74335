"""``verl-doctor ask``: answers from the knowledge base, multi-turn; heavy imports stay inside the command."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kb.cli import common
from kb.cli.common import EXIT_FINDINGS, EXIT_OK, corpus_option, fail

if TYPE_CHECKING:
    from kb.ask import AskAnswer, ChatMessage
    from kb.engine import Diagnoser
    from kb.llm import LLMClient


def _read_messages(source: str) -> list[ChatMessage]:
    from pydantic import ValidationError

    from kb.ask import ChatMessage

    try:
        raw = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        data = json.loads(raw)
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {source}: {getattr(exc, 'strerror', None) or exc}")
    except ValueError as exc:
        fail(f"{source} is not JSON: {exc}")
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not data:
        fail(f"{source} must hold a JSON list of {{'role', 'content'}} messages (or {{'messages': [...]}})")
    try:
        return [ChatMessage.model_validate(m) for m in data]
    except ValidationError as exc:
        first = exc.errors()[0]
        fail(f"{source}: message {first['loc'][0] if first['loc'] else '?'}: {first['msg']}")


def _print_answer(answer: AskAnswer) -> None:
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
@click.option(
    "--earlier",
    multiple=True,
    metavar="TEXT",
    help="An earlier message of yours, for a follow-up (repeatable, oldest first); as `earlier` on HTTP and MCP.",
)
@click.option("--verl-version", metavar="V", help="Render the overrides for this verl version.")
@click.option(
    "--top",
    default=3,
    show_default=True,
    type=click.IntRange(1, 10),
    help="When nothing fits: how many closest entries to list.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON (answer, citations, abstained, ...).")
@click.option("--no-llm", is_flag=True, help="Never use the LLM at $VERL_DOCTOR_LLM_URL; answer extractively.")
@corpus_option
@click.option("--no-semantic", is_flag=True, help="Rules only: never load the embedding model.")
def ask_cmd(
    question: tuple[str, ...],
    messages_path: str | None,
    earlier: tuple[str, ...],
    verl_version: str | None,
    top: int,
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
    verl-doctor ask --earlier "$(cat error.log)" "and on verl 0.5?"   # a follow-up
    verl-doctor ask                                # in a terminal: a chat, follow-ups use earlier turns

    With $VERL_DOCTOR_LLM_URL set (an OpenAI-compatible server) an LLM writes the answer from the retrieved
    entries; a reply with an override or quoted log line that is in neither the entries nor your messages
    is dropped for the extractive answer. Exit 0 answered, 1 nothing fits (the closest entries are listed).
    """
    from kb.ask import ChatMessage, ask
    from kb.inputs import InputError, read_input
    from kb.llm import LLMClient
    from kb.versions import VersionError, parse_version

    if verl_version is not None:
        try:
            parse_version(verl_version)
        except VersionError as exc:
            fail(str(exc))
    messages: list[ChatMessage] = []
    if messages_path:
        messages = _read_messages(messages_path)
    messages += [ChatMessage(role="user", content=turn) for turn in earlier if turn.strip()]
    text = " ".join(question).strip()
    if text == "-":
        try:
            text = read_input(sys.stdin.buffer, "stdin").text
        except InputError as exc:
            fail(str(exc))
    if earlier and not text:
        fail("--earlier needs a QUESTION that follows up on it")
    if text:
        messages.append(ChatMessage(role="user", content=text))
    if not no_semantic and (not messages or common.likely_semantic(messages[-1].content)):
        common.prefetch_model()  # a question (or a chat about to start): the model loads beside the corpus
    llm = None if no_llm else LLMClient.from_env()
    diagnoser = common.build_diagnoser(corpus_path, semantic=not no_semantic)
    if not messages:
        if not sys.stdin.isatty():
            fail("give a question, '-' for stdin, or --messages FILE")
        _chat(diagnoser, verl_version, llm)
        return
    try:
        answer = ask(diagnoser, messages, verl_version=verl_version, top=top, llm=llm)
    except ValueError as exc:
        fail(str(exc))
    if as_json:
        click.echo(answer.model_dump_json(indent=1))
    else:
        _print_answer(answer)
    common.finish(EXIT_FINDINGS if answer.abstained else EXIT_OK)


def _chat(diagnoser: Diagnoser, verl_version: str | None, llm: LLMClient | None) -> None:
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

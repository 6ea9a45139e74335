"""Answers to questions from the knowledge base (``verl-doctor ask``, ``POST /v1/ask``, the chat endpoint).

Retrieval is the diagnosis engine itself: semantic + lexical search for words, and the rules engine as
well when a message holds a traceback or log. The answer is composed from the chosen entry - its
cause, its conditions (asking for the facts that are unknown), the override lines for the user's verl
version, the actions and the "check that it worked" step - and cites entry ids and links. A follow-up
("and on arm64?", "I'm on 0.5") is answered from the topic of the earlier turns, with the facts of
every turn. When nothing fits, the answer says so and lists the closest entries. An optional LLM may
reword the answer from the retrieved entries only (see :mod:`kb.llm`).

The parts: :mod:`kb.ask.models` (request and answer), :mod:`kb.ask.facts` (what the conversation says),
:mod:`kb.ask.compose` (the extractive answer), :mod:`kb.ask.prompt` (the LLM's prompt and grounding) and
:mod:`kb.ask.pipeline` (``ask()``, which ties them together).
"""

from kb.ask.facts import content_words, extract_facts, is_followup
from kb.ask.models import MAX_MESSAGE_CHARS, AskAnswer, AskRequest, ChatMessage, Citation, Facts
from kb.ask.pipeline import ask
from kb.ask.prompt import entry_brief, grounding_texts

__all__ = [
    "MAX_MESSAGE_CHARS",
    "AskAnswer",
    "AskRequest",
    "ChatMessage",
    "Citation",
    "Facts",
    "ask",
    "content_words",
    "entry_brief",
    "extract_facts",
    "grounding_texts",
    "is_followup",
]

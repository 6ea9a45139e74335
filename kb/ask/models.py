"""The shapes of a conversation with the knowledge base: the request, the facts read from it, and the answer."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from kb.entry import Entry
from kb.result import ConditionResult, Match, RenderedOverride, SimilarIssue

MAX_MESSAGE_CHARS = 200_000

Role = Literal["system", "user", "assistant"]


class ChatMessage(BaseModel):
    role: Role
    content: str = Field(max_length=MAX_MESSAGE_CHARS)

    @field_validator("content", mode="before")
    @classmethod
    def _parts_to_text(cls, value: Any) -> Any:
        """OpenAI content parts (``[{"type": "text", "text": ...}]``) become one string."""
        if isinstance(value, list):
            return "\n".join(
                str(p.get("text", "")) for p in value if isinstance(p, dict) and p.get("type", "text") == "text"
            )
        return "" if value is None else value


class AskRequest(BaseModel):
    """The conversation as ``messages``, or (as the MCP ``ask`` tool takes it) ``question`` with the user's
    ``earlier`` messages."""

    messages: list[ChatMessage] = Field(
        default_factory=list, max_length=100, description="the conversation, oldest first (or give `question`)"
    )
    question: str | None = Field(
        default=None, max_length=MAX_MESSAGE_CHARS, description="a question in words (instead of `messages`)"
    )
    earlier: list[Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]] | None = Field(
        default=None, max_length=50, description="with `question`: the user's earlier messages, oldest first"
    )
    verl_version: str | None = Field(default=None, max_length=40, description="overrides are rendered for it")
    top: int = Field(default=3, ge=1, le=10, description="how many closest entries to list when abstaining")

    @model_validator(mode="after")
    def _conversation(self) -> AskRequest:
        if self.question is not None or self.earlier:
            if self.messages:
                raise ValueError("give `messages`, or `question` (with `earlier`), not both")
            turns = [*(self.earlier or []), self.question or ""]
            self.messages = [ChatMessage(role="user", content=t) for t in turns if t.strip()]
        if not self.messages:
            raise ValueError("`messages` (or `question`) is required")
        return self


class Citation(BaseModel):
    id: str
    title: str
    area: str
    confidence: float
    verdict: Literal["match", "possible"]
    path: str = Field(description="the entry's Markdown file in the corpus")
    links: list[str] = Field(description="the entry's sources that are web links")


class Facts(BaseModel):
    """What the conversation says about the user's set-up (the last mention of each wins)."""

    verl_version: str | None = None
    platform: str | None = None
    gpu: str | None = None
    versions: dict[str, str] = Field(default_factory=dict)
    overrides: dict[str, str] = Field(default_factory=dict)
    env: list[str] = Field(default_factory=list)


class AskAnswer(BaseModel):
    answer: str = Field(description="the answer as Markdown")
    citations: list[Citation] = Field(description="the entries the answer is built from, best first")
    abstained: bool = Field(description="no entry fits well enough; `closest` lists the nearest ones")
    closest: list[Citation] = Field(default_factory=list, description="when abstaining: the nearest entries")
    facts: Facts
    missing_facts: list[str] = Field(default_factory=list, description="facts the answer asks the user for")
    conditions: list[ConditionResult] = Field(default_factory=list, description="the cited entry's conditions")
    overrides: list[RenderedOverride] = Field(default_factory=list, description="override lines of the answer")
    similar_issues: list[SimilarIssue] = Field(default_factory=list)
    followup: bool = Field(default=False, description="the topic came from an earlier turn")
    mode: Literal["extractive", "llm"] = "extractive"
    llm_note: str | None = Field(default=None, description="why the LLM's reply was not used, when it was not")
    kb_version: str



def citation(entry: Entry, m: Match | None) -> Citation:
    """The entry as an answer cites it (``m``: how it matched; None for a search hit)."""
    conf = m.confidence if m else 0.0
    return Citation(
        id=entry.id,
        title=entry.title,
        area=entry.area,
        confidence=conf,
        verdict=m.verdict if m else "possible",
        path=rel_path(entry.path),
        links=[s for s in entry.meta.sources if s.startswith(("http://", "https://"))],
    )


def rel_path(path: str) -> str:
    """An entry's file relative to the folder holding the corpus (``corpus/area/id.md``)."""
    idx = path.replace("\\", "/").rfind("/corpus/")
    return path[idx + 1 :] if idx >= 0 else path

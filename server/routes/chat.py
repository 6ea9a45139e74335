"""POST /v1/ask, POST /v1/chat/completions (OpenAI-compatible, streaming included) and GET /v1/models."""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from kb.ask import AskAnswer, AskRequest, ChatMessage, ask
from kb.llm import LLMClient
from kb.versions import VersionError
from server.deps import Auth, DiagnoserDep
from server.problems import problem_responses

MODEL_NAME = "verl-doctor"

router = APIRouter(prefix="/v1", tags=["chat"], dependencies=[Auth])

_ERRORS = problem_responses(400, 401, 404, 413, 422)


class ChatCompletionRequest(BaseModel):
    """The OpenAI chat request; sampling fields (temperature, top_p, max_tokens, ...) are accepted and ignored."""

    model_config = ConfigDict(extra="allow")

    model: str = Field(default=MODEL_NAME, max_length=200)
    messages: list[ChatMessage] = Field(min_length=1, max_length=100)
    stream: bool = False
    verl_version: str | None = Field(default=None, max_length=40, description="extension: render overrides for it")


class AssistantMessage(BaseModel):
    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    index: int = 0
    message: AssistantMessage
    finish_reason: Literal["stop"] = "stop"


class Usage(BaseModel):
    """Approximate: whitespace-separated words, not model tokens."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class ChatCompletion(BaseModel):
    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str = MODEL_NAME
    choices: list[Choice]
    usage: Usage
    verl_doctor: AskAnswer = Field(description="extension: citations, abstention, facts, the LLM's fate")


class Delta(BaseModel):
    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    index: int = 0
    delta: Delta
    finish_reason: Literal["stop"] | None = None


class ChatCompletionChunk(BaseModel):
    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str = MODEL_NAME
    choices: list[ChunkChoice]


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int = 0
    owned_by: str = "verl-doctor"


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]


def _llm(request: Request) -> LLMClient | None:
    """The LLM named by $VERL_DOCTOR_LLM_URL now (read per request, so a restart is not needed)."""
    client = LLMClient.from_env()
    cached: LLMClient | None = getattr(request.app.state, "llm_client", None)
    if client is None:
        return None
    if cached is not None and (cached.url, cached.model, cached.api_key) == (client.url, client.model, client.api_key):
        return cached
    request.app.state.llm_client = client
    return client


async def _answer(
    request: Request, diagnoser: Any, messages: list[ChatMessage], version: str | None, top: int
) -> AskAnswer:
    if not any(m.role == "user" and m.content.strip() for m in messages):
        raise HTTPException(status_code=422, detail="messages: at least one user message with text is needed")
    try:
        return await run_in_threadpool(ask, diagnoser, messages, verl_version=version, top=top, llm=_llm(request))
    except VersionError as exc:
        raise HTTPException(status_code=422, detail=f"verl_version: {exc}") from None


@router.post("/ask", response_model=AskAnswer, responses=problem_responses(400, 401, 413, 422))
async def ask_route(body: AskRequest, diagnoser: DiagnoserDep, request: Request) -> AskAnswer:
    """Answer the last user message of a conversation from the knowledge base, citing entries (or abstain)."""
    return await _answer(request, diagnoser, body.messages, body.verl_version, body.top)


@router.get("/models", response_model=ModelList, responses=problem_responses(401))
async def models() -> ModelList:
    """The one model this server offers, for OpenAI clients that list models first."""
    return ModelList(data=[ModelCard(id=MODEL_NAME)])


def _pieces(text: str, size: int = 48) -> Iterator[str]:
    """The text in small pieces on word boundaries; joined they are exactly the text."""
    buf = ""
    for tok in re.findall(r"\S+\s*|\s+", text):
        buf += tok
        if len(buf) >= size or "\n" in tok:
            yield buf
            buf = ""
    if buf:
        yield buf


def _sse(chunk: ChatCompletionChunk) -> str:
    return f"data: {chunk.model_dump_json(exclude_none=True)}\n\n"


def _stream(completion_id: str, created: int, answer: AskAnswer) -> Iterator[str]:
    def chunk(delta: Delta, finish: Literal["stop"] | None = None) -> str:
        return _sse(
            ChatCompletionChunk(
                id=completion_id, created=created, choices=[ChunkChoice(delta=delta, finish_reason=finish)]
            )
        )

    yield chunk(Delta(role="assistant", content=""))
    for piece in _pieces(answer.answer):
        yield chunk(Delta(content=piece))
    yield chunk(Delta(), "stop")
    yield "data: [DONE]\n\n"


@router.post(
    "/chat/completions",
    response_model=ChatCompletion,
    responses={
        **_ERRORS,
        200: {
            "description": "a chat.completion, or with stream=true server-sent chat.completion.chunk events",
            # Each event's data is a chat.completion.chunk object, and the last one is the literal [DONE].
            "content": {"text/event-stream": {"schema": {"description": "chat.completion.chunk events, then [DONE]"}}},
        },
    },
)
async def chat_completions(body: ChatCompletionRequest, diagnoser: DiagnoserDep, request: Request) -> Any:
    """OpenAI-compatible chat (model `verl-doctor`): the answer is grounded in the knowledge base.

    With `stream: true` the answer arrives as server-sent `chat.completion.chunk` events ending with
    `data: [DONE]`. The answer is complete (and, with an LLM, checked) before the first chunk is sent.
    """
    if body.model != MODEL_NAME:
        raise HTTPException(status_code=404, detail=f"model '{body.model}' does not exist; use '{MODEL_NAME}'")
    answer = await _answer(request, diagnoser, body.messages, body.verl_version, 3)
    completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    if body.stream:
        return StreamingResponse(
            _stream(completion_id, created, answer),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )
    prompt = sum(len(m.content.split()) for m in body.messages)
    completion = len(answer.answer.split())
    return ChatCompletion(
        id=completion_id,
        created=created,
        choices=[Choice(message=AssistantMessage(content=answer.answer))],
        usage=Usage(prompt_tokens=prompt, completion_tokens=completion, total_tokens=prompt + completion),
        verl_doctor=answer,
    )

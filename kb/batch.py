"""``match --jsonl``: one ``{"id", "input", "top"}`` request a line in, one result (or error) a line out.

Lines are read with a bound: a line longer than :data:`MAX_REQUEST_BYTES` is answered with an error and
skipped in chunks, never held whole. Every answer carries the request's ``id`` when the line had one, and
``line`` (its 1-based line number) always, so an error can be matched to the request that caused it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, BinaryIO

from pydantic import BaseModel, Field, JsonValue, SerializerFunctionWrapHandler, model_serializer

from kb.inputs import MAX_INPUT_BYTES, InputError
from kb.result import Result

if TYPE_CHECKING:
    from kb.engine import Diagnoser

#: Longest request line read: the input cap of a paste, with room for JSON escaping.
MAX_REQUEST_BYTES = 2 * MAX_INPUT_BYTES + 64 * 1024
_SKIP_CHUNK = 1 << 20
#: The most diagnoses one request may ask for (as POST /v1/diagnose and match --top).
MAX_TOP = 20


def request_lines(stream: BinaryIO, limit: int = MAX_REQUEST_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """(line number, the line) for each line of ``stream``; the line is None when it is longer than
    ``limit`` bytes (its rest is read and dropped, a chunk at a time)."""
    n = 0
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        n += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            while True:
                rest = stream.readline(_SKIP_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield n, None
            continue
        yield n, raw


class BatchResult(Result):
    """One answered request: the result of ``match --json`` with the request's ``id`` and ``line`` first."""

    id: JsonValue = Field(description="the request's id (its line number when it had none)")
    line: int = Field(description="the request's 1-based line number")

    @model_serializer(mode="wrap")
    def _id_first(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        return {"id": data.pop("id"), "line": data.pop("line"), **data} if isinstance(data, dict) else data


class BatchError(BaseModel):
    """A request that could not be answered (not JSON, no string ``input``, empty, binary, too long)."""

    id: JsonValue = Field(default=None, description="the request's id, when the line had one")
    line: int
    error: str


def answer(
    diagnoser: Diagnoser, raw: bytes | None, n: int, top: int, limit: int = MAX_REQUEST_BYTES
) -> BatchResult | BatchError:
    """The answer to request line ``n``."""
    req_id: JsonValue = None
    try:
        if raw is None:
            raise ValueError(f"line {n} is longer than {limit // (1 << 20)} MB; it was skipped")
        request = json.loads(raw)
        if not isinstance(request, dict):
            raise ValueError("each line must be a JSON object with a string 'input'")
        req_id = request.get("id")
        text = request.get("input")
        if not isinstance(text, str):
            raise ValueError("each line must be a JSON object with a string 'input'")
        # A line is POST /v1/diagnose's request plus `id`: its own `top` wins over the command's --top.
        line_top = request.get("top", top)
        if isinstance(line_top, bool) or not isinstance(line_top, int) or not 1 <= line_top <= MAX_TOP:
            raise ValueError(f"'top' must be a whole number from 1 to {MAX_TOP}")
        label = f"request {req_id}" if req_id is not None else f"request on line {n}"
        result = diagnoser.diagnose_input(text, top=line_top, name=label)
        return BatchResult(**dict(result), id=req_id if req_id is not None else n, line=n)
    except (ValueError, InputError) as exc:
        return BatchError(id=req_id, line=n, error=str(exc))


def match_jsonl(diagnoser: Diagnoser, top: int, stream: BinaryIO, out: IO[str]) -> None:
    for n, raw in request_lines(stream):
        if raw is not None and not raw.strip():
            continue
        out.write(answer(diagnoser, raw, n, top).model_dump_json() + "\n")
        out.flush()

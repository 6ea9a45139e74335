"""``match --jsonl``: one ``{"id", "input"}`` request a line in, one result (or error) a line out.

Lines are read with a bound: a line longer than :data:`MAX_REQUEST_BYTES` is answered with an error and
skipped in chunks, never held whole. Every answer carries the request's ``id`` when the line had one, and
``line`` (its 1-based line number) always, so an error can be matched to the request that caused it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any, BinaryIO

from kb.inputs import MAX_INPUT_BYTES, InputError

#: Longest request line read: the input cap of a paste, with room for JSON escaping.
MAX_REQUEST_BYTES = 2 * MAX_INPUT_BYTES + 64 * 1024
_SKIP_CHUNK = 1 << 20


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


def answer(diagnoser: Any, raw: bytes | None, n: int, top: int, limit: int = MAX_REQUEST_BYTES) -> dict[str, Any]:
    """The output object for request line ``n``: ``{"id", "line", ...result}`` or ``{"id", "line", "error"}``."""
    req_id: Any = None
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
        label = f"request {req_id}" if req_id is not None else f"request on line {n}"
        result = diagnoser.diagnose_input(text, top=top, name=label)
        return {"id": req_id if req_id is not None else n, "line": n, **result.model_dump(mode="json")}
    except (ValueError, InputError) as exc:
        return {"id": req_id, "line": n, "error": str(exc)}


def match_jsonl(diagnoser: Any, top: int, stream: BinaryIO, out: IO[str]) -> None:
    for n, raw in request_lines(stream):
        if raw is not None and not raw.strip():
            continue
        out.write(json.dumps(answer(diagnoser, raw, n, top), ensure_ascii=False) + "\n")
        out.flush()

"""A small OpenAI-compatible chat server for the LLM tests, run as a real process:

    python -m uvicorn tests.llm_server:app --host 127.0.0.1 --port PORT

The requested model name picks the behaviour:

* ``faithful`` - answers from the prompt only: the first entry id and its override lines, copied;
* ``invent`` - the same plus an override that is in no entry (``trainer.fake_key=1``);
* ``quote`` - the same plus a fenced log line that is in no entry;
* ``broken`` - HTTP 500.

Every request is remembered so a test can read what the LLM was shown (``GET /requests``).
"""

from __future__ import annotations

import re
import time
from typing import Any

from fastapi import FastAPI, HTTPException

app = FastAPI()
_seen: list[dict[str, Any]] = []


def _faithful(system: str) -> str:
    ids = re.findall(r"^### entry: (\S+)$", system, re.M)
    lines: list[str] = []
    block = re.search(r"^overrides for verl [^\n]*:\n(.*?)\n\n", system, re.M | re.S)
    if block:
        for line in block.group(1).splitlines():
            token = line.split()[0] if line.strip() else ""
            if token and token != "(none)":
                lines.append(token)
    reply = f"This is the problem described in [{ids[0] if ids else 'unknown'}]."
    if lines:
        reply += "\n\nSet these overrides:\n\n```\n" + "\n".join(lines) + "\n```"
    reply += "\n\nThen run again and check that the error is gone."
    return reply


@app.get("/v1/models")
def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "faithful", "object": "model", "created": 0, "owned_by": "test"}]}


@app.get("/requests")
def requests() -> list[dict[str, Any]]:
    return _seen


@app.post("/v1/chat/completions")
def chat(body: dict[str, Any]) -> dict[str, Any]:
    _seen.append(body)
    mode = body.get("model", "faithful")
    if mode == "broken":
        raise HTTPException(status_code=500, detail="broken on purpose")
    system = next((m["content"] for m in body.get("messages", []) if m.get("role") == "system"), "")
    content = _faithful(system)
    if mode == "invent":
        content += "\n\nAlso add `trainer.fake_key=1`, it makes the run stable."
    elif mode == "quote":
        content += "\n\nYou will see this line:\n\n```\nRuntimeError: flux capacitor desynchronised on rank 3\n```"
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": mode,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }

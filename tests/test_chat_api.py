"""POST /v1/ask and the OpenAI-compatible POST /v1/chat/completions, on a real uvicorn server."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from server.app import create_app
from server.settings import ServerSettings
from tests.llm_harness import llm_server
from tests.server_harness import running

RAY_CPUS = "how do I limit the number of CPUs ray uses in a new verl release? ray_init.num_cpus gets rejected"


@pytest.fixture(scope="module")
def api(diagnoser) -> Iterator[str]:
    with running(create_app(ServerSettings(max_body_bytes=64 * 1024), diagnoser)) as base:
        yield base


@pytest.fixture(autouse=True)
def _no_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VERL_DOCTOR_LLM_URL", raising=False)


def chat(api: str, *turns: str, **extra: object) -> httpx.Response:
    messages = [{"role": "user", "content": t} for t in turns]
    return httpx.post(
        f"{api}/v1/chat/completions", json={"model": "verl-doctor", "messages": messages, **extra}, timeout=120
    )


def test_ask_route(api: str) -> None:
    r = httpx.post(
        f"{api}/v1/ask",
        json={"messages": [{"role": "user", "content": RAY_CPUS}, {"role": "user", "content": "I'm on 0.5"}]},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert not body["abstained"] and body["followup"]
    assert body["citations"][0]["id"] == "ray-init-num-cpus-renamed"
    assert body["overrides"][0]["line"] == "ray_init.num_cpus=16"
    r = httpx.post(
        f"{api}/v1/ask", json={"messages": [{"role": "user", "content": "how do I center a div in css"}]}, timeout=120
    )
    assert r.json()["abstained"] and r.json()["citations"] == []


def test_chat_completion(api: str) -> None:
    r = chat(api, "How do train/mini/micro batch sizes relate when rollout.n is 5?", temperature=0.2, max_tokens=50)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["object"] == "chat.completion" and body["model"] == "verl-doctor" and body["id"].startswith("chatcmpl-")
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["finish_reason"] == "stop"
    assert "[batch-size-train-mini-micro]" in choice["message"]["content"]
    assert body["verl_doctor"]["citations"][0]["id"] == "batch-size-train-mini-micro"
    assert body["usage"]["total_tokens"] == body["usage"]["prompt_tokens"] + body["usage"]["completion_tokens"]


def test_chat_streaming(api: str) -> None:
    question = "how do I pass a proxy to wandb only, not to the whole job?"
    whole = chat(api, question).json()["choices"][0]["message"]["content"]
    payload = {"model": "verl-doctor", "stream": True, "messages": [{"role": "user", "content": question}]}
    events: list[str] = []
    with httpx.stream("POST", f"{api}/v1/chat/completions", json=payload, timeout=120) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = [line[len("data: ") :] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "verl-doctor" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1 and len(chunks) > 3
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole and "[wandb-proxy]" in text


def test_openai_content_parts_and_system_messages(api: str) -> None:
    messages = [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "text", "text": "how do I pass a proxy to wandb only?"}]},
    ]
    r = httpx.post(f"{api}/v1/chat/completions", json={"model": "verl-doctor", "messages": messages}, timeout=120)
    assert r.status_code == 200 and r.json()["verl_doctor"]["citations"][0]["id"] == "wandb-proxy"


@pytest.mark.parametrize(
    ("path", "payload", "status"),
    [
        ("/v1/chat/completions", {"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}, 404),
        ("/v1/chat/completions", {"model": "verl-doctor", "messages": []}, 422),
        ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": "hi"}]}, 422),
        ("/v1/chat/completions", {"messages": [{"role": "robot", "content": "hi"}]}, 422),
        ("/v1/ask", {"messages": [{"role": "user", "content": "hi"}], "verl_version": "banana"}, 422),
        ("/v1/ask", {"question": "  "}, 422),  # `question` is accepted (issue 13), but not an empty one
    ],
)
def test_errors_are_problem_documents(api: str, path: str, payload: dict[str, object], status: int) -> None:
    r = httpx.post(f"{api}{path}", json=payload, timeout=60)
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/problem+json")
    assert r.json()["status"] == status and r.json()["title"]


def test_too_large_body(api: str) -> None:
    r = chat(api, "x" * 100_000)
    assert r.status_code == 413 and r.json()["title"] == "Request too large"


def test_models_and_openapi(api: str) -> None:
    assert httpx.get(f"{api}/v1/models").json()["data"][0]["id"] == "verl-doctor"
    paths = httpx.get(f"{api}/openapi.json").json()["paths"]
    assert {"/v1/ask", "/v1/chat/completions", "/v1/models"} <= set(paths)


def test_bearer_token(diagnoser) -> None:
    with running(create_app(ServerSettings(token="s3cret"), diagnoser)) as base:
        payload = {"messages": [{"role": "user", "content": "how do I pass a proxy to wandb only?"}]}
        r = httpx.post(f"{base}/v1/chat/completions", json=payload, timeout=60)
        assert r.status_code == 401 and r.headers["content-type"].startswith("application/problem+json")
        assert httpx.post(f"{base}/v1/ask", json=payload, timeout=60).status_code == 401
        ok = httpx.post(f"{base}/v1/ask", json=payload, headers={"Authorization": "Bearer s3cret"}, timeout=60)
        assert ok.status_code == 200


def test_chat_with_llm_rejects_an_invented_override(api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with llm_server() as url:
        monkeypatch.setenv("VERL_DOCTOR_LLM_URL", url)
        monkeypatch.setenv("VERL_DOCTOR_LLM_MODEL", "invent")
        body = chat(api, RAY_CPUS, "I'm on 0.5").json()
        content = body["choices"][0]["message"]["content"]
        assert "trainer.fake_key" not in content and "ray_init.num_cpus=16" in content
        assert body["verl_doctor"]["mode"] == "extractive" and "rejected" in body["verl_doctor"]["llm_note"]
        monkeypatch.setenv("VERL_DOCTOR_LLM_MODEL", "faithful")
        body = chat(api, RAY_CPUS, "I'm on 0.5").json()
        assert body["verl_doctor"]["mode"] == "llm"
        assert body["choices"][0]["message"]["content"].startswith("This is the problem described in")

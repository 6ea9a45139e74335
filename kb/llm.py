"""The optional LLM writer: an OpenAI-compatible chat endpoint, and the check every reply must pass.

``VERL_DOCTOR_LLM_URL`` names the server (``http://127.0.0.1:8001/v1``, or the full
``.../chat/completions`` URL); ``VERL_DOCTOR_LLM_MODEL`` the model (default: the first one the server
lists under ``/models``); ``VERL_DOCTOR_LLM_API_KEY`` an optional bearer key;
``VERL_DOCTOR_LLM_TIMEOUT`` seconds (default 60).

The LLM only rewords: a reply is accepted only when every override token (``key=value``) and every
quoted log line in it (fenced code, ``>`` quotes, long inline code) is found in the retrieved entries
or in the user's own messages. Otherwise the extractive answer is used. The standard library's HTTP
client is used, so nothing is imported unless an LLM is configured.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


class LLMError(Exception):
    """The LLM server could not be reached or answered something that is not a chat completion."""


def _endpoint(base: str) -> tuple[str, str]:
    """(chat completions URL, models URL) for a base URL given with or without /v1."""
    base = base.strip().rstrip("/")
    if base.endswith("/chat/completions"):
        root = base[: -len("/chat/completions")]
        return base, root + "/models"
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions", base + "/models"


@dataclass
class LLMClient:
    url: str
    model: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_tokens: int = 900
    _resolved_model: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls) -> LLMClient | None:
        url = os.environ.get("VERL_DOCTOR_LLM_URL", "").strip()
        if not url:
            return None
        try:
            timeout = float(os.environ.get("VERL_DOCTOR_LLM_TIMEOUT", "60"))
        except ValueError:
            timeout = 60.0
        return cls(
            url=url,
            model=os.environ.get("VERL_DOCTOR_LLM_MODEL") or None,
            api_key=os.environ.get("VERL_DOCTOR_LLM_API_KEY") or None,
            timeout=timeout,
        )

    def _request(self, url: str, payload: dict[str, Any] | None = None) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if payload is not None:
            data = json.dumps(payload).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # a URL the user configured
                return json.loads(resp.read(4 * 1024 * 1024).decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            raise LLMError(f"{url}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            raise LLMError(f"{url}: {getattr(exc, 'reason', None) or exc}") from None
        except ValueError:
            raise LLMError(f"{url}: the reply is not JSON") from None

    def model_name(self) -> str:
        if self.model:
            return self.model
        if self._resolved_model is None:
            _, models_url = _endpoint(self.url)
            try:
                listed = self._request(models_url)
                self._resolved_model = str(listed["data"][0]["id"])
            except (LLMError, KeyError, IndexError, TypeError):
                self._resolved_model = "default"
        return self._resolved_model

    def complete(self, messages: Sequence[dict[str, str]]) -> str:
        chat_url, _ = _endpoint(self.url)
        body = self._request(
            chat_url,
            {
                "model": self.model_name(),
                "messages": list(messages),
                "temperature": 0,
                "max_tokens": self.max_tokens,
                "stream": False,
            },
        )
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMError("the reply has no choices[0].message.content") from None
        if not isinstance(content, str) or not content.strip():
            raise LLMError("the reply is empty")
        return content


# --------------------------------------------------------------------------- checking a reply

# key=value with a config-looking key (dotted, snake_case or an environment variable); '+'/'~' kept.
_OVERRIDE = re.compile(
    r"(?<![\w.+~/-])(?P<tok>[+~]?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s?=(?!=)\s?"
    r"(?P<val>'[^'\n]*'|\"[^\"\n]*\"|\[[^\]\n]*\]|[^\s`'\",;)\]]*)"
)
_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = re.compile(r"`([^`\n]+)`")
_WS = re.compile(r"\s+")


def _looks_like_key(key: str) -> bool:
    bare = key.lstrip("+~")
    return "." in bare or "_" in bare or bare.isupper()


def override_tokens(text: str) -> list[str]:
    """Every ``key=value`` in a text, normalised (no spaces around '=', trailing punctuation dropped)."""
    out = []
    for m in _OVERRIDE.finditer(text):
        key, val = m["tok"], m["val"].rstrip(".:")
        if _looks_like_key(key) and val:
            out.append(f"{key}={val}")
    return out


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


def quoted_lines(text: str) -> list[str]:
    """Lines a reply presents as quoted output: fenced code, '>' quotes, and long inline code spans."""
    out: list[str] = []
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            if line.strip():
                out.append(line.strip())
            continue
        if line.lstrip().startswith(">"):
            quoted = line.lstrip()[1:].strip()
            if quoted:
                out.append(quoted)
        for span in _INLINE.findall(line):
            if " " in span.strip() and len(span.strip()) >= 15:
                out.append(span.strip())
    return out


_SHELL_NOISE = re.compile(r"^(?:export|set|env|\$|\\|&&|\s)*$")


@dataclass
class Grounding:
    """What a reply may contain: the retrieved entries' text and the user's own messages."""

    texts: list[str]
    tokens: set[str] = field(init=False)
    haystack: str = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = {t.lstrip("+~") for text in self.texts for t in override_tokens(text)}
        self.haystack = "\n".join(_norm(t.replace("`", "")) for t in self.texts)

    def token_ok(self, token: str) -> bool:
        bare = token.lstrip("+~")
        if bare in self.tokens:
            return True
        # A shortened key (ppo_mini_batch_size=64 for actor_rollout_ref.actor.ppo_mini_batch_size=64) invents nothing.
        return any(t.endswith("." + bare) for t in self.tokens)

    def line_ok(self, line: str) -> bool:
        rest = line
        for m in _OVERRIDE.finditer(line):
            if _looks_like_key(m["tok"]):
                rest = rest.replace(m.group(0), " ")
        if _SHELL_NOISE.match(rest):
            return True  # only override tokens (checked one by one) and shell glue
        return _norm(line.replace("`", "")) in self.haystack


def check_reply(reply: str, grounding: Grounding) -> list[str]:
    """Problems that make a reply unacceptable (empty list: accepted)."""
    problems = []
    for token in dict.fromkeys(override_tokens(reply)):
        if not grounding.token_ok(token):
            problems.append(f"override {token!r} is not in the retrieved entries or the user's input")
    for line in dict.fromkeys(quoted_lines(reply)):
        if not grounding.line_ok(line):
            problems.append(f"quoted line {line[:120]!r} is not in the retrieved entries or the user's input")
    return problems


def unsupported_overrides(text: str, allowed: Iterable[str]) -> list[str]:
    """Override tokens of ``text`` that appear in none of ``allowed`` (for the evaluation)."""
    grounding = Grounding(list(allowed))
    return [t for t in dict.fromkeys(override_tokens(text)) if not grounding.token_ok(t)]

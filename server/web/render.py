"""Rendering helpers for the FAQ pages: content negotiation, Jinja2, safe Markdown, security headers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import regex
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from markdown_it import MarkdownIt
from markupsafe import Markup
from pydantic import BaseModel

from kb import __version__
from kb.patterns import CONFIRM_TIMEOUT, MAX_CONFIRM_LINE

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"

#: Pages load only their own script and stylesheet; nothing inline, nothing from elsewhere.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token may be in a page's URL once, on the way to the cookie
    "X-Frame-Options": "DENY",
}

_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")

_env = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(TEMPLATES)),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def markdown(text: str) -> Markup:
    """Markdown to HTML with raw HTML escaped (never passed through) and unsafe link schemes dropped."""
    return Markup(_md.render(text or ""))  # markdown-it escapes raw HTML (html=False)


def markdown_inline(text: str) -> Markup:
    """One line of Markdown (code spans, emphasis, links) without a paragraph around it; raw HTML escaped."""
    return Markup(_md.renderInline(text or ""))


def is_url(text: str) -> bool:
    return bool(re.match(r"https?://[^\s<>\"']+$", text))


def highlight(text: str, pattern: str | None) -> list[tuple[str, bool]]:
    """``text`` split into (part, is_match) pieces around the first match of ``pattern`` (escaped by the template)."""
    if pattern:
        # A corpus regex on input text: the linear-time rule's engine under the matcher's timeout, never
        # unbounded stdlib re (the evidence text is cut at 500 characters, where a pattern may backtrack).
        try:
            m = regex.search(pattern, text[:MAX_CONFIRM_LINE], timeout=CONFIRM_TIMEOUT)
        except (regex.error, RecursionError, TimeoutError):
            m = None
        if m is not None and m.end() > m.start():
            return [p for p in ((text[: m.start()], False), (m.group(0), True), (text[m.end() :], False)) if p[0]]
    return [(text, True)]


def check_text(check: BaseModel | dict[str, Any] | None) -> str:
    """A condition's machine check (or a metric signature) as one short line, the fields set only."""
    if isinstance(check, BaseModel):
        check = check.model_dump(mode="json", exclude_none=True)
    if not check:
        return ""
    return ", ".join(f"{k}: {v}" for k, v in check.items())


def signal_chips(signals: Any) -> list[str]:
    """The chips above a diagnosis: exceptions, Hydra errors and versions, each once, in order (an exception
    chain names the same type at every level, and a chip per level said nothing new)."""
    chips = [*signals.exceptions, *signals.hydra_errors, *(f"{k} {v}" for k, v in signals.versions.items())]
    return list(dict.fromkeys(chips))


_env.filters["markdown"] = markdown
_env.filters["inline"] = markdown_inline
_env.filters["add_export"] = lambda line: f"export {line}"
_env.globals.update(
    is_url=is_url, highlight=highlight, check_text=check_text, signal_chips=signal_chips, version=__version__
)


def wants_json(request: Request) -> bool:
    """``?format=json``, or an Accept header that asks for JSON rather than HTML."""
    fmt = request.query_params.get("format")
    if fmt is not None:
        return fmt.lower() == "json"
    accept = request.headers.get("accept", "").lower()
    return ("application/json" in accept or "+json" in accept) and "text/html" not in accept


def root_of(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def html(
    request: Request, template: str, status: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    context.setdefault("title", "verl-doctor")
    context.setdefault("query", "")
    body = _env.get_template(template).render(root=root_of(request), **context)
    return HTMLResponse(body, status_code=status, headers={**SECURITY_HEADERS, **(headers or {})})


def page(request: Request, data: BaseModel, template: str, status: int = 200, **context: Any) -> Response:
    """The HTML page, or its JSON twin: the same data, as the model serialises it."""
    if wants_json(request):
        return JSONResponse(data.model_dump(mode="json"), status_code=status, headers={"Vary": "Accept"})
    return html(request, template, status, headers={"Vary": "Accept"}, data=data, **context)

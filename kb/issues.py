"""A GitHub issue archive: parsing an export into the issues the archive's index searches.

Two export shapes are read, as a JSON array, several concatenated arrays (``gh api --paginate``) or
JSON Lines:

* ``gh issue list --json number,title,body,url,state,labels,comments`` - ``url`` is the web link,
  ``state`` is ``OPEN``/``CLOSED``, ``labels`` are objects with ``name``, ``comments`` a list of
  objects with ``body``;
* the REST API's issue objects (``gh api repos/OWNER/REPO/issues?state=all --paginate``) -
  ``html_url`` is the web link, ``comments`` is a count, and pull requests carry ``pull_request``
  (they are skipped).

kb never imports the index itself (``indexer.issues``); it implements :class:`kb.retriever.IssueSearcher`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from kb.result import SimilarIssue

MAX_BODY = 6000
MAX_COMMENT = 1500
MAX_COMMENTS = 8
MAX_EXPORT_BYTES = 512 * 1024 * 1024


class Issue(BaseModel):
    number: int
    title: str
    url: str
    state: str = ""
    labels: list[str] = Field(default_factory=list)
    body: str = ""
    comments: list[str] = Field(default_factory=list)

    def summary(self, score: float) -> SimilarIssue:
        return SimilarIssue(
            number=self.number,
            title=self.title,
            url=self.url,
            state=self.state,
            labels=list(self.labels),
            score=round(max(0.0, min(1.0, score)), 3),
        )


class ExportError(ValueError):
    """The file is not a GitHub issues export we can read (the message says why)."""


_API_URL = re.compile(r"^https://api\.github\.com/repos/([^/]+/[^/]+)/issues/(\d+)$")


def _web_url(obj: dict[str, Any]) -> str:
    html = obj.get("html_url")
    if isinstance(html, str) and html.startswith("http"):
        return html
    url = obj.get("url")
    if isinstance(url, str):
        m = _API_URL.match(url)
        if m:
            return f"https://github.com/{m[1]}/issues/{m[2]}"
        if url.startswith("http"):
            return url
    return ""


def _labels(value: Any) -> list[str]:
    out: list[str] = []
    items = value.get("nodes", []) if isinstance(value, dict) else value
    for item in items if isinstance(items, list) else []:
        name = item.get("name") if isinstance(item, dict) else item
        if isinstance(name, str) and name:
            out.append(name)
    return out


def _comments(value: Any) -> list[str]:
    items = value.get("nodes", []) if isinstance(value, dict) else value
    if not isinstance(items, list):
        return []  # the REST API gives a count here
    out = []
    for item in items[:MAX_COMMENTS]:
        body = item.get("body") if isinstance(item, dict) else item
        if isinstance(body, str) and body.strip():
            out.append(body.strip()[:MAX_COMMENT])
    return out


def issue_from_json(obj: Any) -> Issue | None:
    """One issue from a gh or REST object; None for pull requests and objects that are no issue."""
    if not isinstance(obj, dict) or "pull_request" in obj:
        return None
    number, title = obj.get("number"), obj.get("title")
    if not isinstance(number, int) or isinstance(number, bool) or not isinstance(title, str):
        return None
    body = obj.get("body")
    return Issue(
        number=number,
        title=title.strip()[:300],
        url=_web_url(obj),
        state=str(obj.get("state") or "").lower(),
        labels=_labels(obj.get("labels")),
        body=(body if isinstance(body, str) else "")[:MAX_BODY],
        comments=_comments(obj.get("comments")),
    )


def _json_values(text: str) -> list[Any]:
    """One JSON document, several concatenated ones (``gh api --paginate``), or JSON Lines."""
    text = text.strip()
    if not text:
        raise ExportError("the file is empty")
    try:
        return [json.loads(text)]
    except json.JSONDecodeError as first:
        decoder = json.JSONDecoder()
        values: list[Any] = []
        pos = 0
        while pos < len(text):
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError:
                raise ExportError(f"not JSON: {first.msg} at line {first.lineno} column {first.colno}") from None
            values.append(value)
            pos = end
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
        return values


def parse_export(data: bytes, name: str = "export") -> list[Issue]:
    """Every issue of an export, deduplicated by number (the last copy wins). Raises ExportError."""
    if len(data) > MAX_EXPORT_BYTES:
        raise ExportError(f"{name} is {len(data)} bytes; the limit is {MAX_EXPORT_BYTES}")
    if b"\x00" in data[:8192]:
        raise ExportError(f"{name} is a binary file, not a JSON export")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ExportError(f"{name} is not UTF-8 (byte {exc.start})") from None
    objects: list[Any] = []
    for value in _json_values(text):
        if isinstance(value, list):
            objects += value
        elif isinstance(value, dict) and isinstance(value.get("items"), list):  # the search API's envelope
            objects += value["items"]
        else:
            objects.append(value)
    found: dict[int, Issue] = {}
    skipped = 0
    for obj in objects:
        issue = issue_from_json(obj)
        if issue is None:
            skipped += 1
            continue
        found[issue.number] = issue
    if not found:
        raise ExportError(
            f"{name} holds no issues ({skipped} object(s) were pull requests or lacked number/title); expected the "
            "JSON of `gh issue list --json number,title,body,url,state,labels,comments` or of the REST API"
        )
    return sorted(found.values(), key=lambda i: i.number)


def issue_document(issue: Issue) -> str:
    """What an issue is embedded by: its title and the error part of its body."""
    from kb.distill import distill
    from kb.loglines import split_lines
    from kb.signals import extract_signals

    lines = split_lines(issue.body[:4000])
    core = distill(lines, extract_signals(lines), max_chars=800) if lines else ""
    return f"{issue.title}\n{core}".strip()


def issue_lexical_text(issue: Issue) -> str:
    """What an issue is found by lexically: title (twice, it matters most), body and the first comments."""
    return "\n".join([issue.title, issue.title, issue.body[:4000], *issue.comments[:3]])

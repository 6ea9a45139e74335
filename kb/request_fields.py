"""The request fields of every surface, one name and one meaning each (issue 13 item 20).

A client that learns a name on one surface finds it under the same name on the others: ``input`` is the
user's text wherever text is diagnosed or checked, ``verl_version`` the release to render or check for,
``top`` how many results. This table is the contract: the README's "Request fields" table is written from
it (``scripts/update_readme.py``), and ``tests/test_request_fields.py`` holds the HTTP API (its OpenAPI
document), the MCP tools (their input schemas) and the command line (its click parameters) to it, so a
surface that renames a field, or a new tool or route that invents its own name, fails there.

Old names that clients may already send stay accepted, but are no longer advertised: ``aliases`` lists
them (``surface``, where, old name). Pure data: nothing here imports a surface.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Alias:
    surface: str  # "HTTP", "MCP" or "CLI"
    where: str  # the route, tool or command that still takes the old name
    old: str


@dataclass(frozen=True)
class RequestField:
    name: str
    meaning: str
    http: tuple[str, ...] = ()  # "METHOD /path" of the routes that take it (body, query or path)
    mcp: tuple[str, ...] = ()  # tool names
    cli: tuple[tuple[str, str], ...] = ()  # (command path, click parameter name)
    aliases: tuple[Alias, ...] = field(default=())
    note: str = ""


REQUEST_FIELDS: tuple[RequestField, ...] = (
    RequestField(
        "input",
        "the user's text: a traceback, a log excerpt or a question to diagnose; a launch command, shell script "
        "or `.hydra/overrides.yaml` to check; a launch command, script, `overrides.yaml` or `config.yaml` to preflight",
        http=("POST /v1/diagnose", "POST /v1/preflight"),
        mcp=("diagnose", "check_overrides", "preflight"),
        cli=(("match", "source"), ("check-overrides", "file_path"), ("preflight", "words")),
        aliases=(Alias("MCP", "diagnose", "text"), Alias("MCP", "check_overrides", "command_line")),
        note='CLI: the text comes from FILE or stdin; `match --jsonl` reads `{"id", "input", "top"}` lines',
    ),
    RequestField(
        "top",
        "how many results: diagnoses, search hits, or the closest entries an abstaining answer lists",
        http=("POST /v1/diagnose", "POST /v1/ask", "GET /v1/search"),
        mcp=("diagnose", "ask", "search_faq"),
        cli=(("match", "top"), ("ask", "top"), ("corpus search", "top"), ("issues search", "top"), ("tui", "top")),
        aliases=(Alias("HTTP", "GET /v1/search", "k"), Alias("MCP", "search_faq", "k")),
        note="CLI: `-k` stays a short form of `--top` on `corpus search` and `issues search`",
    ),
    RequestField(
        "question",
        "a question in words (or a follow-up to `earlier`)",
        http=("POST /v1/ask",),
        mcp=("ask",),
        cli=(("ask", "question"),),
    ),
    RequestField(
        "earlier",
        "the user's earlier messages of the conversation, oldest first, for a follow-up such as \"and on 0.5?\"",
        http=("POST /v1/ask",),
        mcp=("ask",),
        cli=(("ask", "earlier"),),
    ),
    RequestField(
        "messages",
        "the whole conversation as OpenAI `{role, content}` messages (instead of `question` and `earlier`)",
        http=("POST /v1/ask", "POST /v1/chat/completions"),
        cli=(("ask", "messages_path"),),
        note="CLI: `--messages FILE` names a JSON file of them",
    ),
    RequestField(
        "verl_version",
        "the verl release to render overrides for or check against, e.g. `0.9.1` (default: every range, or the "
        "newest release when checking)",
        http=("POST /v1/ask", "POST /v1/chat/completions", "GET /v1/entries/{entry_id}", "POST /v1/preflight"),
        mcp=("ask", "get_entry", "check_overrides", "preflight"),
        cli=(
            ("ask", "verl_version"),
            ("corpus show", "verl_version"),
            ("check-overrides", "verl_version"),
            ("preflight", "verl_version"),
        ),
    ),
    RequestField(
        "nnodes",
        "the number of nodes the job will run on, when the overrides do not set `trainer.nnodes`",
        http=("POST /v1/preflight",),
        mcp=("preflight",),
        cli=(("preflight", "nnodes"),),
    ),
    RequestField(
        "gpus_per_node",
        "GPUs per node, when the overrides do not set `trainer.n_gpus_per_node`",
        http=("POST /v1/preflight",),
        mcp=("preflight",),
        cli=(("preflight", "gpus_per_node"),),
    ),
    RequestField(
        "query",
        "words, an error message or an entry id to search the FAQ for",
        http=("GET /v1/search",),
        mcp=("search_faq",),
        cli=(("corpus search", "query"), ("issues search", "query")),
        aliases=(Alias("HTTP", "GET /v1/search", "q"),),
    ),
    RequestField(
        "entry_id",
        "an entry's id, e.g. `ray-init-num-cpus-renamed` (results call it `id`)",
        http=("GET /v1/entries/{entry_id}",),
        mcp=("get_entry",),
        cli=(("corpus show", "entry_id"),),
        aliases=(Alias("MCP", "get_entry", "id"),),
    ),
    RequestField(
        "area",
        "only the entries of this area (`ray`, `rollout`, `config`, ...)",
        http=("GET /v1/entries",),
        cli=(("corpus list", "area"),),
    ),
    RequestField(
        "path",
        "a job's output directory (or one log file); over HTTP and MCP it must lie inside a scan root",
        http=("POST /v1/scan",),
        mcp=("scan",),
        cli=(("scan", "dirs"),),
    ),
    RequestField(
        "file",
        "instead of `path`: a multipart upload holding a `.tar.gz` of the job directory",
        http=("POST /v1/scan",),
    ),
    RequestField(
        "overrides",
        "Hydra overrides, one per item (an item with spaces is read as a command line)",
        mcp=("check_overrides",),
        cli=(("check-overrides", "overrides"),),
    ),
)

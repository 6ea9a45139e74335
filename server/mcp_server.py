"""MCP: the diagnosis tools and the FAQ entries, served with the official ``mcp`` SDK (2.x, ``MCPServer``).

One server definition, two transports:

* stdio — ``verl-doctor mcp`` runs :func:`build_server` with ``run("stdio")``;
* streamable HTTP — :func:`attach` mounts it at ``/mcp`` on the FastAPI app, with the SDK's session
  manager running inside the app's lifespan and the server's bearer token required when one is set.

Every tool returns the same pydantic model as the matching HTTP route, so MCP clients get it as
structured content (and as JSON text for clients that only read text).
"""

from __future__ import annotations

import functools
import hmac
import io
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError
from mcp.server.mcpserver.resources import FunctionResource
from mcp_types import ToolAnnotations
from pydantic import AliasChoices, BaseModel, Field

from kb import __version__
from kb.ask import MAX_MESSAGE_CHARS, AskAnswer, ChatMessage, ask
from kb.engine import Diagnoser
from kb.entry import Entry
from kb.entry_detail import EntryDetail, entry_detail, entry_summary
from kb.inputs import InputError, read_input
from kb.llm import LLMClient
from kb.overrides import OverrideReport, check_overrides, config_name_of, extract_overrides
from kb.preflight.models import PreflightResult
from kb.result import Result
from kb.scan.report import ScanReport
from kb.search import SearchHit, search_entries
from kb.suggest import no_such_entry
from kb.versions import VersionError, parse_version

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.types import ASGIApp, Receive, Scope, Send

ENTRY_URI = "verl-doctor://entries/{id}"
INDEX_URI = "verl-doctor://entries"
MCP_PATH = "/mcp"

INSTRUCTIONS = """\
verl-doctor diagnoses failures of verl (RL post-training for LLMs) from a knowledge base of known problems.
- diagnose: paste a traceback, a log excerpt or a question; get ranked known problems with cause, evidence and
  the Hydra overrides that fix it for the user's verl version.
- scan: a job's output directory (inside the server's scan roots): incidents across ranks, first failure vs cascade.
- ask: a question in words (with the user's earlier messages for a follow-up such as "and on 0.5?"); an answer
  that cites the entries it comes from, or an abstention with the closest entries.
- search_faq / get_entry: browse the knowledge base; entries are also resources at verl-doctor://entries/{id}.
- check_overrides: check Hydra overrides (a list, or a whole launch command or script as `input`) against a verl
  release before submitting.
- preflight: would verl start with this launch command / script / overrides.yaml / config.yaml? Findings in verl's
  order, each with the values that break it, the entry and the fix.
Every tool names its fields as the HTTP API does: `input` for the user's text, `verl_version` for the release.
"""

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

# Tool parameter types (module level: the SDK evaluates the annotations in this module's namespace).
#: Longest text the tools take, the HTTP API's JSON body cap (5 MB) in characters.
MAX_TEXT_CHARS = 5_000_000
#: Most overrides one check_overrides call may carry (items, or tokens taken from the command line).
MAX_OVERRIDES = 1000

# Every parameter is named as kb/request_fields.py says, the same as on HTTP and the command line. A name a
# tool took before (diagnose `text`, check_overrides `command_line`, search_faq `k`, get_entry `id`) is still
# accepted through a validation alias, but not advertised in the schema: clients that list the tools learn
# the new name, clients that hard-coded the old one keep working.
DiagnoseInput = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        validation_alias=AliasChoices("input", "text"),
        description="the user's text: a traceback, a log excerpt or a question about a verl failure",
    ),
]
Top = Annotated[int, Field(ge=1, le=20, description="how many diagnoses to return")]
Query = Annotated[str, Field(max_length=500, description="words, an error message or an entry id")]
SearchTop = Annotated[
    int, Field(ge=1, le=50, validation_alias=AliasChoices("top", "k"), description="how many entries to return")
]
AskTop = Annotated[int, Field(ge=1, le=10, description="when abstaining: how many closest entries to list")]
EntryId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=200,
        validation_alias=AliasChoices("entry_id", "id"),
        description="an entry id, e.g. ray-init-num-cpus-renamed",
    ),
]
VerlVersion = Annotated[
    str | None,
    Field(max_length=40, description="verl version to render or check overrides for, e.g. 0.9.1 (default: newest)"),
]
OverrideList = Annotated[
    list[Annotated[str, Field(max_length=10_000)]] | None,
    Field(
        max_length=MAX_OVERRIDES,
        description="Hydra overrides, one per item, e.g. ['ray_init.num_cpus=16', '+trainer.foo=1']",
    ),
]
CheckInput = Annotated[
    str | None,
    Field(
        max_length=200_000,
        validation_alias=AliasChoices("input", "command_line"),
        description="a launch command, shell script or .hydra/overrides.yaml text to take the overrides from",
    ),
]
PreflightInput = Annotated[
    str,
    Field(
        min_length=1,
        max_length=1_000_000,
        description="a launch command (python -m verl.trainer.main_ppo k=v ...), a launch script, or the text of a "
        ".hydra/overrides.yaml or config.yaml",
    ),
]
Resources = Annotated[
    int | None, Field(ge=1, le=100_000, description="nnodes / gpus_per_node when the input lacks them")
]
Question = Annotated[
    str,
    Field(min_length=1, max_length=MAX_MESSAGE_CHARS, description="a question about verl, or a follow-up to earlier"),
]
Earlier = Annotated[
    list[Annotated[str, Field(max_length=MAX_MESSAGE_CHARS)]] | None,
    Field(max_length=50, description="the user's earlier messages in this conversation, oldest first"),
]
ScanPath = Annotated[
    str,
    Field(min_length=1, max_length=4096, description="a job output directory (or a log file) inside a scan root"),
]


class MCPSetup(BaseModel):
    """What a server needs besides the diagnoser."""

    scan_roots: list[Path] = Field(default_factory=list)
    host: str = "127.0.0.1"
    warm_up: bool = False
    """Load the embedding model and index in the background at once (stdio; the HTTP app warms in its lifespan)."""


# --------------------------------------------------------------------------- helpers


class _Ready:
    """Loads the diagnoser's retriever once, whichever thread asks first; later callers wait for that load
    instead of starting their own."""

    def __init__(self, diagnoser: Diagnoser) -> None:
        self.diagnoser, self.lock = diagnoser, threading.Lock()

    def __call__(self) -> None:
        with self.lock:
            self.diagnoser.retriever  # noqa: B018 - builds it on first use


def _no_such_entry(diagnoser: Diagnoser, entry_id: str) -> str:
    return no_such_entry(entry_id, diagnoser.entries)


def entry_markdown(entry: Entry) -> str:
    """The entry's Markdown source (front matter and body); rebuilt from its sections if the file is gone."""
    try:
        return Path(entry.path).read_text(encoding="utf-8")
    except OSError:
        body = "\n\n".join(f"## {title}\n\n{text}" for title, text in entry.sections.items())
        return f"# {entry.title}\n\n{body}\n"


def _override_texts(overrides: list[str] | None, command_line: str | None) -> list[str]:
    """The same reading as ``verl-doctor check-overrides``: an item with spaces is a command line."""
    texts: list[str] = []
    for item in overrides or []:
        texts += extract_overrides(item) if (" " in item.strip() or "\n" in item) else [item.strip()]
    if command_line:
        texts += extract_overrides(command_line)
    return [t for t in texts if t]


# --------------------------------------------------------------------------- the server


def build_server(diagnoser: Diagnoser, setup: MCPSetup | None = None) -> MCPServer:
    """The MCP server: seven tools and the entries as resources, over ``diagnoser``."""
    setup = setup or MCPSetup()
    roots = [Path(r) for r in setup.scan_roots]
    ready = _Ready(diagnoser)
    if setup.warm_up:
        threading.Thread(target=ready, name="verl-doctor-warm-up", daemon=True).start()
    server: MCPServer = MCPServer(
        "verl-doctor",
        title="verl-doctor",
        description="Diagnoses verl failures: the known problem, its cause and the fix for your verl version.",
        instructions=INSTRUCTIONS,
        version=__version__,
        website_url="https://github.com/verl-project/verl",
        log_level="WARNING",
    )

    @server.tool(title="Diagnose a verl failure", annotations=_READ_ONLY)
    async def diagnose(input: DiagnoseInput, top: Top = 3) -> Result:
        """Diagnose a traceback, a log excerpt or a question: ranked known problems with their cause,
        evidence, conditions and the overrides that fix them. `abstained` is true when nothing matches well."""
        try:
            given = read_input(io.BytesIO(input.encode("utf-8", "replace")), "input")
        except InputError as exc:
            raise ToolError(str(exc)) from None

        def run() -> Result:
            ready()
            return diagnoser.diagnose_input(given, top)

        return await anyio.to_thread.run_sync(run)

    @server.tool(title="Scan a job directory", annotations=_READ_ONLY)
    async def scan(path: ScanPath) -> ScanReport:
        """Scan a job's output directory (or one log file) inside the server's scan roots: incidents grouped
        across ranks, the first failure vs its cascade, metric signatures, and the job's overrides checked."""
        from kb.scan.runner import scan_paths
        from server.safety import Refused, confine

        if not roots:
            raise ToolError("refused: this server has no scan roots; start it with --scan-root DIR to allow scans")
        try:
            target = confine(path, roots)
        except Refused as exc:
            raise ToolError(f"refused: {exc}" if exc.status == 403 else str(exc)) from None

        def run() -> ScanReport:
            ready()
            return scan_paths([target], diagnoser, confine_to=roots)

        return await anyio.to_thread.run_sync(run)

    @server.tool(name="ask", title="Ask about verl", annotations=_READ_ONLY)
    async def ask_tool(
        question: Question, earlier: Earlier = None, verl_version: VerlVersion = None, top: AskTop = 3
    ) -> AskAnswer:
        """Answer a question in words from the knowledge base: the cause, the conditions (and the facts it
        cannot see), the overrides for the verl version, how to check the fix, citing entry ids; or
        `abstained` with the closest entries. An LLM writes the answer when $VERL_DOCTOR_LLM_URL is set,
        checked against the cited entries."""
        messages = [ChatMessage(role="user", content=text) for text in [*(earlier or []), question] if text.strip()]
        if not messages:
            raise ToolError("the question is empty")

        def run() -> AskAnswer:
            ready()
            return ask(diagnoser, messages, verl_version=verl_version, top=top, llm=LLMClient.from_env())

        try:
            return await anyio.to_thread.run_sync(run)
        except VersionError as exc:
            raise ToolError(f"verl_version: {exc}") from None

    @server.tool(title="Search the verl FAQ", annotations=_READ_ONLY)
    async def search_faq(query: Query, top: SearchTop = 10) -> list[SearchHit]:
        """Search the knowledge base (semantic and lexical, exact id/title hits first)."""

        def run() -> list[SearchHit]:
            ready()
            return search_entries(diagnoser, query, top)

        return await anyio.to_thread.run_sync(run)

    @server.tool(title="Get a FAQ entry", annotations=_READ_ONLY)
    async def get_entry(entry_id: EntryId, verl_version: VerlVersion = None) -> EntryDetail:
        """One knowledge-base entry in full: symptoms, conditions, cause, fix, and its overrides rendered
        for a verl version (every version range when none is given)."""
        entry = diagnoser.entries.get(entry_id)
        if entry is None:
            raise ToolError(_no_such_entry(diagnoser, entry_id))
        if verl_version is not None:
            try:
                parse_version(verl_version)
            except VersionError as exc:
                raise ToolError(str(exc)) from None
        return entry_detail(entry, verl_version)

    async def check_overrides_tool(
        overrides: OverrideList = None,
        input: CheckInput = None,
        verl_version: VerlVersion = None,
    ) -> OverrideReport:
        """Check Hydra overrides against a verl release before submitting a job: each one is fine, needs '+',
        must drop '+', is unknown (with a suggestion, e.g. a renamed key), or is accepted but ignored."""
        texts = await anyio.to_thread.run_sync(_override_texts, overrides, input)
        if not texts:
            raise ToolError("no overrides given: pass `overrides` (a list) or `input` (a launch command or script)")
        if len(texts) > MAX_OVERRIDES:
            raise ToolError(f"{len(texts)} overrides given; at most {MAX_OVERRIDES} are checked in one call")
        # A launch command's --config-name says whether Megatron's trainer config is the one to check against.
        launched = next(filter(None, (config_name_of(t) for t in [*(overrides or []), input or ""] if " " in t)), None)
        try:
            return await anyio.to_thread.run_sync(check_overrides, texts, verl_version, launched)
        except VersionError as exc:
            raise ToolError(str(exc)) from None

    server.add_tool(check_overrides_tool, name="check_overrides", title="Check Hydra overrides", annotations=_READ_ONLY)

    async def preflight_tool(
        input: PreflightInput,
        verl_version: VerlVersion = None,
        nnodes: Resources = None,
        gpus_per_node: Resources = None,
    ) -> PreflightResult:
        """Would verl start with this launch (a command, a script, a .hydra/overrides.yaml or config.yaml text)?
        The checks verl runs at start-up for that release; the first error finding is the one verl would raise."""
        from kb.preflight.api import NoOverrides, preflight_text
        from kb.preflight.inputs import InputError as UnreadableLaunch

        try:
            return await anyio.to_thread.run_sync(preflight_text, input, verl_version, nnodes, gpus_per_node)
        except (UnreadableLaunch, NoOverrides, VersionError) as exc:
            raise ToolError(str(exc)) from None

    server.add_tool(preflight_tool, name="preflight", title="Preflight a verl launch", annotations=_READ_ONLY)

    _add_resources(server, diagnoser)
    return server


def _add_resources(server: MCPServer, diagnoser: Diagnoser) -> None:
    def read_entry(entry_id: str) -> str:
        entry = diagnoser.entries.get(entry_id)
        if entry is None:
            raise ResourceNotFoundError(_no_such_entry(diagnoser, entry_id))
        return entry_markdown(entry)

    for entry in sorted(diagnoser.entries.values(), key=lambda e: (e.area, e.id)):
        server.add_resource(
            FunctionResource(
                uri=ENTRY_URI.format(id=entry.id),
                name=entry.id,
                title=entry.title,
                description=f"{entry.area} · verl {entry.meta.verl}",
                mime_type="text/markdown",
                fn=functools.partial(read_entry, entry.id),
            )
        )

    @server.resource(
        ENTRY_URI,
        name="entry",
        title="A verl-doctor FAQ entry",
        description="The entry's Markdown source.",
        mime_type="text/markdown",
    )
    def entry_resource(id: str) -> str:
        return read_entry(id)

    @server.resource(
        INDEX_URI,
        name="entries",
        title="Every verl-doctor FAQ entry",
        mime_type="application/json",
        description="id, title, area and verl range of every entry (as GET /v1/entries).",
    )
    def entries_index() -> str:
        entries = sorted(diagnoser.entries.values(), key=lambda e: (e.area, e.id))
        return "[" + ",".join(entry_summary(e).model_dump_json() for e in entries) + "]"


# --------------------------------------------------------------------------- HTTP


class BearerGate:
    """Lets a request through only with ``Authorization: Bearer <token>`` (when a token is set)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app, self.token = app, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.token is not None and scope["type"] == "http":
            header = dict(scope.get("headers") or []).get(b"authorization", b"")
            scheme, _, given = header.partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), self.token.encode()):
                from server.problems import problem_response

                response = problem_response(401, "Unauthorized", "missing or wrong bearer token")
                response.headers["WWW-Authenticate"] = "Bearer"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _transport_security(settings: Any) -> Any:
    """The SDK's loopback defaults plus the server's ``allowed_hosts``; None (the SDK's own choice) without them."""
    from mcp.server.transport_security import TransportSecuritySettings

    from server.settings import is_loopback

    extra = [h.strip() for h in settings.allowed_hosts if h.strip()]
    if not extra or not is_loopback(settings.host):
        return None
    names = ["127.0.0.1", "localhost", "[::1]", *extra]
    return TransportSecuritySettings(
        allowed_hosts=[h for n in names for h in (n, f"{n}:*")],
        allowed_origins=[o for n in names for o in (f"http://{n}", f"http://{n}:*", f"https://{n}", f"https://{n}:*")],
    )


def http_endpoint(app: FastAPI) -> tuple[ASGIApp, Any]:
    """The /mcp endpoint (streamable HTTP, behind the server's bearer token) over the app's diagnoser and
    settings, and its session manager, whose ``run()`` must be running while requests arrive
    (:mod:`server.mcp_mount` mounts the endpoint and runs the manager in the app's lifespan)."""
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp

    settings = app.state.settings
    server = build_server(app.state.diagnoser, MCPSetup(scan_roots=settings.scan_roots, host=settings.host))
    # Creates the session manager with the SDK's defaults (DNS-rebinding protection on a loopback host);
    # the Starlette app it returns is not used: its lifespan would never run once mounted.
    server.streamable_http_app(
        streamable_http_path=MCP_PATH, host=settings.host, transport_security=_transport_security(settings)
    )
    manager = server.session_manager
    app.state.mcp_server = server
    return BearerGate(StreamableHTTPASGIApp(manager), settings.token), manager

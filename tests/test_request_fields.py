"""One request schema across surfaces (issue 13 item 20): the HTTP API, the MCP tools and the command line
take every field under the name kb/request_fields.py gives it, new routes and tools invent no names of
their own, and the old names clients may already send are still accepted (never advertised)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import click
import pytest
from fastapi.testclient import TestClient
from mcp import Client
from mcp_types import CallToolResult

from kb.cli import main
from kb.corpus import load_corpus
from kb.engine import Diagnoser
from kb.request_fields import REQUEST_FIELDS
from server.app import create_app
from server.mcp_server import build_server
from server.settings import ServerSettings
from tests.conftest import CORPUS, REPO

FAILURE_LOG = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
TOP_ENTRY = "ray-init-num-cpus-renamed"
#: Fields the OpenAI chat API defines: /v1/chat/completions takes them as OpenAI names them.
OPENAI_FIELDS = {"model", "stream"}


@pytest.fixture(scope="module")
def lexical() -> Diagnoser:
    return Diagnoser(load_corpus(CORPUS))


@pytest.fixture(scope="module")
def client(lexical: Diagnoser) -> Iterator[TestClient]:
    with TestClient(create_app(ServerSettings(semantic=False), lexical), base_url="http://127.0.0.1") as c:
        yield c


@pytest.fixture(scope="module")
def mcp_tools(lexical: Diagnoser) -> dict[str, dict[str, Any]]:
    """Every tool's input schema, listed through the SDK's own client (in-process)."""

    async def run() -> dict[str, dict[str, Any]]:
        async with Client(build_server(lexical)) as c:
            return {t.name: t.input_schema for t in (await c.list_tools()).tools}

    return anyio.run(run)


def _resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    return spec["components"]["schemas"][ref.rsplit("/", 1)[1]] if ref else schema


def _http_fields(spec: dict[str, Any], route: str) -> dict[str, dict[str, Any]]:
    """name -> {"deprecated": bool} of what a route takes: query and path parameters and body properties."""
    method, path = route.split(" ", 1)
    op = spec["paths"][path][method.lower()]
    out = {p["name"]: {"deprecated": bool(p.get("deprecated"))} for p in op.get("parameters", [])}
    for content in op.get("requestBody", {}).get("content", {}).values():
        for name, prop in _resolve(spec, content["schema"]).get("properties", {}).items():
            out[name] = {"deprecated": bool(prop.get("deprecated"))}
    return out


def _command(path: str) -> click.Command:
    ctx = click.Context(main)
    cmd: click.Command | None = main
    for part in path.split():
        assert isinstance(cmd, click.Group), path
        cmd = cmd.get_command(ctx, part)
    assert cmd is not None, path
    return cmd


def test_the_http_api_takes_each_field_under_its_name(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for f in REQUEST_FIELDS:
        for route in f.http:
            taken = _http_fields(spec, route)
            assert f.name in taken and not taken[f.name]["deprecated"], (f.name, route, sorted(taken))
        for alias in f.aliases:
            if alias.surface == "HTTP":
                taken = _http_fields(spec, alias.where)
                assert taken.get(alias.old, {}).get("deprecated"), f"{alias.where} {alias.old}: marked deprecated"


def test_every_http_request_field_is_in_the_table(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    known = {(route, f.name) for f in REQUEST_FIELDS for route in f.http}
    known |= {(a.where, a.old) for f in REQUEST_FIELDS for a in f.aliases if a.surface == "HTTP"}
    for path, ops in spec["paths"].items():
        for method in ops:
            route = f"{method.upper()} {path}"
            for name in _http_fields(spec, route):
                if route == "POST /v1/chat/completions" and name in OPENAI_FIELDS:
                    continue
                assert (route, name) in known, f"{route} takes '{name}', which kb/request_fields.py does not name"


def test_the_mcp_tools_take_each_field_under_its_name(mcp_tools: dict[str, dict[str, Any]]) -> None:
    for f in REQUEST_FIELDS:
        for tool in f.mcp:
            assert f.name in mcp_tools[tool]["properties"], (f.name, tool, sorted(mcp_tools[tool]["properties"]))
        for alias in f.aliases:
            if alias.surface == "MCP":  # accepted, never advertised: clients learn the new name
                assert alias.old not in mcp_tools[alias.where]["properties"], (alias.where, alias.old)
    named = {(tool, f.name) for f in REQUEST_FIELDS for tool in f.mcp}
    for tool, schema in mcp_tools.items():
        for name in schema["properties"]:
            assert (tool, name) in named, f"MCP tool {tool} takes '{name}', which kb/request_fields.py does not name"


def test_the_command_line_spells_each_option_after_its_field() -> None:
    for f in REQUEST_FIELDS:
        for path, param_name in f.cli:
            params = {p.name: p for p in _command(path).params}
            assert param_name in params, (path, param_name, sorted(n for n in params if n))
            param = params[param_name]
            if isinstance(param, click.Option) and param.metavar != "FILE":
                assert "--" + f.name.replace("_", "-") in param.opts, (path, param.opts)
            elif isinstance(param, click.Option):
                # an option naming the file the field's value is read from (`check-overrides --file`)
                assert "--file" in param.opts or "--" + f.name in param.opts, (path, param.opts)


def _call(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
    async def run() -> list[CallToolResult]:
        async with Client(server) as c:
            return [await c.call_tool(name, args) for name, args in calls]

    return anyio.run(run)


def _text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


def test_mcp_tools_take_the_new_names_and_still_the_old_ones(lexical: Diagnoser) -> None:
    log = FAILURE_LOG.read_text()
    command = "python3 -m verl.trainer.main_ppo ray_init.num_cpus=16"
    calls = [
        ("diagnose", {"input": log, "top": 2}),
        ("diagnose", {"text": log, "top": 2}),
        ("check_overrides", {"input": command, "verl_version": "0.9.1"}),
        ("check_overrides", {"command_line": command, "verl_version": "0.9.1"}),
        ("search_faq", {"query": "ray_init num_cpus", "top": 2}),
        ("search_faq", {"query": "ray_init num_cpus", "k": 2}),
        ("get_entry", {"entry_id": TOP_ENTRY}),
        ("get_entry", {"id": TOP_ENTRY}),
        ("ask", {"question": "how do I set ray_init num_cpus?", "top": 1}),
        ("ask", {"question": "how do I set ray_init num_cpus?", "top": 3}),
        ("diagnose", {}),
    ]
    results = _call(build_server(lexical), calls)
    for (name, args), result in zip(calls[:-1], results[:-1], strict=True):
        assert not result.is_error, (name, args.keys(), _text(result))
    new, old = results[0:2]
    assert new.structured_content == old.structured_content
    assert new.structured_content is not None and len(new.structured_content["matches"]) <= 2
    assert results[2].structured_content == results[3].structured_content
    assert len(results[4].structured_content["result"]) == len(results[5].structured_content["result"]) == 2
    assert results[6].structured_content == results[7].structured_content
    assert [len(r.structured_content["closest"]) for r in results[8:10]] == [1, 3]
    assert results[-1].is_error and "input" in _text(results[-1])


def test_http_search_takes_query_and_top_and_still_q_and_k(client: TestClient) -> None:
    new = client.get("/v1/search", params={"query": "ray_init num_cpus", "top": 2})
    old = client.get("/v1/search", params={"q": "ray_init num_cpus", "k": 2})
    assert new.status_code == old.status_code == 200
    assert new.json() == old.json() and len(new.json()) == 2 and TOP_ENTRY in [h["id"] for h in new.json()]
    assert client.get("/v1/search", params={"query": "x", "top": 0}).status_code == 422
    assert client.get("/v1/search", params={"q": "x", "k": 51}).status_code == 422


def test_http_ask_takes_question_and_top(client: TestClient) -> None:
    # Rules and lexical search only: a question in words abstains, and `top` says how many closest entries.
    for top in (1, 3):
        r = client.post("/v1/ask", json={"question": "how do I set ray_init num_cpus?", "top": top})
        assert r.status_code == 200, r.text
        assert r.json()["abstained"] and len(r.json()["closest"]) == top
        assert TOP_ENTRY in [c["id"] for c in r.json()["closest"]] or top == 1


def test_cli_takes_top_and_earlier_and_still_k() -> None:
    from click.testing import CliRunner

    runner = CliRunner()
    new = runner.invoke(main, ["corpus", "search", "--no-semantic", "--json", "--top", "2", "ray_init num_cpus"])
    old = runner.invoke(main, ["corpus", "search", "--no-semantic", "--json", "-k", "2", "ray_init num_cpus"])
    assert new.exit_code == old.exit_code == 0, new.output
    assert new.output == old.output
    earlier = "Hydra says: Could not override 'ray_init.num_cpus'. Key 'ray_init' is not in struct"
    asked = runner.invoke(
        main, ["ask", "--no-llm", "--no-semantic", "--json", "--earlier", earlier, "and on verl 0.5?"]
    )
    assert asked.exit_code == 0, asked.output
    import json

    answer = json.loads(asked.output)
    assert answer["followup"] and [c["id"] for c in answer["citations"]][:1] == [TOP_ENTRY]
    assert answer["facts"]["verl_version"].startswith("0.5")


def test_mcp_help_lists_every_registered_tool(mcp_tools: dict[str, dict[str, Any]]) -> None:
    from click.testing import CliRunner

    shown = CliRunner().invoke(main, ["mcp", "--help"]).output
    for tool in mcp_tools:
        assert f"  {tool} " in shown or f"  {tool}:" in shown, (tool, shown)


def test_a_match_jsonl_line_is_the_http_diagnose_request_with_an_id(lexical: Diagnoser) -> None:
    import io
    import json

    from kb.batch import match_jsonl

    log = FAILURE_LOG.read_text()
    lines = [{"id": "a", "input": log, "top": 1}, {"id": "b", "input": log}, {"id": "c", "input": log, "top": 0}]
    out = io.StringIO()
    match_jsonl(lexical, 3, io.BytesIO("".join(json.dumps(x) + "\n" for x in lines).encode()), out)
    answers = {a["id"]: a for a in map(json.loads, out.getvalue().splitlines())}
    assert len(answers["a"]["matches"]) == 1 and answers["a"]["matches"][0]["id"] == TOP_ENTRY
    assert len(answers["b"]["matches"]) > 1  # the command's --top when the line gives none
    assert "top" in answers["c"]["error"]

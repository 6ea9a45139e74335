"""The issue archive: parsing gh/REST exports, its own FAISS + BM25 index in the cache directory, and similar
past issues listed beside (never instead of) the entries by match, ask and the API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from indexer.issues import ActiveArchive, IssueIndex, active_info, import_export, load_active
from kb.ask import ChatMessage, ask
from kb.engine import Diagnoser
from kb.issues import ExportError, parse_export
from server.app import create_app
from server.settings import ServerSettings
from tests.conftest import REPO
from tests.server_harness import running

EXPORT = REPO / "tests" / "fixtures" / "issues_export.json"
HYDRA_TRACE = (
    "Could not override 'ray_init.num_cpus'.\nTo append to your config use +ray_init.num_cpus=16\n"
    "Key 'ray_init' is not in struct\n    full_key: ray_init\n    object_type=dict"
)
NO_ENTRY = "our external reward model over http times out with httpx.ReadTimeout in compute_score"


# --------------------------------------------------------------------------- parsing


def test_gh_export_is_parsed() -> None:
    issues = parse_export(EXPORT.read_bytes(), "export")
    assert len(issues) == 12
    first = issues[0]
    assert first.number == 101 and first.state == "closed" and first.labels == ["bug"]
    assert first.url == "https://github.com/example-org/verl-fixture/issues/101"
    assert first.comments and "ray_kwargs" in first.comments[0]


def test_rest_export_pages_and_pull_requests() -> None:
    page1 = [
        {
            "number": 7,
            "title": "vLLM OOM",
            "body": None,
            "state": "open",
            "comments": 4,
            "url": "https://api.github.com/repos/o/r/issues/7",
            "html_url": "https://github.com/o/r/issues/7",
            "labels": [{"name": "oom"}],
        },
        {
            "number": 8,
            "title": "a pull request",
            "pull_request": {"url": "x"},
            "url": "https://api.github.com/repos/o/r/issues/8",
        },
    ]
    page2 = [
        {
            "number": 9,
            "title": "NCCL hang",
            "body": "stuck",
            "state": "closed",
            "comments": 0,
            "url": "https://api.github.com/repos/o/r/issues/9",
            "labels": ["network"],
        }
    ]
    data = (json.dumps(page1) + "\n" + json.dumps(page2)).encode()  # what `gh api --paginate` prints
    issues = parse_export(data)
    assert [i.number for i in issues] == [7, 9]
    assert issues[0].url == "https://github.com/o/r/issues/7" and issues[0].comments == [] and issues[0].body == ""
    assert issues[1].url == "https://github.com/o/r/issues/9" and issues[1].labels == ["network"]
    jsonl = "\n".join(json.dumps(x) for x in page2).encode()
    assert parse_export(jsonl)[0].number == 9


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"{not json", "not JSON"),
        (b"[1, 2, 3]", "holds no issues"),
        (b"\x00\x01binary", "binary"),
        (b"\xff\xfe[]", "not UTF-8"),
    ],
)
def test_bad_exports(data: bytes, message: str) -> None:
    with pytest.raises(ExportError, match=message):
        parse_export(data, "f.json")


# --------------------------------------------------------------------------- the index


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_lexical_index_without_model(cache: Path, tmp_path: Path) -> None:
    info, _ = import_export(EXPORT)  # no embedder: nothing is embedded yet
    assert info.issues == 12 and active_info() == info
    index = load_active(None)
    assert isinstance(index, IssueIndex)
    hits = index.similar("lora merge size mismatch for q_proj lora_A weight", semantic=True)  # falls back to lexical
    assert hits and hits[0].number == 106 and hits[0].url.endswith("/106")
    assert index.similar("how do I bake sourdough bread", semantic=False) == []
    assert index.similar("", semantic=False) == []
    # the same content keeps its key; another content gets another one
    again, _ = import_export(EXPORT)
    assert again.key == info.key
    other = tmp_path / "other.json"
    other.write_text(json.dumps(json.loads(EXPORT.read_text())[:3]))
    assert import_export(other)[0].key != info.key


def test_semantic_index_is_cached_per_content_and_model(cache: Path, diagnoser) -> None:
    embedder = diagnoser.retriever.embedder
    info, index = import_export(EXPORT, embedder)
    vectors = index.vectors_path(embedder.name)
    assert vectors.exists() and vectors.parent.name.startswith(info.key + "-")
    hits = index.similar("vision model: responses come back empty for samples that have an image", semantic=True)
    assert hits and hits[0].number == 102


@pytest.mark.slow  # the import without --no-embed loads the embedding model
def test_archive_follows_imports_and_clear(cache: Path, runner) -> None:  # type: ignore[no-untyped-def]
    from kb.cli import main

    archive = ActiveArchive(None)
    assert archive.similar(NO_ENTRY) == []
    r = runner.invoke(main, ["issues", "import", "--no-embed", str(EXPORT)])
    assert r.exit_code == 0 and "imported 12 issues" in r.output
    assert archive.similar(NO_ENTRY, semantic=False)[0].number == 104
    r = runner.invoke(main, ["issues", "status"])
    assert r.exit_code == 0 and "12 issues" in r.output
    r = runner.invoke(main, ["issues", "search", "--no-semantic", "reward", "model", "http", "timeout"])
    assert r.exit_code == 0 and "#104" in r.output
    r = runner.invoke(main, ["issues", "clear"])
    assert r.exit_code == 0 and archive.similar(NO_ENTRY) == []
    assert runner.invoke(main, ["issues", "status"]).exit_code == 1
    r = runner.invoke(main, ["issues", "import", str(REPO / "pyproject.toml")])
    assert r.exit_code == 2 and "not JSON" in r.output
    r = runner.invoke(main, ["issues", "import", "/nonexistent.json"])
    assert r.exit_code == 2


# --------------------------------------------------------------------------- beside the entries


@pytest.fixture(scope="module")
def with_archive(tmp_path_factory: pytest.TempPathFactory, diagnoser) -> Iterator[Diagnoser]:
    """The session's corpus and model, with the fixture export imported as the archive (in its own cache)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VERL_DOCTOR_CACHE", str(tmp_path_factory.mktemp("archive-cache")))
        import_export(EXPORT, diagnoser.retriever.embedder)
        yield Diagnoser(
            diagnoser.corpus,
            lambda: diagnoser.retriever,
            lambda: ActiveArchive(lambda: diagnoser.retriever.embedder),
        )


def test_match_lists_issues_beside_a_confident_entry(with_archive: Diagnoser) -> None:
    result = with_archive.diagnose(HYDRA_TRACE)
    assert not result.abstained and result.matches[0].id == "ray-init-num-cpus-renamed"
    assert result.similar_issues and result.similar_issues[0].number == 101


def test_issues_alone_when_no_entry_is_confident(with_archive: Diagnoser) -> None:
    result = with_archive.diagnose(NO_ENTRY)
    assert result.abstained and not any(m.verdict == "match" for m in result.matches)
    assert result.similar_issues[0].number == 104
    assert any("similar past issues" in n for n in result.notes)
    assert with_archive.diagnose("how do I bake sourdough bread at home?").similar_issues == []


def test_ask_lists_issues(with_archive: Diagnoser) -> None:
    a = ask(with_archive, [ChatMessage(role="user", content=NO_ENTRY)])
    assert a.abstained and a.similar_issues[0].number == 104
    assert "https://github.com/example-org/verl-fixture/issues/104" in a.answer
    b = ask(with_archive, [ChatMessage(role="user", content=HYDRA_TRACE)])
    assert not b.abstained and b.citations[0].id == "ray-init-num-cpus-renamed"
    assert b.similar_issues[0].number == 101 and "Similar past issues" in b.answer


def test_cli_match_shows_issues(with_archive: Diagnoser, runner, monkeypatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    import kb.cli.common
    from kb.cli import main

    monkeypatch.setattr(kb.cli.common, "build_diagnoser", lambda *a, **k: with_archive)
    log = tmp_path / "err.log"
    log.write_text(NO_ENTRY)
    r = runner.invoke(main, ["match", "--json", str(log)])
    assert r.exit_code == 1 and json.loads(r.output)["similar_issues"][0]["number"] == 104
    r = runner.invoke(main, ["match", str(log)])
    assert "similar past issues" in r.output and "#104" in r.output


@pytest.fixture(scope="module")
def api(with_archive: Diagnoser) -> Iterator[str]:
    with running(create_app(ServerSettings(), with_archive)) as base:
        yield base


def test_api_diagnose_has_similar_issues(api: str) -> None:
    body = httpx.post(f"{api}/v1/diagnose", json={"input": NO_ENTRY}, timeout=60).json()
    assert body["abstained"] and body["similar_issues"][0]["url"].endswith("/104")
    body = httpx.post(f"{api}/v1/diagnose", json={"input": HYDRA_TRACE}, timeout=60).json()
    assert body["matches"][0]["id"] == "ray-init-num-cpus-renamed" and body["similar_issues"][0]["number"] == 101
    schema = httpx.get(f"{api}/openapi.json").json()
    assert "similar_issues" in schema["components"]["schemas"]["Result"]["properties"]


def test_web_diagnosis_page_lists_similar_issues(api: str) -> None:
    page = httpx.post(f"{api}/diagnose", data={"input": NO_ENTRY}, headers={"Accept": "text/html"}, timeout=60)
    assert page.status_code == 200
    assert "Similar past issues" in page.text
    assert 'href="https://github.com/example-org/verl-fixture/issues/104"' in page.text

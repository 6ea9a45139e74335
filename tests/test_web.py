"""The FAQ web pages: in-process (pages, JSON twins, JS-off forms, escaping, the token), then in headless
Chromium against a real `verl-doctor serve` on a port (instant search, copy, the paste box, JS off)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from kb.corpus import load_corpus
from kb.engine import Diagnoser
from kb.result import Result
from kb.versions import KNOWN_RELEASES
from server.app import create_app
from server.deps import TOKEN_COOKIE
from server.settings import ServerSettings
from tests.conftest import CORPUS, GOOD_FRONT, REPO, entry_text
from tests.server_harness import serve_process

REAL_FAILURE = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
ARTIFACTS = REPO / "tests" / "artifacts"
RENAMED = "ray-init-num-cpus-renamed"
HTML = {"accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
JSON = {"accept": "application/json"}


@pytest.fixture(scope="module")
def lexical() -> Diagnoser:
    """The bundled corpus, rules and lexical search only (no embedding model): fast."""
    return Diagnoser(load_corpus(CORPUS))


@pytest.fixture(scope="module")
def client(lexical: Diagnoser) -> Iterator[TestClient]:
    with TestClient(create_app(ServerSettings(semantic=False), lexical), base_url="http://127.0.0.1") as c:
        yield c


# --------------------------------------------------------------------------- in-process


def test_index_lists_every_entry_by_area_with_a_json_twin(client: TestClient, lexical: Diagnoser) -> None:
    r = client.get("/", headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    page = r.text
    for entry_id in lexical.entries:
        assert f'href="/entries/{entry_id}"' in page
    # Every asset is local: no CDN, nothing inline.
    assert not re.search(r'<(script|link)[^>]+(src|href)="(https?:)?//', page)
    assert "<style" not in page and ' style="' not in page and re.search(r"<script>(?!\s*</script>)", page) is None
    # JS off: the search box is a GET form to /search, the paste box a POST form to /diagnose.
    assert re.search(r'<form class="search" action="/search" method="get"', page)
    assert re.search(r'<form class="paste" action="/diagnose" method="post"', page)

    twin = client.get("/?format=json").json()
    assert twin == client.get("/", headers=JSON).json()
    assert twin["total"] == len(lexical.entries) == sum(g["count"] for g in twin["areas"])
    config = next(g for g in twin["areas"] if g["area"] == "config")
    assert RENAMED in {e["id"] for e in config["entries"]}
    assert f'href="/areas/config">config</a> <span class="count">{config["count"]}</span>' in page

    assert client.get("/static/style.css").headers["content-type"].startswith("text/css")
    assert "prefers-color-scheme: dark" in client.get("/static/style.css").text
    assert client.get("/static/app.js").status_code == 200


def test_area_page_and_unknown_ids_are_404_in_html_or_json(client: TestClient) -> None:
    r = client.get("/areas/ray", headers=HTML)
    assert r.status_code == 200 and 'href="/entries/ray-actor-died-unexpectedly"' in r.text
    twin = client.get("/areas/ray?format=json").json()
    assert twin["area"] == "ray" and twin["count"] == len(twin["entries"]) > 0
    assert {e["area"] for e in twin["entries"]} == {"ray"}

    for path in ("/areas/nope", "/entries/nope", "/no/such/page"):
        page = client.get(path, headers=HTML)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), path
        assert "Not found" in page.text and "content-security-policy" in page.headers
        problem = client.get(path, headers=JSON)
        assert problem.status_code == 404 and problem.headers["content-type"] == "application/problem+json"
        assert problem.json()["status"] == 404
    # The JSON API stays JSON even for a browser.
    api = client.get("/v1/entries/nope", headers=HTML)
    assert api.status_code == 404 and api.headers["content-type"] == "application/problem+json"


def test_entry_page_renders_sections_overrides_per_version_sources_and_related(client: TestClient) -> None:
    page = client.get(f"/entries/{RENAMED}", headers=HTML).text
    assert "ray_init.num_cpus was renamed" in page
    for heading in ("Why it happens", "What you see", "Conditions", "Fix", "Check that it worked", "Sources"):
        assert f"<h2>{heading}</h2>" in page
    assert "<code>ray_kwargs.ray_init.num_cpus</code>" in page  # Markdown rendered
    assert "<pre><code>Could not override" in page
    # No version chosen: one copyable block per range, and a select of every known release.
    assert "verl &gt;=0.6" in page and "verl &gt;=0.4,&lt;0.6" in page
    assert page.count("data-copy>") == 2
    for release in KNOWN_RELEASES:
        assert f'<option value="{release}"' in page
    assert 'href="https://github.com/volcengine/verl/pull/3049"' in page
    assert 'href="/entries/hydra-override-key-not-in-struct"' in page

    old = client.get(f"/entries/{RENAMED}?verl=0.5.0", headers=HTML).text
    block = re.search(r'<pre class="override-lines" data-copy-source><code>(.*?)</code></pre>', old, re.S)
    assert block is not None
    assert block.group(1).splitlines() == ["ray_init.num_cpus=16", "ray_init.timeline_json_file=/tmp/ray_timeline.json"]
    assert '<option value="0.5.0" selected>' in old

    twin = client.get(f"/entries/{RENAMED}?verl=0.6.0", headers=JSON).json()
    api = client.get(f"/v1/entries/{RENAMED}?verl_version=0.6.0").json()
    assert {k: twin[k] for k in api} == api
    assert twin["verl_version"] == "0.6.0" and twin["known_releases"] == list(KNOWN_RELEASES)
    assert twin["overrides"][0]["line"] == "ray_kwargs.ray_init.num_cpus=16"
    assert "hydra-override-key-not-in-struct" in {r["id"] for r in twin["related_entries"]}

    bad = client.get(f"/entries/{RENAMED}?verl=not-a-version", headers=HTML)
    assert bad.status_code == 422 and "not a version number" in bad.text
    assert client.get(f"/entries/{RENAMED}?verl=not-a-version&format=json").status_code == 422


def test_markdown_bodies_never_pass_raw_html(make_corpus: Callable[..., Path]) -> None:
    body = (
        "## What you see\n\n<script>alert('body')</script> and <img src=x onerror=alert(1)>\n\n"
        "## Why it happens\n\n[click](javascript:alert(1)) and `<b>code</b>`\n\n"
        "## Fix\n\nSet num_cpus.\n\n## Check that it worked\n\nThe errors are gone.\n"
    )
    root = make_corpus({"ray/ray-register.md": entry_text(GOOD_FRONT.format(id="ray-register", area="ray"), body)})
    with TestClient(
        create_app(ServerSettings(semantic=False), Diagnoser(load_corpus(root))), base_url="http://127.0.0.1"
    ) as c:
        page = c.get("/entries/ray-register", headers=HTML).text
    assert "<script>alert" not in page and "<img" not in page and 'href="javascript:' not in page
    assert "&lt;script&gt;alert(&#x27;body&#x27;)&lt;/script&gt;" in page or "&lt;script&gt;alert('body')" in page
    assert "<code>&lt;b&gt;code&lt;/b&gt;</code>" in page


def test_search_page_works_without_js_and_escapes_the_query(client: TestClient) -> None:
    r = client.get("/search", params={"q": "ray_init"}, headers=HTML)
    assert r.status_code == 200
    assert f'<a class="hit-title" href="/entries/{RENAMED}">' in r.text
    assert 'value="ray_init"' in r.text
    twin = client.get("/search", params={"q": "ray_init", "format": "json"}).json()
    assert twin["query"] == "ray_init" and twin["hits"][0]["id"] == RENAMED
    assert set(twin["hits"][0]) == {"id", "title", "area", "score", "match"}

    evil = '"><script>alert(1)</script>'
    page = client.get("/search", params={"q": evil}, headers=HTML).text
    assert "<script>alert(1)</script>" not in page
    assert "&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page or "&quot;&gt;&lt;script&gt;" in page
    assert client.get("/search", headers=HTML).status_code == 200  # empty query: the form alone
    assert client.get("/search", params={"q": "x" * 501}, headers=JSON).status_code == 422


def test_paste_form_works_without_js_and_escapes_the_paste(client: TestClient) -> None:
    text = REAL_FAILURE.read_text() + "\n<script>alert('paste')</script>\n"
    r = client.post("/diagnose", data={"input": text, "top": "3"}, headers=HTML)
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    page = r.text
    assert "content-security-policy" in r.headers
    assert "<script>alert('paste')</script>" not in page
    assert "&lt;script&gt;alert(&#39;paste&#39;)&lt;/script&gt;" in page  # back in the textarea, escaped
    assert f'<a class="match-title" href="/entries/{RENAMED}">' in page
    assert '<span class="verdict">match</span>' in page
    # Evidence: line number and the line, the part the pattern matched highlighted.
    unescaped = page.replace("&#39;", "'").replace("&#x27;", "'")
    line3 = r'<span class="ln">L3</span><code class="ev-text"><mark>Could not override .ray_init\.num_cpus.</mark>'
    assert re.search(line3, unescaped)
    assert re.search(r'class="cond cond-holds"><span class="status">holds</span>', page)
    assert "ray_kwargs.ray_init.num_cpus=16" in page
    assert "verl &gt;=0.6" in page and "verl &gt;=0.4,&lt;0.6" in page  # no version in the log: a block per range

    twin = client.post("/diagnose", data={"input": text}, headers=JSON)
    result = Result.model_validate(twin.json())
    assert result.matches[0].id == RENAMED and result.matches[0].evidence[0].line_no == 3

    empty = client.post("/diagnose", data={"input": "   "}, headers=HTML)
    assert empty.status_code == 422 and "is empty" in empty.text
    assert client.post("/diagnose", data={"input": ""}, headers=JSON).json()["status"] == 422
    assert client.get("/diagnose", follow_redirects=False).headers["location"] == "/#paste"


def test_token_flow_cookie_then_pages_and_api(lexical: Diagnoser) -> None:
    with TestClient(
        create_app(ServerSettings(semantic=False, token="s3cret"), lexical), base_url="http://127.0.0.1"
    ) as c:
        locked = c.get("/", headers=HTML)
        assert locked.status_code == 401 and '<input id="token" name="token" type="password"' in locked.text
        assert locked.headers["www-authenticate"] == "Bearer"
        assert c.get(f"/entries/{RENAMED}", headers=JSON).json()["status"] == 401
        assert c.get("/static/style.css").status_code == 200  # assets are not secret; the login page needs them

        assert c.get("/?token=%C3%A9t%C3%A9", headers=HTML).status_code == 401  # non-ASCII: refused, not a 500
        wrong = c.get("/?token=nope", headers=HTML)
        assert (
            wrong.status_code == 401
            and "not the one" in wrong.text
            and TOKEN_COOKIE not in wrong.headers.get("set-cookie", "")
        )

        ok = c.get(f"/entries/{RENAMED}?token=s3cret&verl=0.5.0", headers=HTML, follow_redirects=False)
        assert ok.status_code == 303 and ok.headers["location"] == f"/entries/{RENAMED}?verl=0.5.0"
        cookie = ok.headers["set-cookie"].lower()
        assert cookie.startswith(f"{TOKEN_COOKIE}=s3cret") and "httponly" in cookie and "samesite=strict" in cookie

        assert c.get("/", headers=HTML).status_code == 200  # the cookie now rides along
        assert c.get("/v1/search?query=ray").status_code == 200  # and the page's own API calls use it too
        c.cookies.clear()
        assert c.get("/", headers=HTML).status_code == 401
        bearer = c.get("/?format=json", headers={"authorization": "Bearer s3cret"})
        assert bearer.status_code == 200 and bearer.json()["total"] == len(lexical.entries)


def test_search_page_with_the_real_embedding_model(diagnoser: Any) -> None:
    """The semantic path: a question in words finds its entry though no title contains it."""
    with TestClient(create_app(ServerSettings(), diagnoser), base_url="http://127.0.0.1") as c:
        twin = c.get("/search", params={"q": "how do I set the cpu count of ray in a newer verl", "format": "json"})
        hits = twin.json()["hits"]
        assert RENAMED in [h["id"] for h in hits[:3]]
        assert any(h["match"] == "semantic" for h in hits)
        page = c.get("/search", params={"q": "hydra rejects ray_init on verl 0.6"}, headers=HTML).text
        assert f'href="/entries/{RENAMED}"' in page


# --------------------------------------------------------------------------- real server + Chromium

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`verl-doctor serve --no-semantic` in its own process on a free loopback port."""
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    with serve_process(["--no-semantic"], log, {**os.environ, "VERL_DOCTOR_TOKEN": ""}) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium through Playwright's sync API, for this module only: while it is open an asyncio loop runs
    in this thread, and tests of other modules that start their own loop (``anyio.run``) would fail."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _watch(page: Any) -> list[str]:
    """Console errors and failed requests (a CSP violation shows up as a console error)."""
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.on(
        "requestfailed",
        lambda req: (
            None
            if "ERR_ABORTED" in (req.failure or "") and "/v1/search" in req.url
            else problems.append(f"failed: {req.url} {req.failure}")
        ),
    )  # a search superseded by typing is aborted
    return problems


def test_browser_instant_search_entry_page_and_copy(live_server: str, browser: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="light")
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server)
    page = context.new_page()
    problems = _watch(page)
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    try:
        page.goto(f"{live_server}/")
        page.locator("#q").press_sequentially("ray_init num_cpus", delay=25)
        hit = page.locator("#search-results a.hit-title", has_text="ray_init.num_cpus was renamed")
        expect(hit).to_be_visible()
        assert page.url == f"{live_server}/"  # instant: no form submission
        assert any("/v1/search?" in u for u in requests)
        expect(page.locator("#search-results .score").first).to_have_text(re.compile(r"^\d\.\d\d$"))
        page.screenshot(path=str(artifacts / "search.png"))

        hit.click()
        page.wait_for_url(f"**/entries/{RENAMED}")
        expect(page.locator("h1")).to_contain_text("ray_init.num_cpus was renamed")
        page.select_option("#verl", "0.5.0")  # the select submits itself
        page.wait_for_url(re.compile(r"verl=0\.5\.0"))
        expect(page.locator(".override-lines")).to_have_count(1)
        copy = page.locator("button[data-copy]").first
        copy.click()
        expect(copy).to_have_text("Copied")
        clipboard = page.evaluate("navigator.clipboard.readText()")
        assert clipboard.splitlines() == ["ray_init.num_cpus=16", "ray_init.timeline_json_file=/tmp/ray_timeline.json"]
        page.goto(f"{live_server}/entries/{RENAMED}")
        page.screenshot(path=str(artifacts / "entry.png"), full_page=True)
        assert not problems, problems
        assert all(u.startswith(live_server) for u in requests), "every asset is served locally"
    finally:
        context.close()

    dark = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    try:
        page = dark.new_page()
        page.goto(f"{live_server}/entries/{RENAMED}")
        page.screenshot(path=str(artifacts / "entry-dark.png"))
    finally:
        dark.close()


def test_browser_paste_box_shows_the_diagnosis_with_evidence(live_server: str, browser: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = _watch(page)
    try:
        page.goto(f"{live_server}/")
        page.fill("textarea[name=input]", REAL_FAILURE.read_text() + "\n<img src=x onerror=alert(1)>\n")
        page.click("form[data-diagnose] button[type=submit]")
        first = page.locator("#diagnosis article.match").first
        expect(first).to_be_visible()
        expect(page).to_have_url(re.compile(re.escape(f"{live_server}/#diagnose=")))  # no page load: /v1/diagnose
        expect(first.locator(".match-title")).to_have_text(re.compile("ray_init.num_cpus was renamed"))
        expect(first.locator(".verdict")).to_have_text("match")
        evidence = first.locator(".ev").first
        expect(evidence.locator(".ln")).to_have_text("L3")
        expect(evidence.locator("mark")).to_have_text("Could not override 'ray_init.num_cpus'")
        expect(first.locator(".cond-holds")).to_have_count(1)
        # No verl version in the log: one copyable block per range.
        expect(first.locator(".overrides-label")).to_have_text(["verl >=0.6", "verl >=0.4,<0.6"])
        expect(first.locator(".override-lines").first).to_have_text(
            "ray_kwargs.ray_init.num_cpus=16\nray_kwargs.timeline_json_file=/tmp/ray_timeline.json"
        )
        assert page.locator("#diagnosis img").count() == 0
        first.scroll_into_view_if_needed()
        page.screenshot(path=str(artifacts / "diagnose.png"))
        assert not problems, problems
    finally:
        context.close()


def test_browser_with_javascript_off_browses_and_uses_plain_forms(live_server: str, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    try:
        page.goto(f"{live_server}/")
        page.click("#area-config h3 a")
        page.wait_for_url("**/areas/config")
        expect(page.locator("h1")).to_contain_text("config")
        page.click(f"a[href='/entries/{RENAMED}']")
        page.wait_for_url(f"**/entries/{RENAMED}")
        page.select_option("#verl", "0.6.0")
        page.click(".version-pick button")  # without JS the select needs its button
        page.wait_for_url(re.compile(r"verl=0\.6\.0"))
        expect(page.locator(".override-lines").first).to_contain_text("ray_kwargs.ray_init.num_cpus=16")

        page.goto(f"{live_server}/")
        page.fill("#q", "ray_init")
        page.press("#q", "Enter")
        page.wait_for_url("**/search?q=ray_init")
        expect(page.locator("a.hit-title").first).to_have_text(re.compile("ray_init.num_cpus was renamed"))

        page.goto(f"{live_server}/")
        page.fill("textarea[name=input]", REAL_FAILURE.read_text())
        page.click("form.paste button[type=submit]")
        page.wait_for_url("**/diagnose")
        expect(page.locator("article.match").first.locator(".ev mark").first).to_have_text(
            "Could not override 'ray_init.num_cpus'"
        )
    finally:
        context.close()


def test_artifacts_are_ignored_by_git() -> None:
    if shutil.which("git") is None:
        pytest.skip("no git")
    out = subprocess.run(["git", "check-ignore", "-q", "tests/artifacts/search.png"], cwd=REPO, check=False)
    assert out.returncode == 0


def test_environment_fixes_on_the_diagnosis_and_entry_pages(client: TestClient) -> None:
    log = (
        REPO / "tests" / "fixtures" / "entries" / "nccl-socket-ifname" / "positive-docker0-bootstrap.log"
    ).read_text()
    page = client.post("/diagnose", data={"input": log}, headers=HTML).text
    assert "<h4>Environment</h4>" in page and "export NCCL_SOCKET_IFNAME=eth0" in page
    entry = client.get("/entries/nccl-socket-ifname", headers=HTML).text
    assert "<h3>Environment</h3>" in entry and "export GLOO_SOCKET_IFNAME=eth0" in entry
    detail = client.get("/entries/nccl-socket-ifname", headers=JSON).json()
    assert [e["line"] for e in detail["env"]] == ["NCCL_SOCKET_IFNAME=eth0", "GLOO_SOCKET_IFNAME=eth0"]


def test_browser_api_docs_work_offline(live_server: str, browser: Any) -> None:
    """/docs renders Swagger UI with every request but loopback refused: its assets ship with the package."""
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    outside: list[str] = []

    def offline(route: Any) -> None:
        if route.request.url.startswith(live_server):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort("internetdisconnected")

    context.route("**/*", offline)
    page = context.new_page()
    try:
        page.goto(f"{live_server}/docs")
        expect(page.locator(".swagger-ui .opblock-summary-path", has_text="/v1/diagnose").first).to_be_visible(
            timeout=30_000
        )
        assert outside == [], outside
    finally:
        context.close()


# --------------------------------------------------------------------------- issue 13 item 21

OVERLONG = REPO / "tests" / "eval" / "verl_runs" / "data_all_prompts_overlong" / "output.log"
OFF_TOPIC = "how do I bake sourdough bread at home?"
MARKUP = "\n</textarea><img src=x onerror=alert(1)><script>alert(2)</script> & \u00e9\u4e2d\n"


def _decode_permalink(href: str) -> str:
    import base64
    import zlib

    payload = href.split("#diagnose=", 1)[1]
    kind, _, data = payload.partition(".")
    raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    return (zlib.decompress(raw, wbits=-15) if kind == "z" else raw).decode("utf-8")


def test_search_says_when_nothing_matched(client: TestClient) -> None:
    page = client.get("/search", params={"q": OFF_TOPIC}, headers=HTML).text
    assert "No entry matches" in page and 'class="hit"' not in page
    assert client.get("/search", params={"q": OFF_TOPIC, "format": "json"}).json()["hits"] == []
    assert client.get("/v1/search", params={"query": OFF_TOPIC}).json() == []
    assert client.get("/v1/search", params={"query": "ray_init num_cpus"}).json()  # on-topic still finds


def test_search_with_the_real_model_says_when_nothing_matched(diagnoser: Any) -> None:
    """The nearest neighbours of an off-topic query are strangers: the search lists none of them."""
    from kb.search import search_entries

    for query in (OFF_TOPIC, "qqqzzzxxx", "how do I center a div in css"):
        assert search_entries(diagnoser, query, 10) == [], query
    assert RENAMED in [h.id for h in search_entries(diagnoser, "how do I set num_cpus for ray in verl?", 10)]
    assert search_entries(diagnoser, "NCCL timeout", 10)


def test_signal_chips_are_not_repeated(client: TestClient) -> None:
    result = client.post("/diagnose", data={"input": OVERLONG.read_text()}, headers=JSON).json()
    assert result["signals"]["exceptions"].count("ValueError") > 1  # the chain names it more than once
    page = client.post("/diagnose", data={"input": OVERLONG.read_text()}, headers=HTML).text
    chips = re.findall(r'<span class="pill">([^<]*)</span>', page.split('<p class="signals">', 1)[1].split("</p>")[0])
    assert chips and len(chips) == len(set(chips)), chips


def test_unknown_entry_ids_suggest_the_closest(client: TestClient) -> None:
    api = client.get("/v1/entries/ray-init-num-cpus")
    assert api.status_code == 404 and f"did you mean {RENAMED}" in api.json()["detail"]
    page = client.get("/entries/ray-init-num-cpus", headers=HTML)
    assert page.status_code == 404 and f'href="/entries/{RENAMED}"' in page.text
    evil = client.get("/entries/%3Cscript%3Ealert(1)%3C%2Fscript%3E", headers=HTML)
    assert evil.status_code == 404 and "<script>alert(1)</script>" not in evil.text


def test_the_diagnosis_page_carries_a_permalink(client: TestClient) -> None:
    text = REAL_FAILURE.read_text() + MARKUP
    page = client.post("/diagnose", data={"input": text}, headers=HTML).text
    found = re.search(r'<a class="permalink" href="([^"]+)"', page)
    assert found is not None
    href = found.group(1).replace("&amp;", "&")
    assert href.startswith("/#diagnose=z.") and _decode_permalink(href) == text
    # Text that does not fit a URL gets no link, and the page says why.
    noise = "".join(f"{i:x} {i * 7919 % 104729:x}\n" for i in range(40_000))
    long_page = client.post("/diagnose", data={"input": noise}, headers=HTML).text
    assert 'class="permalink"' not in long_page and "too long for a permalink" in long_page
    # app.js writes and reads links under the same limit as server/web/permalink.py.
    from server.web import permalink

    script = (REPO / "server" / "web" / "static" / "app.js").read_text(encoding="utf-8")
    assert re.search(r"const MAX_LINK = (\d+);", script).group(1) == str(permalink.MAX_PERMALINK)  # type: ignore[union-attr]


def test_browser_search_says_when_nothing_matched(live_server: str, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    problems = _watch(page)
    try:
        page.goto(f"{live_server}/")
        page.locator("#q").press_sequentially("ray_init num_cpus", delay=10)
        expect(page.locator("#search-results .hit").first).to_be_visible()
        page.locator("#q").fill("")
        page.locator("#q").press_sequentially(OFF_TOPIC, delay=10)
        expect(page.locator("#search-results .empty")).to_contain_text("No entry matches")
        expect(page.locator("#search-results .empty q")).to_have_text(OFF_TOPIC)
        expect(page.locator("#search-results .hit")).to_have_count(0)
        assert not problems, problems
    finally:
        context.close()


def test_browser_permalink_diagnoses_the_same_text_again(live_server: str, browser: Any, artifacts: Path) -> None:
    from playwright.sync_api import expect

    text = REAL_FAILURE.read_text() + MARKUP
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = _watch(page)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(f"{live_server}/")
        page.fill("textarea[name=input]", text)
        page.click("form[data-diagnose] button[type=submit]")
        link = page.locator("#diagnosis a.permalink")
        expect(link).to_be_visible()
        href = link.get_attribute("href")
        assert href is not None and href.startswith(f"{live_server}/#diagnose=z.")
        expect(page).to_have_url(href)  # the address bar is the permalink too
        assert _decode_permalink(href) == text  # the format server/web/permalink.py writes and reads
        first_title = page.locator("#diagnosis article.match .match-title").first.text_content()

        other = context.new_page()
        other.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        other.goto(href)
        expect(other.locator("#diagnosis article.match").first).to_be_visible()
        assert other.locator("textarea[name=input]").input_value() == text  # the text, as a value
        assert other.locator("#diagnosis .match-title").first.text_content() == first_title
        assert other.locator("img").count() == 0 and dialogs == []
        chips = other.locator("#diagnosis .signals .pill").all_text_contents()
        assert len(chips) == len(set(chips)), chips
        other.screenshot(path=str(artifacts / "permalink.png"))

        # The page the JavaScript-off form returns links to the same place.
        from server.web import permalink

        server_href = permalink.href(live_server, text)
        assert server_href is not None
        other.goto("about:blank")
        other.goto(server_href)
        expect(other.locator("#diagnosis article.match").first).to_be_visible()
        assert other.locator("textarea[name=input]").input_value() == text

        # A damaged link, and a small link that would inflate to far more text than any paste: refused, said.
        import base64
        import zlib

        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
        bomb = packer.compress(b"a" * (16 << 20)) + packer.flush()  # 16 MB of text in a link of ~22,000 characters
        payload = base64.urlsafe_b64encode(bomb).decode().rstrip("=")
        assert len(payload) < permalink.MAX_PERMALINK
        too_long = "u." + "A" * (permalink.MAX_PERMALINK + 10)
        reasons = {
            "z.!!notbase64": "not base64url",
            f"z.{payload}": "MB of text",
            too_long: "at most",
            "x.AAAA": "format",
        }
        for bad, reason in reasons.items():
            other.goto("about:blank")
            other.goto(f"{live_server}/#diagnose={bad}")
            expect(other.locator("#diagnosis .alert")).to_contain_text("This permalink cannot be read")
            expect(other.locator("#diagnosis .alert")).to_contain_text(reason)
            assert other.locator("textarea[name=input]").input_value() == ""
        assert not problems, problems
    finally:
        context.close()


def test_browser_chips_are_not_repeated(live_server: str, browser: Any) -> None:
    from playwright.sync_api import expect

    context = browser.new_context()
    page = context.new_page()
    try:
        page.goto(f"{live_server}/")
        page.fill("textarea[name=input]", OVERLONG.read_text())
        page.click("form[data-diagnose] button[type=submit]")
        expect(page.locator("#diagnosis .signals .pill").first).to_be_visible()
        chips = page.locator("#diagnosis .signals .pill").all_text_contents()
        assert "ValueError" in chips and len(chips) == len(set(chips)), chips
    finally:
        context.close()

"""The Textual app: behaviour with Textual's pilot, screenshots with pytest-textual-snapshot, and one run of
the real command in a real terminal (tmux)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import DirectoryTree, Markdown, OptionList, TabbedContent

from indexer import load_diagnoser
from kb.engine import Diagnoser
from tests.conftest import CORPUS, REPO
from tui.app import DoctorApp
from tui.config import TuiSettings
from tui.engine import DoctorEngine
from tui.screens.help import HelpScreen
from tui.widgets.diagnose.input_view import InputView
from tui.widgets.diagnose.pane import DiagnosePane, PasteArea
from tui.widgets.diagnose.results import ResultsList
from tui.widgets.faq.pane import EntryTree, FaqPane
from tui.widgets.jobs.pane import JobsPane

RUN = REPO / "tests" / "eval" / "verl_runs" / "hydra_ray_init_old_key" / "output.log"
LOG = RUN.read_text(encoding="utf-8")
EXPECTED = "ray-init-num-cpus-renamed"
EXPECTED_TITLE = "ray_init.num_cpus was renamed to ray_kwargs.ray_init.num_cpus in verl 0.6"
#: A frozen handful of entries, so that the screenshots do not change whenever the corpus grows.
MINI_CORPUS = REPO / "tests" / "fixtures" / "tui" / "corpus"
SETTINGS = TuiSettings(semantic=False, cursor_blink=False, search_delay=0.0)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def rules_engine() -> DoctorEngine:
    """The bundled corpus, rules only: no embedding model."""
    return DoctorEngine(load_diagnoser(CORPUS, semantic=False), semantic=False)


@pytest.fixture(scope="session")
def mini_engine() -> DoctorEngine:
    """The frozen mini corpus, rules only: deterministic screenshots."""
    return DoctorEngine(load_diagnoser(MINI_CORPUS, semantic=False), semantic=False)


def app_with(engine: DoctorEngine, **kwargs: object) -> DoctorApp:
    return DoctorApp(SETTINGS, engine=engine, **kwargs)  # type: ignore[arg-type]


#: The app's own workers (DirectoryTree's loader runs as long as the tree is mounted).
WORKER_GROUPS = {"diagnose", "faq-search", "scan", "load-rules", "chat"}


async def settle(pilot: Pilot[None]) -> None:
    """Let timers fire, the app's workers finish and the screen catch up."""
    await pilot.pause(0.05)
    ours = [w for w in pilot.app.workers if w.group in WORKER_GROUPS]
    if ours:  # (an empty list would mean every worker, the tree's loader too)
        await pilot.app.workers.wait_for_complete(ours)
    await pilot.pause()


async def paste_and_submit(pilot: Pilot[None], text: str = LOG) -> None:
    area = pilot.app.query_one(PasteArea)
    area.focus()
    await pilot.pause()
    pilot.app.post_message(events.Paste(text))  # what the driver makes of a bracketed paste
    await pilot.pause()
    await pilot.press("ctrl+d")
    await settle(pilot)


# --------------------------------------------------------------------------- behaviour (pilot)


@pytest.mark.anyio
async def test_paste_submit_shows_diagnosis_and_marks_evidence(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await paste_and_submit(pilot)
        pane = app.query_one(DiagnosePane)
        assert app.query_one(PasteArea).text == LOG
        assert pane.result is not None
        top = pane.result.matches[0]
        assert top.id == EXPECTED and top.verdict == "match"
        results = app.query_one(ResultsList)
        assert results.highlighted == 0
        assert results.get_option_at_index(0).id == EXPECTED
        assert app.focused is results
        # The evidence lines are marked in the read-only view of the input, and the cursor is on the first.
        view = app.query_one(InputView)
        assert view.display and view.line_count == len(LOG.splitlines())
        evidence = sorted({ev.line_no for ev in top.evidence if ev.line_no})
        assert view.marked_lines == evidence
        assert 3 in evidence  # Could not override 'ray_init.num_cpus'.
        assert view.cursor_line == evidence[0]
        assert "▶3" in "".join(seg.text for seg in view.render_line(2 - int(view.scroll_offset.y)))
        # The detail pane: cause, conditions, the overrides, sources.
        body = str(app.query_one("#detail-body").render())
        assert "Conditions" in body and "holds" in body
        assert "ray_kwargs.ray_init.num_cpus=16" in body
        assert "Sources" in body
        # n walks the evidence lines; c copies the overrides (OSC 52 through App.copy_to_clipboard).
        view.focus()
        await pilot.press("n")
        assert view.cursor_line == evidence[1]
        await pilot.press("c")
        assert app.clipboard.startswith("ray_kwargs.ray_init.num_cpus=16")
        # Ctrl+G goes to a line.
        await pilot.press("ctrl+g", "7", "enter")
        await pilot.pause()
        assert view.cursor_line == 7 and app.focused is view
        # Ctrl+E goes back to editing the input.
        await pilot.press("ctrl+e")
        assert app.focused is app.query_one(PasteArea)


@pytest.mark.anyio
async def test_opening_with_text_diagnoses_at_once(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine, text=LOG, source="output.log")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.query_one(DiagnosePane)
        assert pane.result is not None and pane.result.matches[0].id == EXPECTED
        assert app.sub_title.startswith("output.log · ")
        assert "rules only" in app.sub_title


@pytest.mark.anyio
async def test_results_list_moves_the_marks(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await paste_and_submit(pilot)
        pane = app.query_one(DiagnosePane)
        assert pane.result is not None and len(pane.result.matches) > 1
        await pilot.press("down")
        second = pane.result.matches[1]
        assert pane.current_match == second
        assert app.query_one(InputView).marked_lines == sorted({e.line_no for e in second.evidence if e.line_no})
        await pilot.press("o")  # opens the entry in the FAQ tab
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "faq"
        assert app.query_one(FaqPane).current_id == second.id


@pytest.mark.anyio
async def test_empty_submit_warns(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine)
    async with app.run_test() as pilot:
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.query_one(DiagnosePane).result is None
        assert any("Nothing to diagnose" in n.message for n in app._notifications)


@pytest.mark.anyio
async def test_faq_search_filters_and_opens_entry(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f3")
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "faq"
        tree = app.query_one(EntryTree)
        everything = tree.leaf_ids()
        assert len(everything) == len(rules_engine.entries)
        await pilot.press(*"ray_init")
        await settle(pilot)
        found = tree.leaf_ids()
        assert EXPECTED in found and 0 < len(found) < len(everything)
        await pilot.press("down")  # from the search box into the hits
        assert app.focused is tree
        tree.move_cursor(next(n for n in tree.root.children if n.data == EXPECTED))
        await pilot.press("enter")
        await settle(pilot)
        faq = app.query_one(FaqPane)
        assert faq.current_id == EXPECTED
        markdown = app.query_one("#entry-markdown", Markdown)
        assert EXPECTED_TITLE in markdown.source
        assert "## Why it happens" in markdown.source
        # Clearing the search brings the areas back.
        await pilot.press("ctrl+f", "escape")
        await settle(pilot)
        assert len(tree.leaf_ids()) == len(everything)


@pytest.mark.slow
@pytest.mark.anyio
async def test_job_directory_scan(rules_engine: DoctorEngine, tmp_path: Path) -> None:
    job = tmp_path / "job"
    (job / "logs").mkdir(parents=True)
    shutil.copy(RUN, job / "logs" / "output.log")
    app = app_with(rules_engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f4")
        await pilot.pause()
        await pilot.press(*str(job), "enter")
        await settle(pilot)
        pane = app.query_one(JobsPane)
        assert pane.report is not None
        assert [f.entry_id for f in pane.report.findings][:1] == [EXPECTED]
        findings = app.query_one("#jobs-findings", OptionList)
        assert findings.highlighted == 0 and app.focused is findings
        head = str(app.query_one("#jobs-detail-head").render())
        assert "logs/output.log:3" in head
        excerpt = str(app.query_one("#jobs-detail-excerpt").render())
        assert "Could not override 'ray_init.num_cpus'" in excerpt
        await pilot.press("enter")  # drill into the finding
        assert app.focused is app.query_one("#jobs-detail")
        # Browse: the tree opens on the typed directory; s scans the highlighted one.
        await pilot.press("ctrl+b")
        await pilot.pause()
        tree = app.query_one(DirectoryTree)
        assert app.focused is tree and Path(tree.path) == job
        pane.report = None
        await pilot.press("s")
        await settle(pilot)
        assert pane.report is not None and pane.report.findings[0].entry_id == EXPECTED
        assert app.focused is findings
        await pilot.press("o")
        await settle(pilot)
        assert app.query_one(FaqPane).current_id == EXPECTED


@pytest.mark.slow
@pytest.mark.anyio
async def test_following_a_running_job_shows_what_it_writes_next(rules_engine: DoctorEngine, tmp_path: Path) -> None:
    import asyncio

    from tests.scan_jobdir import noise_lines

    job = tmp_path / "running"
    (job / "logs").mkdir(parents=True)
    log = job / "logs" / "output.log"
    log.write_text(noise_lines(40))
    app = app_with(rules_engine)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("f4")
        await pilot.pause()
        await pilot.press(*str(job), "enter")
        await settle(pilot)
        pane = app.query_one(JobsPane)
        assert pane.findings == []
        await pilot.press("f")  # the findings list has the focus after a scan
        await pilot.pause()
        assert pane.following == job
        with log.open("a") as fh:  # the job goes on and fails
            fh.write(LOG)
        for _ in range(200):
            await asyncio.sleep(0.05)
            if pane.findings:
                break
        await pilot.pause()
        assert [f.entry_id for f in pane.findings][:1] == [EXPECTED]
        assert any(n.title.startswith(("New finding", "Following")) for n in app._notifications)
        assert "logs/output.log" in str(app.query_one("#jobs-detail-head").render())
        await pilot.press("f")
        await pilot.pause()
        assert pane.following is None
        await pilot.app.workers.wait_for_complete([w for w in pilot.app.workers if w.group == "follow"])


@pytest.mark.anyio
async def test_scan_of_a_missing_path_is_a_message(rules_engine: DoctorEngine, tmp_path: Path) -> None:
    app = app_with(rules_engine, scan=tmp_path / "nope")
    async with app.run_test() as pilot:
        await settle(pilot)
        assert app.query_one(TabbedContent).active == "jobs"
        assert any("does not exist" in n.message for n in app._notifications)


@pytest.mark.anyio
async def test_chat_answers_and_follow_up_uses_the_earlier_turn(rules_engine: DoctorEngine) -> None:
    from textual.widgets import Input

    from tui.widgets.chat.pane import ChatPane

    app = app_with(rules_engine)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.press("f5")
        await settle(pilot)
        field = app.query_one("#chat-input", Input)
        assert app.focused is field
        field.value = "Could not override 'ray_init.num_cpus'"
        await pilot.press("enter")
        await settle(pilot)
        chat = app.query_one(ChatPane)
        assert chat.last_answer is not None and not chat.last_answer.abstained
        assert chat.last_answer.citations[0].id == "ray-init-num-cpus-renamed"
        field.value = "I'm on verl 0.5"
        await pilot.press("enter")
        await settle(pilot)
        follow = chat.last_answer
        assert follow is not None and follow.followup
        assert "ray_init.num_cpus=16" in [o.line for o in follow.overrides]
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert chat.messages == []


@pytest.mark.anyio
async def test_help_screen_and_theme_toggle(rules_engine: DoctorEngine) -> None:
    app = app_with(rules_engine)
    async with app.run_test() as pilot:
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        app.query_one(ResultsList).focus()  # '?' types into the paste area; elsewhere it is help
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert app.theme == SETTINGS.dark_theme and app.current_theme.dark
        await pilot.press("ctrl+t")
        assert app.theme == SETTINGS.light_theme and not app.current_theme.dark
        await pilot.press("ctrl+t")
        assert app.theme == SETTINGS.dark_theme


@pytest.mark.anyio
async def test_rules_first_then_semantic_when_the_model_is_ready(diagnoser: Diagnoser) -> None:
    """With the real model: the rules answer at once, the semantic pass follows once the model has loaded."""
    engine = DoctorEngine(diagnoser, semantic=True)
    question = "how do I tell ray how many cpus it may use in verl"
    app = DoctorApp(SETTINGS, engine=engine, text=question)
    async with app.run_test() as pilot:
        pane = app.query_one(DiagnosePane)
        deadline = time.monotonic() + 240
        while pane.stage != "rules + semantic" and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert engine.model_ready, engine.model_error
        assert "rules + semantic ready" in app.sub_title
        assert pane.result is not None and pane.result.matches
        assert any("ray" in m.id for m in pane.result.matches[:3])


# --------------------------------------------------------------------------- screenshots


def test_snapshot_diagnosis(snap_compare, mini_engine: DoctorEngine) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await paste_and_submit(pilot)

    assert snap_compare(app_with(mini_engine), run_before=run_before, terminal_size=(80, 24))


def test_snapshot_diagnosis_light_with_next_evidence(snap_compare, mini_engine: DoctorEngine) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await paste_and_submit(pilot)
        await pilot.press("ctrl+t", "shift+tab", "n")
        await pilot.pause()

    assert snap_compare(app_with(mini_engine), run_before=run_before, terminal_size=(80, 24))


def test_snapshot_faq_entry(snap_compare, mini_engine: DoctorEngine) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot: Pilot[None]) -> None:
        await pilot.press("f3", *"nnodes")
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    assert snap_compare(app_with(mini_engine), run_before=run_before, terminal_size=(80, 24))


def test_snapshot_help(snap_compare, mini_engine: DoctorEngine) -> None:  # type: ignore[no-untyped-def]
    assert snap_compare(app_with(mini_engine), press=["f1"], terminal_size=(80, 24))


# --------------------------------------------------------------------------- the real command in tmux


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (`apt-get install -y tmux`)")
    socket = f"verl-doctor-test-{uuid.uuid4().hex[:8]}"
    base = ["tmux", "-L", socket, "-f", "/dev/null"]
    try:
        yield base
    finally:
        subprocess.run([*base, "kill-server"], capture_output=True, check=False)


def _screen(tmux: list[str]) -> str:
    return subprocess.run([*tmux, "capture-pane", "-p", "-t", "vd"], capture_output=True, text=True).stdout


def _wait_for(tmux: list[str], *texts: str, timeout: float) -> str:
    """The screen once every one of ``texts`` is on it (a capture can catch the app half-way through a redraw)."""
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(tmux)
        if all(text in screen for text in texts):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{texts!r} not on the screen after {timeout} s:\n{screen}")


@pytest.mark.slow
def test_real_command_in_tmux(tmux: list[str]) -> None:
    """`verl-doctor tui` in a real terminal: a bracketed paste of real verl output, Ctrl+D, the diagnosis."""
    command = f"exec {Path(sys.executable).parent / 'verl-doctor'} tui"
    env = {**os.environ, "TERM": "xterm-256color"}
    subprocess.run(
        [*tmux, "new-session", "-d", "-s", "vd", "-x", "200", "-y", "50", "-c", str(REPO), command],
        check=True,
        env=env,
    )
    _wait_for(tmux, "Paste a traceback", timeout=60)
    subprocess.run([*tmux, "load-buffer", "-b", "log", str(RUN)], check=True)
    # -p: wrapped in bracketed-paste codes, as a terminal does for a paste; -r: newlines kept as they are.
    subprocess.run([*tmux, "paste-buffer", "-p", "-r", "-b", "log", "-t", "vd"], check=True)
    _wait_for(tmux, "Could not override 'ray_init.num_cpus'.", timeout=30)
    subprocess.run([*tmux, "send-keys", "-t", "vd", "C-d"], check=True)
    # The top diagnosis, and its first evidence line marked in the input.
    screen = _wait_for(tmux, EXPECTED_TITLE, "▶3 Could not override 'ray_init.num_cpus'.", timeout=90)
    assert re.search(r"match +[01]\.\d\d", screen), screen  # verdict and confidence in the results list
    subprocess.run([*tmux, "send-keys", "-t", "vd", "C-q"], check=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        alive = subprocess.run([*tmux, "has-session", "-t", "vd"], capture_output=True).returncode == 0
        if not alive:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the app did not quit on Ctrl+Q:\n" + _screen(tmux))


def test_copy_gives_the_export_lines_of_an_environment_fix() -> None:
    from kb.corpus import load_corpus
    from kb.engine import Diagnoser
    from tests.conftest import CORPUS
    from tui.widgets.diagnose.results import copy_text

    log = (
        REPO / "tests" / "fixtures" / "entries" / "nccl-socket-ifname" / "positive-docker0-bootstrap.log"
    ).read_text()
    match = next(m for m in Diagnoser(load_corpus(CORPUS)).diagnose(log).matches if m.id == "nccl-socket-ifname")
    assert copy_text(match) == "export NCCL_SOCKET_IFNAME=eth0\nexport GLOO_SOCKET_IFNAME=eth0"


@pytest.mark.anyio
async def test_a_chooses_the_alternative_that_c_copies(rules_engine: DoctorEngine) -> None:
    """Each fix is its own block: `a` moves the choice to the next alternative, `c` copies the chosen one only."""
    classic = (
        "python3 -m verl.trainer.main_ppo data.train_batch_size=8 actor_rollout_ref.actor.ppo_mini_batch_size=16\n"
        "ValueError: train_batch_size (8) must be >= actor.ppo_mini_batch_size (16)\n"
    )
    app = app_with(rules_engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await paste_and_submit(pilot, classic)
        pane = app.query_one(DiagnosePane)
        assert pane.result is not None and pane.result.matches[0].id == "train-batch-smaller-than-mini-batch"
        app.query_one(ResultsList).focus()
        await pilot.press("c")
        assert app.clipboard == "actor_rollout_ref.actor.ppo_mini_batch_size=8"
        await pilot.press("a")
        body = str(app.query_one("#detail-body").render())
        assert "▶ Or keep the mini batch" in body
        await pilot.press("c")
        assert app.clipboard == "data.train_batch_size=16"


@pytest.mark.anyio
async def test_preflight_of_a_job_directory(rules_engine: DoctorEngine, tmp_path: Path) -> None:
    """p in the Jobs tab preflights the overrides Hydra recorded for the job (a real verl 0.9.1 run's command)."""
    import shlex

    from kb.preflight.inputs import parse_argv

    run = REPO / "tests" / "eval" / "verl_runs" / "batch_not_divisible_by_gpus"
    overrides = parse_argv(shlex.split((run / "command.txt").read_text())).overrides
    hydra = tmp_path / "job" / "outputs" / "2026-11-30" / "16-00-00" / ".hydra"
    hydra.mkdir(parents=True)
    (hydra / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    app = app_with(rules_engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f4")
        await pilot.pause()
        await pilot.press(*str(tmp_path / "job"))
        app.query_one("#jobs-findings").focus()
        await pilot.press("p")
        await pilot.pause(0.2)
        await pilot.app.workers.wait_for_complete([w for w in pilot.app.workers if w.group == "preflight"])
        await pilot.pause()
        head = str(app.query_one("#jobs-detail-head").render())
        body = str(app.query_one("#jobs-detail-body").render())
        assert "verl would not start" in head and "overrides.yaml" in head
        assert "real-train-batch-not-divisible" in body
        assert "real_train_batch_size (4) must be divisible by minimal possible batch size (3)" in body
        assert "data.train_batch_size=6" in body  # the fix computed from the job's own values
        # a directory without Hydra's record is a message, not a crash
        (tmp_path / "empty").mkdir()
        path = app.query_one("#jobs-path")
        path.value = str(tmp_path / "empty")  # type: ignore[attr-defined]
        app.query_one("#jobs-findings").focus()
        await pilot.press("p")
        await pilot.pause(0.2)
        await pilot.app.workers.wait_for_complete([w for w in pilot.app.workers if w.group == "preflight"])
        assert "real-train-batch-not-divisible" in str(app.query_one("#jobs-detail-body").render())

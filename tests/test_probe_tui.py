"""Bad-input probes against the Textual app, driven by its pilot (issue 13): real job directories and
pasted text that carry markup-like brackets and raw terminal escapes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Static

from indexer import load_diagnoser
from tests.conftest import CORPUS, REPO
from tests.test_tui import SETTINGS, paste_and_submit, settle
from tui.app import DoctorApp
from tui.engine import DoctorEngine
from tui.widgets.diagnose.input_view import InputView
from tui.widgets.diagnose.pane import DiagnosePane, PasteArea
from tui.widgets.jobs.pane import JobsPane

HYDRA_RUN = REPO / "tests" / "eval" / "verl_runs" / "actor_micro_batch_missing" / "output.log"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def rules_engine() -> DoctorEngine:
    return DoctorEngine(load_diagnoser(CORPUS, semantic=False), semantic=False)


@pytest.mark.anyio
async def test_jobs_tab_shows_hydra_override_lists_as_written(rules_engine: DoctorEngine, tmp_path: Path) -> None:
    """`verl-doctor tui j` on a job whose log has Hydra's "Error executing job with overrides: ['...']"."""
    job = tmp_path / "j"
    job.mkdir()
    shutil.copy(HYDRA_RUN, job / "run.log")
    (job / "weird [b]name[i] $x.log").write_text("Traceback (most recent call last):\nValueError: [/] [oops\n")
    app = DoctorApp(SETTINGS, engine=rules_engine, scan=job)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pane = app.query_one(JobsPane)
        assert pane.report is not None and pane.findings, app._notifications
        seen = ""
        for index in range(len(pane.findings)):  # open every finding: each one renders its excerpt
            pane.query_one("#jobs-findings").highlighted = index
            await settle(pilot)
            seen += "".join(
                str(app.query_one(f"#jobs-detail-{p}", Static).render()) for p in ("head", "excerpt", "body")
            )
        assert "Error executing job with overrides: ['" in seen
        assert "'data.train_files=/tmp/verl_runs_scratch/inputs/data/train.parquet'" in seen
        assert "[/] [oops" in seen or "weird [b]name[i] $x.log" in seen


@pytest.mark.anyio
async def test_pasted_ansi_does_not_reach_the_screen(rules_engine: DoctorEngine) -> None:
    text = HYDRA_RUN.read_text()
    colored = "\n".join(f"\x1b[31m{line}\x1b[0m\x1b]52;c;cHduZWQ=\x07" for line in text.splitlines())
    app = DoctorApp(SETTINGS, engine=rules_engine)
    async with app.run_test(size=(120, 40)) as pilot:
        await paste_and_submit(pilot, colored)
        assert "\x1b" not in app.query_one(PasteArea).text
        await pilot.press("ctrl+d")
        await settle(pilot)
        pane = app.query_one(DiagnosePane)
        assert pane.result is not None and pane.result.matches
        view = app.query_one(InputView)
        assert view.line_count == len(text.splitlines())
        drawn = "".join(seg.text for y in range(view.size.height) for seg in view.render_line(y))
        assert "\x1b" not in drawn and "\x07" not in drawn
        assert "Error executing job with overrides" in drawn or view.line_count > view.size.height

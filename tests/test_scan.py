"""`kb.scan`: job directories built on disk, scanned with the real corpus (rules only, loaded once)."""

from __future__ import annotations

import gzip
import io
import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from kb.scan import ScanReport, scan_paths
from kb.scan.files import discover
from kb.scan.filescan import FileScanner
from kb.scan.reader import ReadError, ReadState, iter_spans
from kb.scan.segments import SegmentResult
from tests.scan_jobdir import (
    build_bad_input_job,
    build_cascade_job,
    build_drift_job,
    noise_lines,
    real_verl_output,
    write,
)


@pytest.fixture(scope="session")
def rules_diagnoser() -> Any:
    """The bundled corpus, rules only: the scan tests never need the embedding model."""
    from indexer import load_diagnoser

    return load_diagnoser(semantic=False)


@pytest.fixture(scope="module")
def drift_report(tmp_path_factory: pytest.TempPathFactory, rules_diagnoser: Any) -> ScanReport:
    root = build_drift_job(tmp_path_factory.mktemp("drift"))
    return scan_paths([root], rules_diagnoser)


@pytest.fixture(scope="module")
def cascade_report(tmp_path_factory: pytest.TempPathFactory, rules_diagnoser: Any) -> ScanReport:
    root = build_cascade_job(tmp_path_factory.mktemp("cascade"))
    return scan_paths([root], rules_diagnoser)


@pytest.fixture(scope="module")
def bad_report(tmp_path_factory: pytest.TempPathFactory, rules_diagnoser: Any) -> ScanReport:
    root = build_bad_input_job(tmp_path_factory.mktemp("bad"))
    return scan_paths([root], rules_diagnoser)


# --------------------------------------------------------------------------- planted problems


def test_same_traceback_on_eight_ranks_is_one_incident(drift_report: ScanReport) -> None:
    ooms = [f for f in drift_report.findings if f.incident and "OutOfMemoryError" in f.incident.title]
    assert len(ooms) == 1
    inc = ooms[0].incident
    assert inc is not None
    assert inc.count == 8 and inc.ranks == list(range(8)) and len(inc.files) == 8
    assert ooms[0].kind == "failure" and ooms[0].entry_id == "actor-update-cuda-oom-offload"
    assert all(f.endswith(".err") for f in inc.files)  # the session_latest symlink did not double them


def test_job_facts_are_gathered_once_and_used_for_every_diagnosis(drift_report: ScanReport) -> None:
    facts = drift_report.jobs[0].facts
    assert facts.versions["verl"] == "0.9.1" and facts.versions["torch"] == "2.7.1"
    assert facts.gpus == ["A100"]
    assert facts.overrides_source is not None and facts.overrides_source.endswith(".hydra/overrides.yaml")
    assert facts.overrides["actor_rollout_ref.rollout.name"] == "vllm"
    assert facts.checkpoint_steps == [10] and facts.latest_checkpoint == 10
    assert facts.steps == (1, 30)
    oom = next(f for f in drift_report.findings if f.kind == "failure")
    assert oom.incident is not None
    # The worker's traceback names no version: the overrides are rendered for the job's verl.
    assert oom.incident.diagnosis.verl_version_used == "0.9.1"
    assert oom.incident.diagnosis.matches[0].overrides


def test_metric_drift_is_found_with_its_step_range(drift_report: ScanReport) -> None:
    drift = [f for f in drift_report.findings if f.kind == "metric"]
    assert [f.entry_id for f in drift] == ["rollout-training-logprob-mismatch"]
    assert drift[0].metric is not None
    ev = next(e for e in drift[0].metric.evidence if e.kind == "metric")
    assert ev.steps == (12, 30)
    assert "training/rollout_probs_diff_mean" in ev.text


def test_job_overrides_are_checked(drift_report: ScanReport) -> None:
    bad = [f for f in drift_report.findings if f.kind == "override"]
    assert len(bad) == 1 and bad[0].override is not None
    assert bad[0].override.text == "actor_rollout_ref.actor.use_torch_compile=False"
    assert bad[0].override.suggestion == "actor_rollout_ref.actor.fsdp_config.use_torch_compile=False"
    assert drift_report.jobs[0].overrides is not None


def test_findings_are_worst_first(drift_report: ScanReport) -> None:
    order = {"critical": 0, "error": 1, "warning": 2, "note": 3}
    ranks = [order[f.severity] for f in drift_report.findings]
    assert ranks == sorted(ranks) and drift_report.findings[0].kind == "failure"
    assert [f.id for f in drift_report.findings] == [f"F{i}" for i in range(1, len(drift_report.findings) + 1)]


def test_cascade_is_attributed_to_the_first_failure(cascade_report: ScanReport) -> None:
    root = [f for f in cascade_report.findings if f.kind == "failure"]
    assert len(root) == 1 and root[0].incident is not None
    assert root[0].incident.ranks == [3] and "OutOfMemoryError" in root[0].incident.title
    cascade = {f.entry_id: f for f in cascade_report.findings if f.kind == "cascade"}
    watchdog = cascade["nccl-watchdog-timeout"].incident
    assert watchdog is not None
    assert watchdog.ranks == [0, 1, 2, 4, 5, 6, 7] and watchdog.count == 7
    assert watchdog.caused_by == root[0].incident.id
    assert watchdog.time is not None and watchdog.time.startswith("12-06 18:44:12")
    died = cascade["ray-actor-died-unexpectedly"].incident
    assert died is not None and died.caused_by == root[0].incident.id
    assert all(f.severity == "note" for f in cascade.values())


def test_without_a_primary_error_the_earliest_cascade_is_the_first_failure(
    tmp_path: Path, rules_diagnoser: Any
) -> None:
    from tests.scan_jobdir import WATCHDOG

    for rank, minute in ((0, 50), (1, 44), (2, 47)):
        write(tmp_path / f"rank{rank}.log", noise_lines(5) + WATCHDOG.format(rank=rank, minute=minute))
    report = scan_paths([tmp_path], rules_diagnoser)
    first = [f for f in report.findings if f.kind == "failure"]
    assert len(first) == 1 and first[0].incident is not None
    assert first[0].incident.count == 3 and first[0].incident.time is not None
    assert first[0].incident.time.startswith("12-06 18:44")
    assert first[0].entry_id == "nccl-watchdog-timeout"


# --------------------------------------------------------------------------- bad input


def _skipped(report: ScanReport) -> dict[str, tuple[str, bool]]:
    return {Path(s.path).name: (s.reason, s.partial) for s in report.skipped}


def test_bad_input_is_skipped_with_reasons_and_the_scan_goes_on(bad_report: ScanReport) -> None:
    skipped = _skipped(bad_report)
    assert "truncated gzip" in skipped["truncated.log.gz"][0] and skipped["truncated.log.gz"][1]
    assert "binary" in skipped["worker-dead.out"][0]
    assert "symlink loop" in skipped["loop"][0]
    assert "symlink loop" in skipped["self"][0]
    assert "broken symlink" in skipped["broken.log"][0]
    assert "FIFO" in skipped["worker-fifo.err"][0]
    entries = {f.entry_id for f in bad_report.findings}
    # The part of the truncated gzip that survives, the .zst file, and the file with a 10 MB line.
    assert {"real-train-batch-not-divisible", "ray-init-num-cpus-renamed", "trainer-nnode-typo"} <= entries
    assert any("longer than 1024 KB" in n for n in bad_report.notes)


def test_line_numbers_after_a_ten_megabyte_line(bad_report: ScanReport) -> None:
    typo = next(f for f in bad_report.findings if f.entry_id == "trainer-nnode-typo")
    assert typo.incident is not None and typo.incident.first.file == "huge-line.log"
    real = real_verl_output("hydra_trainer_nnode_typo").splitlines()
    expected = 1 + next(i for i, ln in enumerate(real, 1) if "trainer.nnode" in ln and "Could not override" in ln)
    assert typo.incident.first.line == expected  # the line after the 10 MB one is still counted as one line
    assert any(loc.line == expected for loc in typo.incident.locations)


def test_unreadable_directory_entry_and_missing_path(tmp_path: Path, rules_diagnoser: Any) -> None:
    write(tmp_path / "job" / "driver.log", real_verl_output())
    (tmp_path / "job" / "worker-1.err.d").mkdir()  # a directory named like a log: walked, not read
    report = scan_paths([tmp_path / "job", tmp_path / "missing"], rules_diagnoser)
    assert any(s.path.endswith("missing") for s in report.skipped)
    assert any(f.entry_id == "ray-init-num-cpus-renamed" for f in report.findings)


def test_a_clean_job_has_no_findings(tmp_path: Path, rules_diagnoser: Any) -> None:
    from tests.scan_jobdir import step_line

    write(tmp_path / "verl_demo.log", noise_lines(500) + "".join(step_line(s, 0.003) for s in range(1, 40)))
    report = scan_paths([tmp_path], rules_diagnoser)
    assert report.findings == [] and report.skipped == []
    assert report.jobs[0].facts.steps == (1, 39)


_SAID_ENTRY = """---
id: demo-said-phrase
title: A demo problem told by a printed line and by a phrase people write
area: ray
verl: ">=0.4"
symptoms:
  - regex: 'DemoPrintedError: the demo worker stopped'
    weight: 0.9
  - regex: '(?i)demo workers? (keeps? )?hang(s|ing)? forever'
    said: true
    weight: 0.9
fix:
  actions:
    - Restart the demo worker.
sources:
  - https://github.com/verl-project/verl/issues/1
---
## What you see

x

## Why it happens

x

## Fix

x

## Check that it worked

x
"""


def test_said_symptoms_answer_pasted_text_but_are_never_searched_for_in_logs(tmp_path: Path) -> None:
    """A phrase people write is read in what they paste, and left out of the byte scan of a job's logs and
    of `corpus patterns` (what `rg -f` is given), unless --all."""
    from click.testing import CliRunner

    from indexer import load_diagnoser
    from kb.cli import main
    from kb.scan.spec import ScanSpec

    corpus = tmp_path / "corpus"
    (corpus / "ray").mkdir(parents=True)
    (corpus / "ray" / "demo-said-phrase.md").write_text(_SAID_ENTRY, encoding="utf-8")
    diagnoser = load_diagnoser(corpus=corpus, semantic=False, issues=False)
    phrase = "my demo worker keeps hanging forever after the first step"
    assert [m.id for m in diagnoser.diagnose(phrase).matches] == ["demo-said-phrase"]
    assert ScanSpec.of(diagnoser).symptoms == ("DemoPrintedError: the demo worker stopped",)

    job = tmp_path / "job"
    write(job / "verl_demo.log", noise_lines(50) + phrase + "\n" + noise_lines(50))
    assert scan_paths([job], diagnoser).findings == []
    write(job / "verl_demo.log", noise_lines(50) + "DemoPrintedError: the demo worker stopped\n" + noise_lines(50))
    assert [f.entry_id for f in scan_paths([job], diagnoser).findings] == ["demo-said-phrase"]

    printed = CliRunner().invoke(main, ["corpus", "patterns", "--corpus", str(corpus)])
    everything = CliRunner().invoke(main, ["corpus", "patterns", "--all", "--corpus", str(corpus)])
    assert printed.output.splitlines() == ["DemoPrintedError: the demo worker stopped"]
    assert len(everything.output.splitlines()) == 2


# --------------------------------------------------------------------------- streaming pieces


def iter_buffers(fh: Any, **options: Any) -> list[bytes]:
    """The reader's spans, each copied out (the reader reuses its buffer)."""
    return [bytes(memoryview(buf)[:end]) for buf, end in iter_spans(fh, **options)]


def test_reader_yields_line_aligned_buffers_and_caps_long_lines() -> None:
    data = b"a\n" + b"x" * 5000 + b"\nb\nc"
    state = ReadState()
    bufs = list(iter_buffers(io.BytesIO(data), chunk=1024, max_line=2048, state=state))
    assert all(b.endswith(b"\n") for b in bufs)
    joined = b"".join(bufs)
    assert joined == b"a\n" + b"x" * 2048 + b"\nb\nc\n"
    assert state.long_lines == 1


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_reused_spans_carry_the_same_lines_as_fresh_buffers(compression: str | None) -> None:
    rng = random.Random(7)
    lines = [b"x" * rng.choice([0, 3, 40, 900, 3000, 7000]) + b"\n" for _ in range(400)]
    data = b"".join(lines) + b"no newline at the end"
    raw = gzip.compress(data) if compression else data
    spans = []
    held = []
    for buf, end in iter_spans(io.BytesIO(raw), compression=compression, chunk=4096, max_line=5000):
        assert buf[end - 1 : end] == b"\n"
        spans.append(bytes(buf[:end]))  # the buffer is reused: keep a copy
        held.append((buf, end))
    # A later read overwrote what an earlier span showed: consumers must copy (and the copies are intact).
    assert len({id(buf) for buf, _ in held if isinstance(buf, bytearray)}) == 1
    got = b"".join(spans).split(b"\n")
    assert got.pop() == b""  # the last line was given its newline
    wanted = data.split(b"\n")
    assert len(got) == len(wanted)  # every line is there, cut or not, and none is split in two
    assert all(w.startswith(g) and len(g) <= 4096 + 5000 for g, w in zip(got, wanted, strict=True))
    assert any(len(g) < len(w) for g, w in zip(got, wanted, strict=True))  # some line was cut


def test_reader_reads_a_truncated_gzip_up_to_where_it_ends() -> None:
    text = "".join(f"line {i}\n" for i in range(20000)).encode()
    packed = gzip.compress(text)
    state = ReadState()
    got = b"".join(iter_buffers(io.BytesIO(packed[: len(packed) // 2]), compression="gzip", state=state))
    assert got and text.startswith(got[: len(got) - 200]) and state.partial and "truncated gzip" in state.partial


def test_reader_refuses_binary_and_bad_gzip() -> None:
    with pytest.raises(ReadError, match="binary"):
        list(iter_buffers(io.BytesIO(b"\x00" * 4096)))
    with pytest.raises(ReadError, match="gzip"):
        list(iter_buffers(io.BytesIO(b"this is not gzip at all\n" * 10), compression="gzip"))


def test_segments_give_the_same_result_as_one_pass(
    tmp_path: Path, rules_diagnoser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.scan_jobdir import OOM_TRACEBACK, step_line

    body = []
    for i in range(60):
        body.append(noise_lines(200, seed=i) + step_line(i + 1, 0.02))
        if i % 20 == 5:
            body.append(OOM_TRACEBACK.format(rank=i, pid=100 + i))
    write(tmp_path / "driver.log", "".join(body))
    one = scan_paths([tmp_path], rules_diagnoser, workers=1)
    import kb.scan.worker as worker

    monkeypatch.setattr(worker, "SEGMENT_BYTES", 64 * 1024)
    many = scan_paths([tmp_path], rules_diagnoser, workers=1)
    assert many.stats.lines == one.stats.lines
    key = [
        (
            f.kind,
            f.entry_id,
            f.incident.count if f.incident else None,
            [loc.line for loc in f.incident.locations] if f.incident else None,
        )
        for f in one.findings
    ]
    assert [
        (
            f.kind,
            f.entry_id,
            f.incident.count if f.incident else None,
            [loc.line for loc in f.incident.locations] if f.incident else None,
        )
        for f in many.findings
    ] == key


def test_process_pool_gives_the_same_report(
    tmp_path: Path, rules_diagnoser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kb.scan.executors as executors

    build_cascade_job(tmp_path / "b")
    build_drift_job(tmp_path / "a")
    monkeypatch.setattr(executors, "INLINE_BYTES", 0)
    pooled = scan_paths([tmp_path / "a", tmp_path / "b"], rules_diagnoser, workers=2)
    inline = scan_paths([tmp_path / "a", tmp_path / "b"], rules_diagnoser, workers=1)
    assert pooled.stats.workers == 2 and inline.stats.workers == 1
    strip = [f.model_dump(exclude={"incident": {"diagnosis"}}) for f in inline.findings]
    assert [f.model_dump(exclude={"incident": {"diagnosis"}}) for f in pooled.findings] == strip
    assert {f.job for f in pooled.findings} == {str(tmp_path / "a"), str(tmp_path / "b")}


def test_a_file_growing_during_the_scan_is_read_to_its_size_at_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules_diagnoser: Any
) -> None:
    import kb.scan.worker as worker

    log = write(tmp_path / "driver.log", noise_lines(2000))
    real = worker.iter_spans

    def growing(*args: Any, **kwargs: Any) -> Any:
        for i, span in enumerate(real(*args, **kwargs)):
            if i == 0:
                with log.open("ab") as fh:
                    fh.write(real_verl_output().encode())
            yield span

    monkeypatch.setattr(worker, "iter_spans", growing)
    report = scan_paths([tmp_path], rules_diagnoser)
    assert report.skipped and report.skipped[0].partial and "grew" in report.skipped[0].reason
    assert report.findings == []  # what was appended after the file was opened is left to --follow


def test_file_scanner_groups_blocks_and_keeps_metrics(rules_diagnoser: Any) -> None:
    from kb.scan.runner import scan_database
    from tests.scan_jobdir import OOM_TRACEBACK, step_line

    db = scan_database(rules_diagnoser)
    result = SegmentResult(file_index=0, segment=0)
    scanner = FileScanner(db, frozenset({"training/rollout_probs_diff_mean"}), result)
    text = "".join(step_line(i, 0.02) + OOM_TRACEBACK.format(rank=1, pid=i) + noise_lines(20) for i in range(1, 6))
    data = text.encode()
    # Feed in uneven line-aligned pieces: blocks must survive buffer boundaries.
    cuts = [0, data.index(b"\n", 700) + 1, data.index(b"\n", 3000) + 1, len(data)]
    # Through one reused buffer with junk after the end, as the reader hands them out.
    junk = (b"Traceback (most recent call last):\n" * (len(data) // 30 + 2))[: len(data) + 64]
    reused = bytearray(junk)
    for a, b in itertools.pairwise(cuts):
        reused[: b - a] = data[a:b]
        scanner.feed(reused, b - a)
        reused[:] = junk  # whatever the scanner kept must be its own copy
    scanner.finish()
    assert result.lines == text.count("\n")
    groups = [g for g in result.groups.values() if "OutOfMemoryError" in g.signature]
    assert len(groups) == 1 and groups[0].count == 5
    assert groups[0].text.startswith(("(TaskRunner", "(WorkerDict", "Traceback"))
    assert "torch.OutOfMemoryError" in groups[0].text
    assert [s for s, _, _ in result.metrics["training/rollout_probs_diff_mean"]] == [1, 2, 3, 4, 5]


def test_discover_classifies_job_files(tmp_path: Path) -> None:
    build_drift_job(tmp_path)
    write(tmp_path / "rollout" / "12.jsonl", '{"input": "Traceback (most recent call last):", "step": 12}\n')
    write(tmp_path / "wandb" / "run-1" / "files" / "output.log", "hello\n")
    job = discover(tmp_path)
    kinds = {f.rel: f.kind for f in job.files}
    assert kinds["outputs/2025-12-06/18-00-00/.hydra/overrides.yaml"] == "hydra_overrides"
    assert kinds["verl_examples/gsm8k.jsonl"] == "file_logger"
    assert kinds["wandb/run-1/files/output.log"] == "wandb_log"
    assert sum(1 for k in kinds.values() if k == "ray") == 8
    assert "rollout/12.jsonl" not in kinds and job.ignored["rollout/validation generation dumps"] == 1
    assert job.checkpoint_steps == [10]


# --------------------------------------------------------------------------- streaming while the corpus loads


def _comparable(report: ScanReport) -> list[dict[str, Any]]:
    return [f.model_dump(exclude={"incident": {"diagnosis"}}) for f in report.findings]


def test_a_scan_started_before_the_corpus_loads_gives_the_same_report(tmp_path: Path, rules_diagnoser: Any) -> None:
    from kb.deferred import Deferred
    from kb.scan.executors import LocalExecutor
    from kb.scan.runner import run_scan
    from kb.scan.spec import ScanSpec

    build_drift_job(tmp_path / "a")
    build_cascade_job(tmp_path / "b")
    paths = [tmp_path / "a", tmp_path / "b"]
    ready = scan_paths(paths, rules_diagnoser)
    spec = ScanSpec.of(rules_diagnoser)
    loads: list[str] = []

    def load() -> Any:
        loads.append("loaded")
        return rules_diagnoser

    progress: list[tuple[int, int]] = []
    early = run_scan(
        paths, Deferred(load), LocalExecutor(1), spec=spec, on_progress=lambda d, t: progress.append((d, t))
    )
    assert loads == ["loaded"] and _comparable(early) == _comparable(ready) and ready.findings
    assert progress[0][0] == 0 and progress[-1][0] == progress[-1][1] > 0

    # The TUI's route: the spec of a diagnoser at hand, the scan's own diagnoser built while the bytes stream.
    from kb.scan.runner import scan_while_loading

    beside = scan_while_loading(paths, load, spec, workers=1)
    assert loads == ["loaded", "loaded"] and _comparable(beside) == _comparable(ready)

    # A cached spec that no longer fits the corpus (a symptom pattern gone): the scan is redone.
    stale = ScanSpec(spec.kb_version, spec.symptoms[:-5], spec.watched - {"training/rollout_probs_diff_mean"})
    again = run_scan(paths, Deferred(lambda: rules_diagnoser), LocalExecutor(1), spec=stale)
    assert _comparable(again) == _comparable(ready)


def test_the_scan_spec_is_cached_per_corpus_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules_diagnoser: Any
) -> None:
    import shutil

    from kb.scan.spec import ScanSpec, load_spec, save_spec
    from tests.conftest import CORPUS

    monkeypatch.setenv("VERL_DOCTOR_CACHE", str(tmp_path / "cache"))
    corpus = tmp_path / "corpus"
    shutil.copytree(CORPUS, corpus)
    assert load_spec(corpus) is None
    spec = ScanSpec.of(rules_diagnoser)
    save_spec(corpus, spec)
    assert load_spec(corpus) == spec
    entry = next(corpus.glob("ray/*.md"))
    entry.write_text(entry.read_text() + "\n")
    assert load_spec(corpus) is None  # any edit: the spec must be derived again


def test_deferred_hands_errors_to_the_caller() -> None:
    import sys

    from kb.deferred import Deferred

    failing = Deferred(lambda: sys.exit(2))
    failing.start()
    with pytest.raises(SystemExit):
        failing.result()
    inline = Deferred(lambda: 42)  # never started: built when asked for
    assert inline.result() == 42 and inline.result() == 42


def test_reports_show_similar_past_issues(tmp_path: Path, rules_diagnoser: Any) -> None:
    import json

    from rich.console import Console

    from kb.result import SimilarIssue
    from kb.scan.render import render_markdown, render_sarif, render_terminal

    build_cascade_job(tmp_path / "job")
    report = scan_paths([tmp_path / "job"], rules_diagnoser)
    first = report.findings[0]
    assert first.kind == "failure" and first.incident is not None
    first.incident.diagnosis.similar_issues = [
        SimilarIssue(
            number=1234,
            title="OOM in update_actor [FSDP]",
            url="https://github.com/verl-project/verl/issues/1234",
            state="closed",
            score=0.71,
        )
    ]
    console = Console(record=True, width=200)
    render_terminal(report, console)
    assert "similar issue: #1234 [closed] OOM in update_actor" in console.export_text()
    md = render_markdown(report)
    assert "- [#1234 OOM in update_actor (FSDP)](https://github.com/verl-project/verl/issues/1234) (closed, 0.71)" in md
    sarif = json.loads(render_sarif(report))
    props = sarif["runs"][0]["results"][0]["properties"]
    assert props["similarIssues"][0]["number"] == 1234


# --------------------------------------------------------------------------- real verl output


def _real_runs() -> list[tuple[str, list[str]]]:
    """(run directory, expected entry ids) for every real verl run an eval case points at."""
    import json

    from tests.conftest import REPO

    runs: dict[str, list[str]] = {}
    for cases in sorted((REPO / "tests" / "eval" / "cases").glob("*.jsonl")):
        for line in cases.read_text().splitlines():
            case = json.loads(line) if line.strip() else {}
            source = str(case.get("input_file", ""))
            if "/verl_runs/" in source:
                runs[str(REPO / Path(source).parent)] = list(case["expected"])
    return sorted(runs.items())


@pytest.mark.parametrize(("run", "expected"), _real_runs(), ids=lambda v: Path(v).name if isinstance(v, str) else "")
def test_a_real_verl_run_scans_to_its_known_problem(run: str, expected: list[str], rules_diagnoser: Any) -> None:
    """The scan's first failure (or, for a run that hangs, its first finding) is the problem `match` names
    for the same output: Hydra's announcement and Ray's wrapper lines stay in one block with the exception."""
    report = scan_paths([Path(run)], rules_diagnoser)
    first = next((f for f in report.findings if f.kind == "failure"), report.findings[0] if report.findings else None)
    if not expected:
        assert first is None or first.verdict != "match"
        return
    assert first is not None and first.entry_id in expected, [(f.kind, f.entry_id) for f in report.findings]


def test_one_known_warning_in_two_forms_is_one_finding(rules_diagnoser: Any) -> None:
    from tests.conftest import REPO

    run = REPO / "tests" / "eval" / "verl_runs" / "fake_gpu_cpu_torch_no_nccl"
    report = scan_paths([run], rules_diagnoser)
    legacy = [f for f in report.findings if f.entry_id == "legacy-trainer-deprecated-warning"]
    assert len(legacy) == 1 and legacy[0].incident is not None
    assert legacy[0].incident.count == 2 and len(legacy[0].incident.locations) == 2
    assert len(report.jobs[0].incidents) == len(report.findings)


def test_notices_never_load_the_embedding_model(rules_diagnoser: Any) -> None:
    """A warning a symptom regex picked out is judged by the rules alone: no multi-second model load."""
    from kb.engine import Diagnoser
    from tests.conftest import REPO

    loads: list[str] = []

    def retriever() -> Any:
        loads.append("model")
        return None

    diagnoser = Diagnoser(rules_diagnoser.corpus, retriever)
    run = REPO / "tests" / "eval" / "verl_runs" / "fake_gpu_insufficient_cpus_hang"  # warnings only: a hang
    report = scan_paths([run], diagnoser)
    assert report.findings and all(f.kind == "warning" for f in report.findings)
    assert loads == []


def test_a_real_ray_session_beside_its_driver_log(tmp_path: Path, rules_diagnoser: Any) -> None:
    """Ray's routine shutdown (INFO lines about SIGTERM and killed actors) is not a failure, Ray's log lines
    that name verl's modules are not a launch command, and the driver's error stays the first failure."""
    import shutil

    from tests.conftest import REPO

    job = tmp_path / "job"
    shutil.copytree(REPO / "tests" / "fixtures" / "ray_session", job / "ray")
    shutil.copy(REPO / "tests" / "eval" / "verl_runs" / "no_gpu_default_8_gpus" / "output.log", job / "verl_demo.log")
    report = scan_paths([job], rules_diagnoser)
    kinds = {f.kind for f in report.jobs[0].files}
    assert "ray" in kinds and "driver" in kinds
    first = report.findings[0]
    assert first.kind == "failure" and first.entry_id == "ray-total-gpus-less-than-desired"
    assert first.incident is not None and first.incident.first.file == "verl_demo.log"
    titles = " ".join(f.title for f in report.findings)
    assert "EXPECTED_TERMINATION" not in titles and "Force kill actor" not in titles
    assert not [f for f in report.findings if f.kind == "override"]  # no overrides made up from Ray's logs
    alone = scan_paths([job / "ray"], rules_diagnoser)  # the session without the driver log
    assert all(f.kind != "failure" or "SIGTERM" not in f.title for f in alone.findings)

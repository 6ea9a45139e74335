"""``scan_paths``: discover the jobs' files and scan them in parallel; :mod:`kb.scan.assemble` turns
the results into a report. Only what streams bytes is imported up front.

Every surface scans through here. A scan may start before its diagnoser exists, since streaming needs
only the pattern spec (:mod:`kb.scan.spec`): the CLI takes the spec an earlier run cached on disk
(:func:`scan_with_warm_start`), the TUI the one of the diagnoser it already holds while it builds the
scan's own (:func:`scan_while_loading`). The HTTP server and MCP load their diagnoser before the first
request, so they have nothing to wait for and call :func:`scan_paths`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kb.deferred import Deferred
from kb.scan.database import ScanDatabase
from kb.scan.executors import LocalExecutor, OnDone
from kb.scan.files import Job, JobFile, discover
from kb.scan.segments import SegmentResult
from kb.scan.spec import ScanSpec, load_spec, save_spec
from kb.scan.worker import Task, plan

if TYPE_CHECKING:
    from kb.engine import Diagnoser
    from kb.scan.report import ScanReport


class Executor(Protocol):
    """Runs scan tasks somewhere and calls ``on_done`` for each (in the calling thread). ``started`` is
    called once the workers are up (after any fork), while the tasks run."""

    name: str

    @property
    def workers(self) -> int: ...

    def run(
        self,
        db: ScanDatabase,
        watched: frozenset[str],
        tasks: list[Task],
        on_done: OnDone,
        size: int,
        started: Callable[[], None] | None = ...,
    ) -> None: ...


#: (bytes scanned so far, bytes in all)
OnProgress = Callable[[int, int], None]

_DB_CACHE: dict[tuple[str, ...], ScanDatabase] = {}


def scan_database(source: Diagnoser | ScanSpec) -> ScanDatabase:
    """The corpus's symptom regexes a log is searched for plus the scanner's markers, compiled once per
    pattern set."""
    symptoms = source.symptoms if isinstance(source, ScanSpec) else tuple(source.rules.scan_patterns)
    db = _DB_CACHE.get(symptoms)
    if db is None:
        db = _DB_CACHE[symptoms] = ScanDatabase.for_symptoms(symptoms)
    return db


def scan_paths(
    paths: list[Path],
    diagnoser: Diagnoser,
    *,
    workers: int | None = None,
    progress: bool = False,
    on_progress: OnProgress | None = None,
    confine_to: list[Path] | None = None,
) -> ScanReport:
    """Scan job directories (or single log files): every path is one job. Files run in parallel across
    cores; ``report.findings`` is non-empty when problems were found; unreadable input is in
    ``report.skipped`` with the reason. ``progress`` draws a bar on stderr; ``on_progress`` is called
    with (bytes done, bytes in all) as files finish. ``confine_to``: symlinks leading outside these
    directories are skipped, not followed (the server's scan roots)."""
    return run_scan(
        paths, diagnoser, LocalExecutor(workers), progress=progress, on_progress=on_progress, confine_to=confine_to
    )


def run_scan(
    paths: list[Path],
    diagnoser: Diagnoser | Deferred[Diagnoser],
    executor: Executor,
    *,
    progress: bool = False,
    on_progress: OnProgress | None = None,
    spec: ScanSpec | None = None,
    confine_to: list[Path] | None = None,
) -> ScanReport:
    """``diagnoser`` may still be loading (a :class:`Deferred` with a ``spec`` cached from an earlier
    run): the bytes are then scanned while it loads, and the scan is redone in the rare case the
    loaded corpus turns out to need another spec."""
    t0 = time.perf_counter()
    if isinstance(diagnoser, Deferred) and spec is not None:
        report = _run_scan(paths, diagnoser, executor, spec, progress, on_progress, t0, confine_to)
        if report is not None:
            return report
    ready = diagnoser.result() if isinstance(diagnoser, Deferred) else diagnoser
    report = _run_scan(paths, ready, executor, ScanSpec.of(ready), progress, on_progress, t0, confine_to)
    assert report is not None
    return report


def scan_while_loading(
    paths: list[Path],
    load: Callable[[], Diagnoser],
    spec: ScanSpec,
    *,
    workers: int | None = None,
    on_progress: OnProgress | None = None,
    confine_to: list[Path] | None = None,
) -> ScanReport:
    """:func:`scan_paths` with the diagnoser still to be built by ``load`` and its pattern ``spec`` known
    (another diagnoser's over the same corpus): the bytes stream while ``load`` runs beside them, and the
    scan is redone in the rare case the loaded diagnoser needs another spec."""
    return run_scan(
        paths, Deferred(load), LocalExecutor(workers), on_progress=on_progress, spec=spec, confine_to=confine_to
    )


def scan_with_warm_start(
    paths: list[Path],
    corpus_dir: Path,
    load: Callable[[], Diagnoser],
    executor: Executor,
    *,
    progress: bool = False,
    on_progress: OnProgress | None = None,
) -> ScanReport:
    """A scan that starts before the diagnoser exists: with the pattern spec an earlier run cached for the
    corpus in ``corpus_dir`` exactly as it is on disk, the bytes stream while ``load`` builds the
    diagnoser beside them (the report is the same as without the cache); the loaded diagnoser's spec is
    cached for the next run."""
    spec = load_spec(corpus_dir)
    diagnoser = Deferred(load)
    report = run_scan(paths, diagnoser, executor, progress=progress, on_progress=on_progress, spec=spec)
    fresh = ScanSpec.of(diagnoser.result())
    if fresh != spec:
        save_spec(corpus_dir, fresh)
    return report


def _run_scan(
    paths: list[Path],
    diagnoser: Diagnoser | Deferred[Diagnoser],
    executor: Executor,
    spec: ScanSpec,
    progress: bool,
    on_progress: OnProgress | None,
    t0: float,
    confine_to: list[Path] | None = None,
) -> ScanReport | None:
    """None when ``diagnoser`` was deferred and, once loaded, needs another spec than the one used."""
    deferred = diagnoser if isinstance(diagnoser, Deferred) else None
    # One thread, started once the workers run: the report code's imports, then the diagnoser.
    jobs: list[Job] = []
    loading = Deferred(lambda: _prepare(deferred, jobs)) if deferred is not None else None
    db = scan_database(spec)
    watched = spec.watched
    jobs += [discover(Path(p), confine_to) for p in paths]
    files: list[tuple[int, JobFile]] = [(ji, f) for ji, job in enumerate(jobs) for f in job.log_files]
    tasks: list[Task] = []
    for fi, (_, jf) in enumerate(files):
        tasks += plan(fi, str(jf.path), jf.compression, jf.size, jf.rank_hint)
    tasks.sort(key=lambda t: -t.size)
    total = sum(f.size for _, f in files)
    results: dict[int, list[SegmentResult]] = {}

    done_bytes = 0
    with _progress(progress, total) as advance:

        def on_done(task: Task, result: SegmentResult) -> None:
            nonlocal done_bytes
            results.setdefault(task.file_index, []).append(result)
            done_bytes += task.size
            advance(task.size)
            if on_progress is not None:
                on_progress(done_bytes, total)

        if on_progress is not None:
            on_progress(0, total)
        executor.run(db, watched, tasks, on_done, total, loading.start if loading is not None else None)

    if loading is not None:
        diagnoser = loading.result()
        if ScanSpec.of(diagnoser) != spec:
            return None
    assert not isinstance(diagnoser, Deferred)
    from kb.scan.assemble import build_report

    report = build_report(paths, jobs, files, results, diagnoser)
    report.stats.seconds = round(time.perf_counter() - t0, 3)
    report.stats.engine = db.engine
    report.stats.executor = executor.name
    report.stats.workers = executor.workers
    return report


def _prepare(diagnoser: Deferred[Diagnoser], jobs: list[Job]) -> Diagnoser:
    import kb.scan.assemble  # noqa: F401  (imported here, off the streaming path)

    if any(f.kind == "hydra_overrides" for job in jobs for f in job.files):
        # The job's overrides will be read with Hydra's grammar (its import builds two ANTLR parsers: 0.1 s
        # of CPU that would otherwise come after the last byte is scanned).
        from kb.valuecheck import parse_value

        parse_value("trainer.nnodes=1")
    return diagnoser.result()


@contextmanager
def _progress(enabled: bool, total: int) -> Iterator[Callable[[int], None]]:
    if not enabled:
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn

    with Progress(
        TextColumn("scanning"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("scan", total=total)
        yield lambda n: bar.advance(task, n)

"""The unit of parallel work: scan one segment of one file. Runs in a worker process or a Ray task.

Large plain files are cut into line-aligned segments so that one big driver log still uses every
core; each segment reports how many lines it holds, and the parent shifts line numbers afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kb.scan.database import ScanDatabase
from kb.scan.filescan import FileScanner
from kb.scan.reader import ReadError, ReadState, iter_spans, open_for_scan
from kb.scan.segments import SegmentResult

#: Plain files larger than this are split into segments of this size.
SEGMENT_BYTES = 96 * 1024 * 1024


@dataclass(frozen=True)
class Task:
    file_index: int
    segment: int
    path: str
    compression: str | None
    start: int
    end: int | None  # raw offset where the segment ends (lines starting before it belong to it); None: EOF
    last: bool
    rank_hint: int | None
    size: int = 0  # raw bytes this task covers: for scheduling and progress


#: Small tasks travel together, about this many bytes at a time: a Ray session holds thousands of small
#: logs, and one process round trip each would cost more than reading them.
BATCH_BYTES = 4 * 1024 * 1024
#: ... and at most this many files, so progress still moves.
BATCH_FILES = 256


def batches(tasks: list[Task]) -> list[list[Task]]:
    """``tasks`` in submission units, in order: big tasks alone, small ones grouped."""
    out: list[list[Task]] = []
    current: list[Task] = []
    size = 0
    for task in tasks:
        if task.size >= BATCH_BYTES:
            out.append([task])
            continue
        current.append(task)
        size += task.size
        if size >= BATCH_BYTES or len(current) >= BATCH_FILES:
            out.append(current)
            current, size = [], 0
    if current:
        out.append(current)
    return out


def plan(file_index: int, path: str, compression: str | None, size: int, rank_hint: int | None) -> list[Task]:
    if compression is not None or size <= SEGMENT_BYTES:
        return [Task(file_index, 0, path, compression, 0, None, True, rank_hint, size)]
    n = (size + SEGMENT_BYTES - 1) // SEGMENT_BYTES
    bounds = [i * size // n for i in range(n)] + [size]
    return [
        Task(
            file_index,
            i,
            path,
            None,
            bounds[i],
            bounds[i + 1] if i < n - 1 else None,
            i == n - 1,
            rank_hint,
            bounds[i + 1] - bounds[i],
        )
        for i in range(n)
    ]


_DBS: dict[str, ScanDatabase] = {}


_last: tuple[ScanDatabase, ScanDatabase] | None = None


def _database(db: ScanDatabase) -> ScanDatabase:
    """One live database per process, whatever the number of tasks (the same object is handed in
    again and again: that case costs nothing)."""
    global _last
    if _last is not None and _last[0] is db:
        return _last[1]
    live = _DBS.get(db.digest)
    if live is None:
        db.ensure()
        live = _DBS[db.digest] = db
    _last = (db, live)
    return live


def _skip_partial_line(fh: object, start: int) -> int:
    """Position after the first newline at or after ``start - 1`` (segments own the lines they start)."""
    if start == 0:
        return 0
    fh.seek(start - 1)  # type: ignore[attr-defined]
    pos = start - 1
    while True:
        piece = fh.read(64 * 1024)  # type: ignore[attr-defined]
        if not piece:
            return pos
        nl = piece.find(b"\n")
        if nl >= 0:
            pos += nl + 1
            fh.seek(pos)  # type: ignore[attr-defined]
            return pos
        pos += len(piece)


def scan_task(db: ScanDatabase, watched: frozenset[str], task: Task) -> SegmentResult:
    result = SegmentResult(file_index=task.file_index, segment=task.segment)
    live = _database(db)
    try:
        fh, size_at_open = open_for_scan(task.path)
    except ReadError as exc:
        result.skipped = str(exc)
        return result
    except OSError as exc:
        result.skipped = exc.strerror or str(exc)
        return result
    state = ReadState()
    scanner = FileScanner(live, watched, result, rank_hint=task.rank_hint)
    try:
        with fh:
            begin = _skip_partial_line(fh, task.start)
            end = task.end if task.end is not None else size_at_open
            limit = max(0, end - begin) if task.compression is None else None
            for buf, buf_end in iter_spans(
                fh,
                compression=task.compression,
                limit=limit,
                state=state,
                check_binary=task.segment == 0,
                finish_line=task.end is not None,
            ):
                scanner.feed(buf, buf_end)
            if task.last:
                _growth(task.path, fh, size_at_open, state)
    except ReadError as exc:
        result.skipped = str(exc)
        return result
    except OSError as exc:
        result.partial = f"read error after {state.bytes_in} bytes: {exc.strerror or exc}"
    scanner.finish()
    result.bytes_read = state.bytes_in
    result.long_lines = state.long_lines
    result.notes += state.notes
    if state.partial and not result.partial:
        result.partial = state.partial
    return result


def _growth(path: str, fh: object, size_at_open: int, state: ReadState) -> None:
    try:
        now = os.fstat(fh.fileno()).st_size  # type: ignore[attr-defined]
    except OSError:
        return
    if now > size_at_open:
        state.partial = state.partial or (
            f"grew from {size_at_open} to {now} bytes during the scan; scanned the first {size_at_open} bytes "
            "(use --follow for a running job)"
        )
    elif now < size_at_open:
        state.partial = state.partial or f"shrank from {size_at_open} to {now} bytes during the scan (truncated?)"


_INSTALLED: tuple[ScanDatabase, frozenset[str]] | None = None


def install(db: ScanDatabase, watched: frozenset[str]) -> None:
    """Process-pool initializer: the database and watched metrics, once per worker process."""
    global _INSTALLED
    _INSTALLED = (_database(db), watched)


def scan_batch(db: ScanDatabase, watched: frozenset[str], batch: list[Task]) -> list[SegmentResult]:
    return [scan_task(db, watched, task) for task in batch]


def run_installed(batch: list[Task]) -> list[SegmentResult]:
    assert _INSTALLED is not None, "install() was not called in this worker"
    return scan_batch(_INSTALLED[0], _INSTALLED[1], batch)

"""``scan --follow``: watch running jobs and report new findings as they appear.

Each log file keeps an incremental :class:`FileScanner` and a read offset. A file whose inode changes
was rotated: the old handle is read to its end, its results are kept, and the new file is read from its
start. A file that becomes shorter than the offset was truncated: its results so far are kept and it is
read again from its start. So is one whose first bytes, or the bytes just before the offset, are no
longer those read (truncated and written past the old size again between two polls). Compressed files
do not grow; they are scanned once when they appear.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from kb.scan.assemble import assemble_job
from kb.scan.files import JobFile, discover
from kb.scan.filescan import FileScanner
from kb.scan.job import watched_metrics
from kb.scan.reader import MAX_LINE_BYTES, SNIFF, ReadError, looks_binary, open_for_scan
from kb.scan.report import Finding, SkippedFile
from kb.scan.runner import scan_database
from kb.scan.segments import SegmentResult, merge_segments
from kb.scan.worker import Task, scan_task

if TYPE_CHECKING:
    from kb.engine import Diagnoser

READ_CHUNK = 4 * 1024 * 1024


@dataclass
class _Followed:
    file: JobFile
    fh: BinaryIO | None
    ino: int
    offset: int = 0
    carry: bytes = b""
    scanner: FileScanner | None = None
    result: SegmentResult | None = None
    retired: list[SegmentResult] = field(default_factory=list)
    idle: bool = False
    head: bytes = b""  # the file's first bytes as read, and the ones just before ``offset``:
    tail: bytes = b""  # when either changes, the file was rewritten under us


class Follower:
    def __init__(self, paths: list[Path], diagnoser: Diagnoser) -> None:
        self.paths = paths
        self.diagnoser = diagnoser
        self.db = scan_database(diagnoser)
        self.watched = watched_metrics(diagnoser)
        self.files: dict[str, _Followed] = {}
        self.seen: set[str] = set()
        self.skipped: dict[str, SkippedFile] = {}

    def _new_scanner(self, f: _Followed) -> None:
        f.result = SegmentResult(file_index=0, segment=0)
        f.scanner = FileScanner(self.db, self.watched, f.result, rank_hint=f.file.rank_hint)
        f.offset, f.carry, f.head, f.tail = 0, b"", b"", b""

    def _retire(self, f: _Followed) -> None:
        if f.scanner is not None and f.result is not None:
            if f.carry:
                f.scanner.feed(f.carry + b"\n")
            f.retired.append(f.scanner.finish())
        f.scanner, f.result = None, None

    def _open(self, jf: JobFile) -> _Followed | None:
        key = str(jf.path)
        if jf.compression is not None:
            result = scan_task(self.db, self.watched, Task(0, 0, key, jf.compression, 0, None, True, jf.rank_hint))
            if result.skipped:
                self.skipped[key] = SkippedFile(path=key, reason=result.skipped)
            return _Followed(jf, None, -1, retired=[result])
        try:
            fh, _ = open_for_scan(key)
        except (OSError, ReadError) as exc:
            self.skipped[key] = SkippedFile(path=key, reason=getattr(exc, "strerror", None) or str(exc))
            return None
        f = _Followed(jf, fh, os.fstat(fh.fileno()).st_ino)
        self._new_scanner(f)
        return f

    def _read_new(self, f: _Followed) -> bool:
        """Feed what was appended since the last poll; True when anything was."""
        if f.fh is None or f.scanner is None:
            return False
        got = False
        first = f.offset == 0 and not f.carry
        while True:
            data = f.fh.read(READ_CHUNK)
            if not data:
                break
            if first and looks_binary(data[:SNIFF]):
                self.skipped[str(f.file.path)] = SkippedFile(path=str(f.file.path), reason="binary content")
                f.fh.close()
                f.fh = None
                return False
            first = False
            got = True
            if len(f.head) < _PROBE:
                f.head += data[: _PROBE - len(f.head)]
            f.tail = (f.tail + data)[-_PROBE:]
            f.offset += len(data)
            buf = f.carry + data
            last = buf.rfind(b"\n")
            if last < 0:
                f.carry = buf[:MAX_LINE_BYTES]
                continue
            f.carry = buf[last + 1 :][:MAX_LINE_BYTES]
            f.scanner.feed(buf[: last + 1])
        return got

    def poll(self) -> None:
        for root in self.paths:
            job = discover(root)
            for jf in job.log_files:
                key = str(jf.path)
                f = self.files.get(key)
                if f is None:
                    opened = self._open(jf)
                    if opened is not None:
                        self.files[key] = opened
                    continue
                if f.fh is None:
                    continue
                try:
                    st = os.stat(key)
                except OSError:
                    continue
                if st.st_ino != f.ino:  # rotated: finish the old file, then start on the new one
                    self._read_new(f)
                    self._retire(f)
                    f.fh.close()
                    try:
                        f.fh, _ = open_for_scan(key)
                    except (OSError, ReadError):
                        f.fh = None
                        continue
                    f.ino = st.st_ino
                    self._new_scanner(f)
                elif st.st_size < f.offset or _rewritten(f):  # truncated in place (and perhaps regrown)
                    self._retire(f)
                    f.fh.seek(0)
                    self._new_scanner(f)
                if not self._read_new(f) and f.scanner is not None:
                    f.scanner.flush_idle()

    def findings(self) -> list[Finding]:
        out: list[Finding] = []
        for ji, root in enumerate(self.paths):
            job = discover(root)
            scanned = []
            for f in self.files.values():
                if not str(f.file.path).startswith(str(root)):
                    continue
                parts = list(f.retired)
                if f.result is not None:
                    parts.append(f.result)
                merged = _merge_snapshot(parts)
                scanned.append((f.file, merged))
            label = f"J{ji + 1}." if len(self.paths) > 1 else ""
            _, findings = assemble_job(job, scanned, self.diagnoser, label)
            out += findings
        return out

    def new_findings(self) -> list[Finding]:
        fresh = []
        for f in self.findings():
            key = _finding_key(f)
            if key not in self.seen:
                self.seen.add(key)
                fresh.append(f)
        return fresh

    def run(
        self, emit: Callable[[Finding], None], interval: float = 1.0, stop: Callable[[], bool] | None = None
    ) -> int:
        """Poll until interrupted (or ``stop()``); returns how many findings were emitted."""
        count = 0
        try:
            while True:
                self.poll()
                for finding in self.new_findings():
                    finding.id = f"F{count + 1}"
                    emit(finding)
                    count += 1
                if stop is not None and stop():
                    break
                time.sleep(interval)
        except KeyboardInterrupt:
            pass
        finally:
            self.close()
        return count

    def close(self) -> None:
        """Close every followed file (the results so far stay)."""
        for f in self.files.values():
            if f.fh is not None:
                f.fh.close()
                f.fh = None


#: Bytes compared at the start of a followed file and before its read offset, to notice a rewrite.
_PROBE = 512


def _rewritten(f: _Followed) -> bool:
    """Whether the bytes already read are no longer in the file: it was truncated and has grown again."""
    if f.fh is None or not f.offset:
        return False
    try:
        fd = f.fh.fileno()
        return os.pread(fd, len(f.head), 0) != f.head or os.pread(fd, len(f.tail), f.offset - len(f.tail)) != f.tail
    except (OSError, ValueError, AttributeError):
        return False


def _merge_snapshot(parts: list[SegmentResult]) -> SegmentResult:
    """Results of a file's rotations and truncations, as one (without disturbing the live scanner).
    Line numbers stay those of each generation: after a rotation, line 12 is line 12 of the new file."""
    import copy

    snapshot = [copy.deepcopy(p) for p in parts]
    for i, p in enumerate(snapshot):
        p.segment = i
    return merge_segments(snapshot, consecutive=False)


def _finding_key(f: Finding) -> str:
    if f.incident is not None:
        return f"{f.job}|incident|{f.incident.kind}|{f.incident.signature}"
    if f.metric is not None:
        return f"{f.job}|metric|{f.metric.id}"
    if f.override is not None:
        return f"{f.job}|override|{f.override.text}"
    return f"{f.job}|{f.kind}|{f.title}"

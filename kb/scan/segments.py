"""What scanning a file (or a line-aligned segment of it) returns, and the merge of a file's segments.

Kept apart from :mod:`kb.scan.filescan` (which produces them) and :mod:`kb.scan.runner` (which collects
them), so that the report code, the executors and ``--follow`` need neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_LOCATIONS = 20  # line numbers kept per group and file

#: (month, day, hour, minute, second, fraction): a log timestamp, comparable without a year.
TimeKey = tuple[int, int, int, int, int, float]


@dataclass
class BlockGroup:
    """Every block of one file (segment) with the same signature."""

    signature: str
    kind: str  # error | cascade | notice
    title: str
    text: str  # the first block, lines cut at LINE_CUT
    start_line: int  # first line of that block
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    lines: list[int] = field(default_factory=list)  # anchor line of each block (first MAX_LOCATIONS)
    time: TimeKey | None = None
    time_text: str | None = None
    time_own: bool = False  # the timestamp is on an anchor line, not inherited from a line before it
    first_time_line: int | None = None

    def shift(self, n: int) -> None:
        self.start_line += n
        self.lines = [x + n for x in self.lines]
        if self.first_time_line is not None:
            self.first_time_line += n

    def absorb(self, other: BlockGroup) -> None:
        self.count += other.count
        self.ranks |= other.ranks
        self.lines = (self.lines + other.lines)[:MAX_LOCATIONS]
        if other.time is not None and (self.time is None or other.time < self.time):
            self.time, self.time_text, self.time_own = other.time, other.time_text, other.time_own


@dataclass
class SegmentResult:
    """What one scan task returns (picklable, compact)."""

    file_index: int
    segment: int
    lines: int = 0
    bytes_read: int = 0
    groups: dict[str, BlockGroup] = field(default_factory=dict)
    metrics: dict[str, list[tuple[int, float, int]]] = field(default_factory=dict)
    metric_keys: list[str] = field(default_factory=list)
    env_lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped: str | None = None  # the whole file could not be read
    partial: str | None = None  # read only in part, and why
    long_lines: int = 0

    def shift(self, n: int) -> None:
        """Make line numbers absolute: ``n`` lines precede this segment in the file."""
        if not n:
            return
        for g in self.groups.values():
            g.shift(n)
        for key, points in self.metrics.items():
            self.metrics[key] = [(s, v, ln + n) for s, v, ln in points]


def merge_segments(segments: list[SegmentResult], consecutive: bool = True) -> SegmentResult:
    """One file's result from its segments, with absolute line numbers. With ``consecutive=False`` the
    parts are successive generations of a file (rotated or truncated), each numbered from its line 1."""
    segments = sorted(segments, key=lambda s: s.segment)
    if not segments:
        return SegmentResult(file_index=-1, segment=0, skipped="not scanned")
    out = segments[0]
    offset = out.lines
    for seg in segments[1:]:
        if consecutive:
            seg.shift(offset)
        offset += seg.lines
        out.lines += seg.lines
        out.bytes_read += seg.bytes_read
        out.long_lines += seg.long_lines
        out.notes += seg.notes
        out.partial = out.partial or seg.partial
        out.skipped = out.skipped or seg.skipped
        for sig, g in seg.groups.items():
            mine: BlockGroup | None = out.groups.get(sig)
            if mine is None:
                out.groups[sig] = g
            else:
                mine.absorb(g)
        for key, points in seg.metrics.items():
            out.metrics.setdefault(key, []).extend(points)
        out.env_lines += seg.env_lines[: max(0, 300 - len(out.env_lines))]
        if not out.metric_keys:
            out.metric_keys = seg.metric_keys
    return out

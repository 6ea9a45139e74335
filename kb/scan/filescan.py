"""Scanning one file (or one line-aligned segment of it): hits to error blocks, metric points and facts.

The scanner is fed line-aligned buffers. Hyperscan reports match end offsets; Python works only on
the lines around them:

- anchor lines (symptom regexes, tracebacks, exception lines, fatal errors, cascade signs) open or
  extend an *error block* with a few lines of context, a traceback keeping its block open until its
  exception line;
- step lines and file-logger JSONL lines give metric points for the metrics the corpus watches;
- version, GPU and command lines are kept (a bounded number) for the job's environment facts.

Closed blocks are grouped by signature (exception type and masked message, or the masked key line), so
the same traceback printed ten thousand times costs one excerpt, a count, ranks and line numbers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from kb.hyperscan_support import hs as _hs
from kb.hyperscan_support import thread_scratch
from kb.loglines import EXCEPTION_LINE, STEP_LINE, WRAPPER_EXCEPTIONS, clean_line
from kb.scan.database import Marker, ScanDatabase
from kb.scan.segments import MAX_LOCATIONS, BlockGroup, SegmentResult, TimeKey

BEFORE = 6  # context lines kept before the first anchor of a block
AFTER = 6  # context lines kept after the last anchor
TRACEBACK_AFTER = 250  # a traceback keeps its block open this long, or until its exception line
MAX_BLOCK_LINES = 400
MAX_BLOCK_BYTES = 256 * 1024
LINE_CUT = 8192  # block lines are cut here, as the engine does
MAX_ENV_LINES = 300
HYDRA_ANNOUNCES = "Error executing job with overrides"
TAIL_BYTES = 32 * 1024

_BIT = {m: 1 << int(m) for m in Marker}
_ANCHOR_BITS = _BIT[Marker.SYMPTOM] | _BIT[Marker.TRACEBACK] | _BIT[Marker.EXCEPTION] | _BIT[Marker.FATAL]
_ANCHOR_BITS |= _BIT[Marker.CASCADE]
_ERROR_BITS = _BIT[Marker.TRACEBACK] | _BIT[Marker.EXCEPTION] | _BIT[Marker.FATAL]

_QUIET_BITS = _BIT[Marker.CASCADE] | _BIT[Marker.FATAL] | _BIT[Marker.EXCEPTION]
#: Ray's own components log their routine work at INFO (glog ``[date time,ms I pid tid]`` in raylet.out,
#: gcs_server.out, python-core-worker-*.log; Python logging ``date time,ms\tINFO`` in dashboard.log): an
#: actor killed because its owner exited, a SIGTERM at shutdown. Those lines only name errors; they are
#: not errors, unless a corpus symptom says otherwise.
_ROUTINE = re.compile(
    rb"^(?:\([\w.:]+(?: pid=\d+)?(?:, ip=[\w.:-]+)?\) )?"
    rb"(?:\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ [ID] \d+ \d+\]|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(?:INFO|DEBUG)\s)"
    rb"|death reason = EXPECTED_TERMINATION|^reason_message: "
    rb"|\s--\s+Exiting with (?:SIGTERM|signal \d+)"  # Ray's dashboard processes at shutdown
)


def _routine(line: bytes | bytearray) -> bool:
    return _ROUTINE.search(line) is not None


#: Messages that are consequences of a failure elsewhere: other ranks timing out, actors dying, signals.
CASCADE = re.compile(
    r"Watchdog caught collective operation timeout|Some NCCL operations have failed or timed out|"
    r"NCCL communicator was aborted|ProcessGroupNCCL.{0,80}(?:abort|[Tt]imeout|timed out)|"
    r"The actor died unexpectedly|actor is dead|ActorDiedError|RayActorError|A worker died or was killed|"
    r"SIGTERM|[Ss]ignal 15\b|\bTerminated\b|KeyboardInterrupt|SystemExit|"
    r"Connection reset by peer|Broken pipe|taking the entire process down|Failed to send exit request to worker"
)
_RANK = re.compile(r"\[[Rr]ank ?(\d+)\]|\bRANK[=: ](\d+)\b|\b[Rr]ank[=: ](\d+)\b|\[PG \d+ Rank (\d+)\]")
# glog/c10: [E1206 18:44:12.715298746 ...]; logging: 2025-12-06 18:44:12,105; vLLM: INFO 12-06 18:44:12
_TS = [
    re.compile(r"(?:^|[\s\[:])\d{4}-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"),
    re.compile(r"\[[EWIFD](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"),
    re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?"),
]
_MASK = [
    (re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b"), "#"),
    (re.compile(r"(?:/[\w.+-]+)+/"), "/…/"),
    (re.compile(r"\b\d+(?:\.\d+)?"), "N"),
    (re.compile(r"\s+"), " "),
]

Buffer = bytes | bytearray


def mask(text: str) -> str:
    for rx, repl in _MASK:
        text = rx.sub(repl, text)
    return text.strip()[:300]


def find_timestamp(text: str) -> tuple[TimeKey, str] | None:
    best: tuple[int, tuple[TimeKey, str]] | None = None
    for rx in _TS:
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            mon, day, h, mi, s = (int(m.group(i)) for i in range(1, 6))
            frac = float("0." + m.group(6)) if m.group(6) else 0.0
            shown = f"{mon:02d}-{day:02d} {h:02d}:{mi:02d}:{s:02d}" + (f".{m.group(6)[:6]}" if m.group(6) else "")
            best = (m.start(), ((mon, day, h, mi, s, frac), shown))
    return best[1] if best else None


def find_rank(text: str) -> int | None:
    m = _RANK.search(text)
    if not m:
        return None
    return int(next(g for g in m.groups() if g is not None))


@dataclass
class _Block:
    start_line: int
    next_line: int  # the next line number to append
    after_end: int  # the last line number the block wants
    pieces: list[bytes] = field(default_factory=list)
    size: int = 0
    tb_open: bool = False
    anchors: list[tuple[int, int, str]] = field(default_factory=list)  # (line no, marker bits, cleaned text)
    raw_anchors: list[str] = field(default_factory=list)  # the same lines as printed (rank tags, timestamps)


#: Newlines counted with ``bytes.count`` by this process; past NUMPY_AFTER, numpy takes over.
_counted = 0
#: numpy counts newlines about three times faster than ``bytes.count`` but costs ~0.1 s to import,
#: which only pays off once a worker has this much left to read.
NUMPY_AFTER = 192 * 1024 * 1024
_np: Any = None


def count_newlines(buf: Buffer, start: int = 0, end: int | None = None) -> int:
    """Newlines in ``buf[start:end]``."""
    global _counted, _np
    end = len(buf) if end is None else end
    if end - start < 65536:
        return buf.count(b"\n", start, end)
    if _np is None:
        _counted += end - start
        if _counted < NUMPY_AFTER:
            return buf.count(b"\n", start, end)
        import numpy

        _np = numpy
    return int(_np.count_nonzero(_np.frombuffer(buf, _np.uint8, end - start, start) == 10))


def _cut_lines(piece: bytes) -> bytes:
    if len(piece) <= LINE_CUT:
        return piece
    return b"\n".join(line[:LINE_CUT] for line in piece.split(b"\n"))


_STEP_HEAD = re.compile(rb"(?:^|\s)step:(\d+) - ")
# After a watched key: the number as verl prints it, bare or wrapped (np.float64(0.41), torch.tensor(0.4)).
_STEP_VALUE = re.compile(rb"(?:np\.\w+\(|torch\.tensor\()?([-+.\w]+)")


class _StepItems:
    """Finds the watched metrics in a step line: a Hyperscan database of their ' - key:' items (one match
    each per line), or one regex alternation where Hyperscan is absent. A verl step line carries a hundred
    metrics or more and the corpus watches a few dozen; splitting every line into Python objects made step
    lines scan at a twentieth of the speed of other lines."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        needles = [f" - {n}:".encode() for n in names]
        self._lengths = [len(n) for n in needles]
        self._db: Any = None
        self._alternation: re.Pattern[bytes] | None = None
        if _hs is not None:
            self._db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            self._db.compile(
                expressions=[re.escape(n) for n in needles],
                ids=list(range(len(needles))),
                flags=[_hs.HS_FLAG_SINGLEMATCH] * len(needles),
            )
        else:
            self._alternation = re.compile(rb" - (" + b"|".join(re.escape(n.encode()) for n in names) + rb"):")
            self._index = {n.encode(): i for i, n in enumerate(names)}

    def values(self, line: bytes, start: int) -> list[tuple[str, float]]:
        ends: list[tuple[int, int]] = []
        if self._db is not None:

            def found(pid: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                ends.append((pid, to))

            self._db.scan(line[start:], match_event_handler=found, scratch=thread_scratch(self._db))
            ends = [(pid, to + start) for pid, to in ends]
        else:
            assert self._alternation is not None
            ends = [(self._index[m.group(1)], m.end()) for m in self._alternation.finditer(line, start)]
        out = []
        for pid, end in ends:
            m = _STEP_VALUE.match(line, end)
            if m is None:
                continue
            raw = m.group(1)
            try:
                value = float(raw)
            except ValueError:
                if raw not in (b"True", b"False"):
                    continue
                value = 1.0 if raw == b"True" else 0.0
            out.append((self.names[pid], value))
        return out


_STEP_ITEMS: dict[frozenset[str], _StepItems | None] = {}


def step_items(watched: frozenset[str]) -> _StepItems | None:
    """The step-line matcher of ``watched`` (None when no metric is watched), built once per process."""
    try:
        return _STEP_ITEMS[watched]
    except KeyError:
        names = sorted(watched, key=len, reverse=True)
        items = _STEP_ITEMS[watched] = _StepItems(names) if names else None
        return items


class FileScanner:
    """Incremental: ``feed`` line-aligned buffers, then ``finish``; results accumulate in ``result``."""

    def __init__(
        self,
        db: ScanDatabase,
        watched_metrics: frozenset[str],
        result: SegmentResult,
        rank_hint: int | None = None,
    ) -> None:
        self.db = db
        self.kinds = db.kind_bits
        self.watched = watched_metrics
        self.result = result
        self.rank_hint = rank_hint
        self.line = 1  # number of the first line of the next buffer
        self.tail = b""
        self.block: _Block | None = None
        self.cursor = 0  # offset in the current buffer of the open block's next_line
        self.end = 0  # where the content of the current buffer ends
        self.last_block_end = 0
        self._env_seen: set[str] = set()
        # One alternation of the watched metrics' ' - key:' items: a step line is searched once, in C, and
        # never split into a Python object per metric. Compiled once per process and metric set, not per
        # file: a Ray session's thousands of small logs each made one (6 s of 10 for 3,000 files).
        self._step_items = step_items(watched_metrics)

    # ------------------------------------------------------------------ feeding

    def feed(self, buf: Buffer, end: int | None = None) -> None:
        """Scan ``buf[:end]`` (whole lines). The buffer may be reused by the caller afterwards:
        nothing kept here refers to it."""
        end = len(buf) if end is None else end
        hits = self.db.scan(memoryview(buf)[:end] if end != len(buf) else buf)
        self.cursor = 0
        self.end = end
        pos, ln = 0, self.line
        if hits:
            per_line: dict[int, int] = {}
            kinds = self.kinds
            rfind = buf.rfind
            for pid, hit_end in hits:
                ls = rfind(b"\n", 0, hit_end) + 1
                per_line[ls] = per_line.get(ls, 0) | kinds[pid]
            for ls in sorted(per_line):
                ln += count_newlines(buf, pos, ls)
                pos = ls
                self._hit(buf, ls, buf.find(b"\n", ls, end), ln, per_line[ls])
        total = ln + count_newlines(buf, pos, end)
        b = self.block
        if b is not None:
            self._extend_block(buf, min(b.after_end, total - 1))
            if b.next_line > b.after_end:
                self._close_block()
        self.line = total
        if end > TAIL_BYTES:
            cut = buf.find(b"\n", end - TAIL_BYTES, end)
            self.tail = bytes(buf[cut + 1 : end])
        else:
            self.tail = (self.tail + buf[:end])[-TAIL_BYTES:]
            nl = self.tail.find(b"\n")
            if len(self.tail) == TAIL_BYTES and nl >= 0:
                self.tail = self.tail[nl + 1 :]

    def finish(self) -> SegmentResult:
        if self.block is not None:
            self._close_block()
        self.result.lines = self.line - 1
        return self.result

    def flush_idle(self) -> None:
        """Close a block still waiting for context lines (used by --follow when a file goes quiet)."""
        if self.block is not None:
            self._close_block()

    # ------------------------------------------------------------------ hits

    def _hit(self, buf: Buffer, ls: int, le: int, ln: int, bits: int) -> None:
        if bits & (_BIT[Marker.STEP] | _BIT[Marker.JSONL]):
            if bits & _BIT[Marker.STEP]:
                self._step_line(bytes(buf[ls : min(le, ls + 256 * 1024)]), ln)
            else:
                self._jsonl_line(buf[ls : min(le, ls + 256 * 1024)].decode("utf-8", "replace"), ln)
            bits &= _BIT[Marker.SYMPTOM]  # a step line is an anchor only when a symptom regex says so
        if bits & _BIT[Marker.ENV] and len(self.result.env_lines) < MAX_ENV_LINES:
            text = buf[ls : min(le, ls + 4096)].decode("utf-8", "replace")
            cleaned = clean_line(text).strip()
            if cleaned and cleaned not in self._env_seen:
                self._env_seen.add(cleaned)
                self.result.env_lines.append(cleaned)
        if bits & _QUIET_BITS and _routine(buf[ls : min(le, ls + 512)]):
            bits &= ~_QUIET_BITS
        if bits & _ANCHOR_BITS:
            self._anchor(buf, ls, le, ln, bits & _ANCHOR_BITS)

    def _step_line(self, line: bytes, ln: int) -> None:
        """A verl step line holds a hundred metrics or more, of which the corpus watches a few dozen: those are
        found by one compiled alternation, and no line is split into Python objects. Only the first step
        line is parsed whole, for the job's list of metric names."""
        if not self.result.metric_keys:
            self._first_step_line(line.decode("utf-8", "replace"))
        head = _STEP_HEAD.search(line)
        if head is None or self._step_items is None:
            return
        step = int(head.group(1))
        metrics = self.result.metrics
        # From the ' - ' before the first item, so that every key has one in front of it.
        for key, value in self._step_items.values(line, head.end() - 3):
            metrics.setdefault(key, []).append((step, value, ln))

    def _first_step_line(self, text: str) -> None:
        m = STEP_LINE.search(text.rstrip("\r"))
        if m:
            self.result.metric_keys.extend(item.split(":", 1)[0].strip() for item in m["rest"].split(" - "))

    def _jsonl_line(self, text: str, ln: int) -> None:
        try:
            obj = json.loads(text.strip())
        except ValueError:
            return
        if not isinstance(obj, dict) or not isinstance(obj.get("step"), int):
            return
        data = obj.get("data", obj)
        if not isinstance(data, dict):
            return
        if not self.result.metric_keys:
            self.result.metric_keys.extend(str(k) for k in data if k != "step")
        for key, value in data.items():
            if key not in self.watched:
                continue
            nonfinite = isinstance(value, str) and value.lower() in ("nan", "inf", "-inf")
            if isinstance(value, bool | int | float) or nonfinite:
                self.result.metrics.setdefault(key, []).append((obj["step"], float(value), ln))

    # ------------------------------------------------------------------ blocks

    def _anchor(self, buf: Buffer, ls: int, le: int, ln: int, bits: int) -> None:
        b = self.block
        if b is not None and ln > b.after_end:
            self._extend_block(buf, b.after_end)
            self._close_block()
            b = None
        if b is None:
            b = self._open_block(buf, ls, ln)
        self._extend_block(buf, ln)
        raw = buf[ls : min(le, ls + LINE_CUT)].decode("utf-8", "replace")
        text = clean_line(raw)
        if len(b.anchors) < 64:
            b.anchors.append((ln, bits, text))
            b.raw_anchors.append(raw[:400])
        exc = EXCEPTION_LINE.match(text.strip()) if bits & _BIT[Marker.EXCEPTION] and b.tb_open else None
        if bits & _BIT[Marker.TRACEBACK] or (bits & _BIT[Marker.FATAL] and HYDRA_ANNOUNCES in text):
            # Hydra names the failed job first and prints its traceback after (other processes' lines
            # may come between): one block, until the exception line.
            b.tb_open = True
            b.after_end = max(b.after_end, ln + TRACEBACK_AFTER)
        elif exc is not None and exc["type"] in WRAPPER_EXCEPTIONS:
            b.after_end = max(b.after_end, ln + TRACEBACK_AFTER)  # the remote traceback and its cause follow
        elif exc is not None:
            b.tb_open = False
            b.after_end = ln + AFTER
        else:
            b.after_end = max(b.after_end, ln + AFTER)
        if b.next_line - b.start_line >= MAX_BLOCK_LINES or b.size >= MAX_BLOCK_BYTES:
            self._close_block()

    def _open_block(self, buf: Buffer, ls: int, ln: int) -> _Block:
        want = max(0, min(BEFORE, ln - self.last_block_end - 1))
        start, got = ls, 0
        while got < want and start > 0:
            start = buf.rfind(b"\n", 0, start - 1) + 1
            got += 1
        pieces: list[bytes] = []
        if got < want and start == 0 and self.tail:
            tail_lines = self.tail.split(b"\n")[:-1][-(want - got) :]
            if tail_lines:
                pieces.append(b"\n".join(tail_lines) + b"\n")
                got += len(tail_lines)
        if start < ls:
            pieces.append(bytes(buf[start:ls]))
        block = _Block(start_line=ln - got, next_line=ln, after_end=ln, pieces=[_cut_lines(p) for p in pieces])
        block.size = sum(len(p) for p in block.pieces)
        self.block = block
        self.cursor = ls
        return block

    def _extend_block(self, buf: Buffer, upto: int) -> None:
        """Append lines ``next_line..upto`` (as far as ``buf`` reaches) to the open block."""
        b = self.block
        if b is None or upto < b.next_line:
            return
        pos, n = self.cursor, b.next_line
        find = buf.find
        size = self.end
        while n <= upto and pos < size:
            nl = find(b"\n", pos, size)
            pos = size if nl < 0 else nl + 1
            n += 1
        if pos > self.cursor and b.size < MAX_BLOCK_BYTES:
            piece = _cut_lines(bytes(buf[self.cursor : pos]))
            b.pieces.append(piece)
            b.size += len(piece)
        self.cursor = pos
        b.next_line = n

    def _close_block(self) -> None:
        b = self.block
        if b is None:
            return
        self.block = None
        self.last_block_end = b.next_line - 1
        if not b.anchors:
            return
        text = b"".join(b.pieces).decode("utf-8", "replace")
        signature, kind, title = classify_block(b.anchors)
        group = self.result.groups.get(signature)
        if group is None:
            group = BlockGroup(signature=signature, kind=kind, title=title, text=text, start_line=b.start_line)
            self.result.groups[signature] = group
        group.count += 1
        if len(group.lines) < MAX_LOCATIONS:  # where the block is: its key line (the exception), not its first
            group.lines.append(next((ln for ln, _, t in b.anchors if t.strip()[:300] == title), b.anchors[0][0]))
        rank = None
        for line in b.raw_anchors:
            rank = find_rank(line)
            if rank is not None:
                break
        if rank is None:
            rank = self.rank_hint
        if rank is not None:
            group.ranks.add(rank)
        found = block_time(b, text)
        if found is not None and (group.time is None or found[0][0] < group.time):
            (group.time, group.time_text), group.time_own = found
            group.first_time_line = b.anchors[0][0]


def block_time(b: _Block, text: str) -> tuple[tuple[TimeKey, str], bool] | None:
    """(timestamp, own) of a block: the first timestamp on its anchor lines (own), else the nearest one
    printed before its first anchor (a traceback has none of its own)."""
    for raw in b.raw_anchors:
        ts = find_timestamp(raw)
        if ts is not None:
            return ts, True
    before = text.splitlines()[: max(0, b.anchors[0][0] - b.start_line)]
    for line in reversed(before):
        ts = find_timestamp(line)
        if ts is not None:
            return ts, False
    return None


def classify_block(anchors: list[tuple[int, int, str]]) -> tuple[str, str, str]:
    """(signature, kind, title) of a block from its anchor lines."""
    exc_line: str | None = None
    exc_sig: str | None = None
    for _, bits, text in reversed(anchors):
        if not bits & _BIT[Marker.EXCEPTION]:
            continue
        m = EXCEPTION_LINE.match(text.strip())
        if not m:
            continue
        etype, inner = m["type"], m["inner"]
        if etype in WRAPPER_EXCEPTIONS and inner:
            etype = inner.split(".")[-1]
        elif etype in WRAPPER_EXCEPTIONS and exc_line is not None:
            continue
        if exc_line is None or etype not in WRAPPER_EXCEPTIONS:
            exc_line = text.strip()
            exc_sig = f"{etype}: {mask(m['msg'] or '')}"
            if etype not in WRAPPER_EXCEPTIONS:
                break
    has_error = any(bits & _ERROR_BITS for _, bits, _ in anchors)
    if exc_line is not None and exc_sig is not None:
        key, signature = exc_line, exc_sig
    else:
        order = (_BIT[Marker.FATAL], _BIT[Marker.SYMPTOM], _BIT[Marker.CASCADE], _ERROR_BITS)
        key = next((t.strip() for bit in order for _, b, t in anchors if b & bit), anchors[0][2].strip())
        signature = mask(key)
    if CASCADE.search(key):
        kind = "cascade"
    elif has_error:
        kind = "error"
    else:
        kind = "notice"
    return f"{kind}|{signature}", kind, key[:300]

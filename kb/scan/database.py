"""One multi-pattern database for the scanner: every corpus symptom regex plus the scanner's own markers.

Hyperscan runs it over raw bytes (block mode, one line-aligned buffer at a time); Python only sees the
end offsets of matches. The compiled database is serialised once in the parent and loaded by every
worker process (or Ray task), so nothing is compiled twice. Without Hyperscan, a slower ``re`` scan over
the same buffers gives the same hits.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from kb.cache import cache_dir, prune, write_atomically
from kb.hyperscan_support import hs as _hs
from kb.hyperscan_support import thread_scratch


class Marker(IntEnum):
    """What a hit means to the scanner; corpus symptom hits are ``SYMPTOM``."""

    SYMPTOM = 0
    STEP = 1  # a console step line: step:N - key:value - ...
    JSONL = 2  # a file-logger line: {"step": N, "data": {...}}
    TRACEBACK = 3  # Traceback (most recent call last):
    EXCEPTION = 4  # SomethingError: message
    FATAL = 5  # Fatal Python error, segfaults, CUDA errors, vLLM/Ray ERROR lines
    CASCADE = 6  # NCCL watchdog timeouts, actor died unexpectedly, SIGTERM, ...
    ENV = 7  # versions, GPUs, the launch command, Hydra's overrides line


#: Scanner markers (bytes regexes). They are prefilters: Python re-checks around each hit.
MARKERS: list[tuple[Marker, str]] = [
    (Marker.STEP, r"(?:^|\s)step:\d+ - "),
    (Marker.JSONL, r"^\s*\{\s*\"step\"\s*:\s*\d+"),
    (Marker.TRACEBACK, r"Traceback \(most recent call last\):"),
    (
        Marker.EXCEPTION,
        r"(?:^|[\s:\]\)>])(?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt)(?:\([\w.]+\))?:(?:\s|$)",
    ),
    (Marker.EXCEPTION, r"^\s*(?:[a-z_]\w*\.)*(?:MissingMandatoryValue|KeyboardInterrupt|SystemExit)\b"),
    (Marker.FATAL, r"Fatal Python error|Segmentation fault|core dumped|CUDA error: |NCCL error|(?:^|\s)ERROR\s"),
    (
        Marker.FATAL,
        r"Set the environment variable HYDRA_FULL_ERROR=1|Error executing job with overrides|Could not override '|"
        r"Could not append to config|Missing mandatory value",
    ),
    (
        Marker.CASCADE,
        r"Watchdog caught collective operation timeout|The actor died unexpectedly|actor is dead|"
        r"ActorDiedError|RayActorError|SIGTERM|[Ss]ignal 15\b|A worker died or was killed|"
        r"NCCL communicator was aborted|Some NCCL operations have failed or timed out|"
        r"Failed to send exit request to worker",
    ),
    (Marker.ENV, r"main_ppo|main_generation|Error executing job with overrides"),
    (
        Marker.ENV,
        r"(?:^|[\s(\[])(?:verl|torch|vllm|sglang|transformers|ray|flash[-_]attn|tensordict|numpy)"
        r"(?:==|\s+version[:=]?\s*|:\s*|\s+v?)\d+\.\d+",
    ),
    (Marker.ENV, r"vLLM API server version|CUDA Version:|(?:^|\s)Python 3\.\d+|GPU \d+: |NVIDIA [A-Z]+\d+"),
    (Marker.ENV, r"SLURM_JOB_ID|slurmstepd|(?:^|\s)srun:|(?:aarch64|arm64|x86_64|ppc64le)"),
]


@dataclass
class ScanDatabase:
    """The corpus symptoms (in ``RuleEngine`` order), then the markers. Each distinct expression is compiled
    once (several entries share a symptom): a hit's pattern id indexes ``kind_bits``, the kinds of every
    source of that expression OR-ed, which is all the scanner asks of a hit. The engine's cost per byte
    grows with the number of patterns."""

    symptoms: list[str]
    markers: list[tuple[Marker, str]] = field(default_factory=lambda: list(MARKERS))
    serialized: bytes | None = None
    _db: Any = field(default=None, init=False, repr=False)
    _py: list[re.Pattern[bytes]] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        sources = [(Marker.SYMPTOM, p) for p in self.symptoms] + list(self.markers)
        bits: dict[str, int] = {}  # distinct expression -> its kinds' bits, in first-seen order
        for kind, pattern in sources:
            bits[pattern] = bits.get(pattern, 0) | 1 << int(kind)
        self.expressions: list[str] = list(bits)
        self.kind_bits: list[int] = list(bits.values())  # per pattern id, for OR-ing per line
        self.digest = hashlib.sha1("\x00".join(self.expressions).encode("utf-8")).hexdigest()

    @classmethod
    def for_symptoms(cls, symptoms: Sequence[str]) -> ScanDatabase:
        db = cls(list(symptoms))
        db.compile()
        return db

    @property
    def engine(self) -> str:
        return "hyperscan" if _hs is not None else "re"

    def compile(self) -> None:
        """Compile (or load from the on-disk cache) and keep the serialised form for workers."""
        if _hs is None:
            self._py = [re.compile(p.encode("utf-8"), re.MULTILINE) for p in self.expressions]
            return
        if self.serialized is not None:
            self._db = _hs.loadb(self.serialized, mode=_hs.HS_MODE_BLOCK)
            self._db.scratch = _hs.Scratch(self._db)
            return
        key = hashlib.sha256("\x00".join(self.expressions).encode("utf-8")).hexdigest()[:20]
        cached = cache_dir() / f"scan-hyperscan-{key}.db"
        try:
            data = cached.read_bytes()
            self._db = _hs.loadb(data, mode=_hs.HS_MODE_BLOCK)
            self._db.scratch = _hs.Scratch(self._db)
            self.serialized = data
            return
        except (OSError, _hs.error, TypeError, ValueError):
            pass
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        db.compile(
            expressions=[p.encode("utf-8") for p in self.expressions],
            ids=list(range(len(self.expressions))),
            elements=len(self.expressions),
            flags=[_hs.HS_FLAG_MULTILINE | _hs.HS_FLAG_ALLOWEMPTY] * len(self.expressions),
        )
        self._db = db
        self.serialized = _hs.dumpb(db)
        write_atomically(cached, self.serialized)
        prune(cached.parent, "scan-hyperscan-*.db", keep=16)

    def for_worker(self) -> ScanDatabase:
        """A picklable copy: the serialised database travels, the live one is rebuilt on arrival."""
        return ScanDatabase(self.symptoms, self.markers, self.serialized)

    def ensure(self) -> None:
        if self._db is None and self._py is None:
            self.compile()

    def scan(self, data: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
        """(pattern id, end offset) of every match in ``data``."""
        self.ensure()
        hits: list[tuple[int, int]] = []
        if self._db is not None:
            append = hits.append

            def on_match(pid: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
                append((pid, end))

            self._db.scan(data, match_event_handler=on_match, scratch=thread_scratch(self._db))
            return hits
        assert self._py is not None
        raw = bytes(data)
        for pid, rx in enumerate(self._py):
            hits.extend((pid, m.end()) for m in rx.finditer(raw))
        return hits

"""All symptom regexes at once, in linear time.

Hyperscan (a DFA-style engine: no backtracking, so no catastrophic patterns) finds candidate lines
for every pattern in one pass over the bytes; the ``regex`` package then confirms each candidate on
its own line, under a timeout, and yields the matched span. Where Hyperscan is not installed, a
literal prefilter plus the same confirmation gives the same answers, more slowly.
"""

from __future__ import annotations

import bisect
import hashlib
import re

# The stdlib's own regex parser, private: there is no public route to a parsed pattern (sre_parse is its
# deprecated alias, `regex` exposes no parser, Hyperscan accepts nested repeats the `regex` confirmation
# would backtrack on). tests/test_patterns.py pins every construct read here, so a Python release that
# changes the parser fails a test rather than letting a backtracking pattern through.
import re._constants as sre_constants
import re._parser as sre_parse
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import regex

from kb.cache import cache_dir, prune, write_atomically
from kb.hyperscan_support import hs as _hs
from kb.hyperscan_support import thread_scratch

#: Seconds a single confirmation may take before the line is treated as not matching.
CONFIRM_TIMEOUT = 0.05
#: Longer lines are cut before confirmation; no symptom needs more context than this.
MAX_CONFIRM_LINE = 16 * 1024


class PatternError(ValueError):
    """A pattern that does not compile or is not linear-time."""


@dataclass(frozen=True)
class LineMatch:
    pattern_id: int
    line_no: int  # 1-based
    line: str
    start: int
    end: int


def _sre_parse(pattern: str) -> sre_parse.SubPattern:
    return sre_parse.parse(pattern)


_FORBIDDEN = {
    sre_constants.GROUPREF: "a back-reference",
    sre_constants.GROUPREF_EXISTS: "a conditional group",
    sre_constants.ASSERT: "a lookahead/lookbehind",
    sre_constants.ASSERT_NOT: "a negative lookahead/lookbehind",
}
for _name, _what in (("ATOMIC_GROUP", "an atomic group"), ("POSSESSIVE_REPEAT", "a possessive repeat")):
    if hasattr(sre_constants, _name):
        _FORBIDDEN[getattr(sre_constants, _name)] = _what


def _walk(sub: sre_parse.SubPattern | list[object]) -> Iterator[tuple[object, object]]:
    for op, arg in sub:  # type: ignore[misc]
        yield op, arg
        args = arg if isinstance(arg, tuple | list) else (arg,)
        for a in args:
            if isinstance(a, sre_parse.SubPattern):
                yield from _walk(a)
            elif isinstance(a, list):
                for b in a:
                    if isinstance(b, sre_parse.SubPattern):
                        yield from _walk(b)


def check_linear(pattern: str) -> None:
    """Raise :class:`PatternError` unless ``pattern`` compiles, uses only regular constructs and nests no
    unbounded repeat inside another (``(a+)+``: exponential for the backtracking engine that confirms it)."""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise PatternError(f"does not compile: {exc}") from None
    parsed = _sre_parse(pattern)
    for op, _ in _walk(parsed):
        if op in _FORBIDDEN:
            raise PatternError(f"uses {_FORBIDDEN[op]}, which needs backtracking; linear-time engines reject it")
    if _nested_repeat(parsed):
        raise PatternError("repeats a group that itself repeats without bound (like '(a+)+'), which backtracks")


_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT} | (
    {sre_constants.POSSESSIVE_REPEAT} if hasattr(sre_constants, "POSSESSIVE_REPEAT") else set()
)
#: A repeat with a higher bound than this counts as unbounded when nested.
_NESTED_BOUND = 100


def _nested_repeat(sub: sre_parse.SubPattern | list[Any], inside: bool = False) -> bool:
    """True when an unbounded repeat sits inside another repeat of more than a few times."""
    for op, arg in sub:
        if op in _REPEATS:
            _lo, hi, body = arg
            unbounded = hi == sre_constants.MAXREPEAT or hi > _NESTED_BOUND
            if (inside and unbounded) or _nested_repeat(body, inside or unbounded):
                return True
            continue
        parts = [arg[-1]] if op is sre_constants.SUBPATTERN else arg[1] if op is sre_constants.BRANCH else []
        if any(_nested_repeat(p, inside) for p in parts):
            return True
    return False


def _required_literal(pattern: str) -> str | None:
    """The longest literal every match must contain, for the prefilter; None when there is none."""
    parsed = _sre_parse(pattern)
    if parsed.state.flags & re.IGNORECASE:
        return None
    best, run = "", []
    for op, arg in parsed:
        if op is sre_constants.LITERAL:
            run.append(chr(int(arg)))
            continue
        if len("".join(run)) > len(best):
            best = "".join(run)
        run = []
    if len("".join(run)) > len(best):
        best = "".join(run)
    return best if len(best) >= 3 else None


class PatternSet:
    """A compiled set of line patterns; ``engine`` says which engine finds the candidates."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = list(patterns)
        # With Hyperscan, compiling the set is itself the proof of linear time (and a cached database was
        # compiled from these very patterns); only the fallback needs the structural check and literals.
        self._db = self._compile_hyperscan() if _hs is not None and self.patterns else None
        self._literals: list[str | None] = []
        if self._db is None:
            errors = []
            for i, p in enumerate(self.patterns):
                try:
                    check_linear(p)
                except PatternError as exc:
                    errors.append((i, str(exc)))
            if errors:
                raise PatternError("; ".join(f"pattern {i}: {msg}" for i, msg in errors))
            self._literals = [_required_literal(p) for p in self.patterns]
        # Confirmation regexes compile on first use: most patterns never fire on a given input.
        self._confirm: dict[int, Any] = {}

    @property
    def engine(self) -> str:
        return "hyperscan" if self._db is not None else "prefilter"

    def _compile_hyperscan(self) -> Any:
        assert _hs is not None
        # Compiling a few hundred patterns takes about a second; the serialised database loads in milliseconds.
        key = hashlib.sha256("\x00".join(self.patterns).encode("utf-8")).hexdigest()[:20]
        cached = cache_dir() / f"hyperscan-{_hs.__version__ if hasattr(_hs, '__version__') else 'x'}-{key}.db"
        try:
            loaded = _hs.loadb(cached.read_bytes(), mode=_hs.HS_MODE_BLOCK)
            loaded.scratch = _hs.Scratch(loaded)  # a deserialised database has no scratch space yet
            return loaded
        except (OSError, _hs.error, TypeError, ValueError):
            pass
        db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
        flags = [_hs.HS_FLAG_MULTILINE | _hs.HS_FLAG_ALLOWEMPTY] * len(self.patterns)
        try:
            db.compile(
                expressions=[p.encode("utf-8") for p in self.patterns],
                ids=list(range(len(self.patterns))),
                elements=len(self.patterns),
                flags=flags,
            )
        except _hs.error as exc:
            raise PatternError(f"Hyperscan rejects the pattern set: {exc}") from None
        write_atomically(cached, _hs.dumpb(db))
        prune(cached.parent, "hyperscan-*.db", keep=16)
        return db

    @staticmethod
    def hyperscan_errors(patterns: Sequence[str]) -> list[tuple[int, str]]:
        """Patterns Hyperscan refuses one by one (empty when Hyperscan is absent)."""
        if _hs is None:
            return []
        bad = []
        for i, p in enumerate(patterns):
            db = _hs.Database(mode=_hs.HS_MODE_BLOCK)
            try:
                db.compile(expressions=[p.encode("utf-8")], flags=[_hs.HS_FLAG_MULTILINE | _hs.HS_FLAG_ALLOWEMPTY])
            except _hs.error as exc:
                bad.append((i, str(exc)))
        return bad

    def candidates(self, data: bytes) -> dict[int, set[int]]:
        """Pattern id -> byte offsets of match ends in ``data`` (Hyperscan) or of every line start."""
        found: dict[int, set[int]] = {}
        if self._db is not None:

            def on_match(pid: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                found.setdefault(pid, set()).add(to)

            self._db.scan(data, match_event_handler=on_match, scratch=thread_scratch(self._db))
        return found

    def confirm(self, pattern_id: int, line: str) -> tuple[int, int] | None:
        """The span of pattern ``pattern_id`` on ``line``, or None (also when it times out)."""
        try:
            compiled = self._confirm.get(pattern_id)
            if compiled is None:
                compiled = self._confirm[pattern_id] = regex.compile(self.patterns[pattern_id])
            m = compiled.search(line[:MAX_CONFIRM_LINE], timeout=CONFIRM_TIMEOUT)
        except TimeoutError:
            return None
        return (m.start(), m.end()) if m else None

    def match_lines(self, lines: Sequence[str], first_line_no: int = 1) -> list[LineMatch]:
        """Every (pattern, line) pair that matches, for a list of lines."""
        if not self.patterns or not lines:
            return []
        if self._db is not None:
            return self._match_with_hyperscan(lines, first_line_no)
        return self._match_with_prefilter(lines, first_line_no)

    def _match_with_hyperscan(self, lines: Sequence[str], first_line_no: int) -> list[LineMatch]:
        encoded = [ln.encode("utf-8", "replace") for ln in lines]
        starts, pos = [], 0
        for b in encoded:
            starts.append(pos)
            pos += len(b) + 1
        data = b"\n".join(encoded)
        pairs: set[tuple[int, int]] = set()
        for pid, ends in self.candidates(data).items():
            for end in ends:
                idx = bisect.bisect_right(starts, max(end - 1, 0)) - 1
                pairs.add((pid, idx))
        return self._confirmed(sorted(pairs, key=lambda p: (p[1], p[0])), lines, first_line_no)

    def _match_with_prefilter(self, lines: Sequence[str], first_line_no: int) -> list[LineMatch]:
        pairs = []
        for idx, line in enumerate(lines):
            for pid, lit in enumerate(self._literals):
                if lit is None or lit in line:
                    pairs.append((pid, idx))
        return self._confirmed(pairs, lines, first_line_no)

    def _confirmed(self, pairs: Iterable[tuple[int, int]], lines: Sequence[str], first: int) -> list[LineMatch]:
        out = []
        for pid, idx in pairs:
            span = self.confirm(pid, lines[idx])
            if span is not None:
                out.append(LineMatch(pid, first + idx, lines[idx], span[0], span[1]))
        return out

"""The linear-time rule read from the stdlib's regex parser (``re._parser``: no public route exists), every
construct pinned, and the literal the no-Hyperscan prefilter relies on."""

from __future__ import annotations

import pytest

from kb.patterns import PatternError, PatternSet, _required_literal, check_linear


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a+)\1", "back-reference"),
        (r"(a)?(?(1)b|c)", "conditional group"),
        (r"(?=raylet)ray", "lookahead/lookbehind"),
        (r"(?<!x)raylet", "negative lookahead/lookbehind"),
        (r"(?>ab|a)c", "atomic group"),
        (r"a++b", "possessive repeat"),
        (r"^(a+)+$", "repeats a group"),
        (r"(x(?:ab){1,1000})*", "repeats a group"),
        (r"(unclosed", "does not compile"),
    ],
)
def test_patterns_that_backtrack_are_refused(pattern: str, reason: str) -> None:
    with pytest.raises(PatternError, match=reason):
        check_linear(pattern)


@pytest.mark.parametrize(
    "pattern",
    [r"Unable to register worker with raylet", r"(ab){1,3}c+", r"CUDA out of memory\. Tried to allocate \d+"],
)
def test_regular_patterns_pass(pattern: str) -> None:
    check_linear(pattern)


def test_the_prefilter_literal_is_one_every_match_contains() -> None:
    assert _required_literal(r"CUDA out of memory\. Tried (to|for) \d+") == "CUDA out of memory. Tried "
    assert _required_literal(r"(?i)nccl error") is None  # case-folded: no literal to search for
    assert _required_literal(r"\d+ab\d+") is None  # too short to prefilter on
    lines = ["x", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "CUDA out of memory."]
    found = PatternSet([r"CUDA out of memory\. Tried to allocate \d+"]).match_lines(lines)
    assert [(m.line_no, m.line[m.start : m.end]) for m in found] == [(2, "CUDA out of memory. Tried to allocate 2")]

"""Hydra override values read without Hydra, for the plain ones.

Hydra's override parser is an ANTLR grammar whose import alone costs about a quarter of a second; most values
on a verl command line are plain (``4``, ``1e-6``, ``True``, ``vllm``, ``/data/train.parquet``). This module
reads exactly those the way Hydra's grammar does and says "not plain" for anything else (quotes, brackets,
commas, ``$``, spaces, globs, parentheses, ``=``, underscores in numbers), so the caller falls back to Hydra.
"""

from __future__ import annotations

import re
from typing import Any

#: Characters of a value that Hydra reads as one primitive with no special meaning.
_PLAIN = re.compile(r"[A-Za-z0-9./:@+\-]+|[A-Za-z/][A-Za-z0-9_./:@+\-]*")
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+|inf|nan)", re.I)


class NotPlain(ValueError):
    """The value needs Hydra's own parser."""


def plain_value(text: str) -> Any:
    """The Python value Hydra gives the plain override value ``text``; raises :class:`NotPlain` otherwise."""
    if not _PLAIN.fullmatch(text):
        raise NotPlain(text)
    lower = text.lower()
    if lower == "null":
        return None
    if lower in ("true", "false"):
        return lower == "true"
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if text[0].isdigit() or text[0] in "+-.":
        raise NotPlain(text)  # '007', '1-2', '+x': Hydra joins several tokens; let it decide
    return text


_OVERRIDE = re.compile(r"^(?:\+\+|\+|~)?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*=(?P<value>.*)$")


def plain_override(text: str) -> tuple[bool, Any]:
    """(True, value) when the whole override ``key=value`` is plain, else (False, None)."""
    m = _OVERRIDE.match(text)
    if m is None:
        return False, None
    try:
        return True, plain_value(m["value"])
    except NotPlain:
        return False, None

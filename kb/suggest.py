"""Did-you-mean for entry ids: what `corpus show`, the MCP get_entry tool and its resources suggest for an
id that does not exist (a typo, or part of an id such as ``ray-init`` or ``num_cpus``)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_PART = re.compile(r"[a-z0-9]+")


def closest_ids(wanted: str, ids: Iterable[str], n: int = 5) -> list[str]:
    """Ids that contain ``wanted`` (or all its words: ``num_cpus`` finds ``ray-init-num-cpus-renamed``),
    shortest first, then the closest spellings; at most ``n``."""
    known = sorted(set(ids))
    needle = wanted.strip().lower()
    words = _PART.findall(needle)
    if not needle:
        return []
    contains = [i for i in known if needle in i]
    if words:
        contains += [i for i in known if i not in contains and all(w in _PART.findall(i) for w in words)]
    contains.sort(key=lambda i: (needle not in i, len(i), i))
    spelled = [i for i in difflib.get_close_matches(needle, known, n=n, cutoff=0.6) if i not in contains]
    return (contains + spelled)[:n]


def no_such_entry(wanted: str, ids: Iterable[str]) -> str:
    close = closest_ids(wanted, ids)
    return f"no entry '{wanted}'" + (f"; did you mean {', '.join(close)}?" if close else "")

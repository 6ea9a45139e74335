"""What the byte scan needs from the corpus, kept so a scan can start before the corpus is loaded.

Streaming the files needs only the symptom regexes and the watched metric names; the diagnoser
(corpus models, rules, overrides) is needed only once the incidents are known. The spec of the last
run is cached under a digest of the corpus files and of the code that derives it, so ``scan`` streams
bytes while the diagnoser loads beside it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kb.cache import cache_dir, prune, write_atomically
from kb.corpus_files import corpus_digest

if TYPE_CHECKING:
    from kb.engine import Diagnoser

_KB = Path(__file__).resolve().parent.parent
#: The code that decides the spec: the rule order, the metric list and the parser behind both.
_SPEC_CODE = [_KB / "rules.py", _KB / "patterns.py", _KB / "corpus.py", _KB / "entry.py", _KB / "scan" / "job.py"]
_FORMAT = b"scan-spec-2"


@dataclass(frozen=True)
class ScanSpec:
    kb_version: str
    symptoms: tuple[str, ...]  # the rule engine's scan patterns (no ``said`` ones), in its order
    watched: frozenset[str]  # metric names some entry has a signature for

    @classmethod
    def of(cls, diagnoser: Diagnoser) -> ScanSpec:
        from kb.scan.job import watched_metrics

        return cls(diagnoser.kb_version, tuple(diagnoser.rules.scan_patterns), watched_metrics(diagnoser))


def _path(corpus_dir: Path) -> Path | None:
    key = corpus_digest(corpus_dir, code=_SPEC_CODE, salt=_FORMAT)
    return cache_dir() / f"scan-spec-{key}.json" if key else None


def load_spec(corpus_dir: Path) -> ScanSpec | None:
    """The cached spec for this corpus exactly as it is on disk now, or None."""
    path = _path(corpus_dir)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return ScanSpec(
            str(data["kb_version"]), tuple(map(str, data["symptoms"])), frozenset(map(str, data["watched"]))
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_spec(corpus_dir: Path, spec: ScanSpec) -> None:
    path = _path(corpus_dir)
    if path is not None:
        data = {"kb_version": spec.kb_version, "symptoms": list(spec.symptoms), "watched": sorted(spec.watched)}
        write_atomically(path, json.dumps(data).encode("utf-8"))
        prune(path.parent, "scan-spec-*.json", keep=8)

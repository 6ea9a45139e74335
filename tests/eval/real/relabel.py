"""Gives dev cases the entries that answer them, from label files.

    python tests/eval/real/relabel.py LABELS.tsv [...]

A label file has one `case_id<TAB>entry-id[,entry-id][<TAB>anything]` a line; a third column (the
labeller's reason) is never read. Any dev positive may gain entries (its ``["none"]`` is dropped). The
holdout is never relabelled: its cases keep the labels their collectors gave, so a holdout id is refused.
Prints counts only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from split import _read, _write  # noqa: E402

from kb.benchmark import NO_ENTRY  # noqa: E402


def read_labels(paths: list[Path]) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 2:
                raise SystemExit(f"{path}:{n}: expected case_id<TAB>entry ids")
            ids = labels.setdefault(cols[0].strip(), [])
            ids += [i.strip() for i in cols[1].split(",") if i.strip() and i.strip() not in ids]
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="+", type=Path)
    args = parser.parse_args(argv)
    from kb.corpus import load_corpus

    known = {e.id for e in load_corpus(HERE.parents[2] / "corpus").entries}
    labels = read_labels(args.labels)
    path = HERE / "dev.jsonl"
    cases = _read(path)
    by_id = {c.id: c for c in cases}
    holdout = {c.id for c in _read(HERE / "holdout.jsonl")}
    changed = 0
    refused = {"holdout case": 0, "no such case": 0, "negative": 0, "unknown entry id": 0}
    for cid, ids in labels.items():
        case = by_id.get(cid)
        if case is None:
            refused["holdout case" if cid in holdout else "no such case"] += 1
        elif case.negative:
            refused["negative"] += 1
        elif not ids or any(i not in known for i in ids):
            refused["unknown entry id"] += 1
        else:
            after = list(dict.fromkeys(ids + [e for e in case.expected if e != NO_ENTRY]))
            changed += after != case.expected
            case.expected = after
    _write(path, cases)
    refusals = ", ".join(f"{k} {v}" for k, v in refused.items())
    print(f"dev: {changed} cases relabelled; refused: {refusals}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Gives real-benchmark cases the entries that answer them, from label files, and keeps the record.

    python tests/eval/real/relabel.py dev LABELS.tsv [...]
    python tests/eval/real/relabel.py holdout LABELS.tsv [...] --by "who labelled, how"

A label file has one `case_id<TAB>entry-id[,entry-id][<TAB>anything]` a line; a third column (the
labeller's reason) is never read. On dev any positive may gain entries (its ``["none"]`` is dropped). On
the holdout only a case still labelled ``["none"]`` may change, and only by a labeller who writes no entry,
rule or threshold that session and never runs the engine on holdout input (the README's rule): the corpus
grows from other threads, and a label frozen at collection time would count an answered case as a
coverage gap forever. Every holdout change is appended to `relabels.tsv` (case, labels before and after,
date, who) and the manifest is re-signed, so the test that holds the holdout to its manifest still does.
Prints counts only: the holdout's text never reaches the terminal.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from split import _read, _write  # noqa: E402

from kb.benchmark import MANIFEST, NO_ENTRY, file_sha256  # noqa: E402

RECORD = HERE / "relabels.tsv"


def read_labels(paths: list[Path]) -> dict[str, list[str]]:
    labels: dict[str, list[str]] = {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) < 2:
                raise SystemExit(f"{path}:{n}: expected case_id<TAB>entry ids")
            ids = [i.strip() for i in cols[1].split(",") if i.strip()]
            labels.setdefault(cols[0].strip(), [])
            labels[cols[0].strip()] += [i for i in ids if i not in labels[cols[0].strip()]]
    return labels


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=["dev", "holdout"])
    parser.add_argument("labels", nargs="+", type=Path)
    parser.add_argument("--by", default="", help="holdout: who labelled, and how (recorded in relabels.tsv)")
    args = parser.parse_args(argv)
    if args.side == "holdout" and not args.by.strip():
        parser.error("--by is required for the holdout: the record says who relabelled it")
    from kb.corpus import load_corpus

    known = {e.id for e in load_corpus(HERE.parents[2] / "corpus").entries}
    labels = read_labels(args.labels)
    path = HERE / f"{args.side}.jsonl"
    cases = _read(path)
    by_id = {c.id: c for c in cases}
    changed: list[tuple[str, list[str], list[str]]] = []
    refused: dict[str, int] = {"no such case": 0, "negative": 0, "unknown entry id": 0, "holdout case not none": 0}
    for cid, ids in labels.items():
        case = by_id.get(cid)
        if case is None:
            refused["no such case"] += 1
            continue
        if case.negative:
            refused["negative"] += 1
            continue
        if any(i not in known for i in ids) or not ids:
            refused["unknown entry id"] += 1
            continue
        if args.side == "holdout" and case.expected != [NO_ENTRY]:
            refused["holdout case not none"] += 1
            continue
        before = list(case.expected)
        after = list(dict.fromkeys(ids + [e for e in before if e != NO_ENTRY]))
        if after != before:
            case.expected = after
            changed.append((cid, before, after))
    _write(path, cases)
    if args.side == "holdout" and changed:
        manifest_path = HERE / MANIFEST
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        manifest["holdout_sha256"] = file_sha256(path)
        manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
        today = datetime.date.today().isoformat()
        new = not RECORD.exists()
        with RECORD.open("a", encoding="utf-8") as out:
            if new:
                out.write("# case_id\tbefore\tafter\tdate\tby\n")
            for cid, before, after in changed:
                out.write(f"{cid}\t{','.join(before)}\t{','.join(after)}\t{today}\t{args.by.strip()}\n")
    print(
        f"{args.side}: {len(changed)} cases relabelled; refused: " + ", ".join(f"{k} {v}" for k, v in refused.items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

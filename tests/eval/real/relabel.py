"""Gives dev cases the entries that answer them, from label files; or records a holdout labeller's labels.

    python tests/eval/real/relabel.py LABELS.tsv [...]
    python tests/eval/real/relabel.py --holdout --corpus "450 entries at 305d9b0" LABELS.tsv [...]

A label file has one `case_id<TAB>entry-id[,entry-id][<TAB>anything]` a line; a third column (the
labeller's reason) is never read. Any dev positive may gain entries (its ``["none"]`` is dropped), and a
holdout id is refused.

With ``--holdout`` the lines are `case_id<TAB>entry ids or none<TAB>old label<TAB>basis`, given by a
labeller who writes no entry and never ran the engine on the case. holdout.jsonl is not touched (its
inputs and its collectors' labels stay signed as they were): the labels go to holdout_labels.jsonl, which
the scoring reads unless asked for the collectors' labels, and manifest.json re-signs that file. A dev id,
a negative or an unknown entry id is refused. Prints counts only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from split import _read, _write  # noqa: E402

from kb.benchmark import HOLDOUT_LABELS, MANIFEST, NO_ENTRY, HoldoutLabel, file_sha256, load_holdout_labels  # noqa: E402


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


def relabel_holdout(paths: list[Path], known: set[str], corpus: str) -> int:
    """The holdout labeller's lines into holdout_labels.jsonl (a later line for a case replaces an
    earlier one), and the manifest re-signed."""
    positives = {c.id: c for c in _read(HERE / "holdout.jsonl") if not c.negative}
    current = load_holdout_labels(HERE)
    refused = {"not a holdout positive": 0, "unknown entry id": 0}
    changed = 0
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.startswith("#"):
                continue
            cols = [c.strip() for c in line.split("\t")]
            if len(cols) < 2:
                raise SystemExit(f"{path}:{n}: expected case_id<TAB>entry ids or none<TAB>old<TAB>basis")
            case = positives.get(cols[0])
            ids = [i.strip() for i in cols[1].split(",") if i.strip()]
            if case is None:
                refused["not a holdout positive"] += 1
            elif not ids or any(i != NO_ENTRY and i not in known for i in ids) or (NO_ENTRY in ids and len(ids) > 1):
                refused["unknown entry id"] += 1
            else:
                basis = cols[3] if len(cols) > 3 else ""
                label = HoldoutLabel(id=case.id, expected=ids, was=case.expected, basis=basis, corpus=corpus)
                changed += sorted(ids) != sorted(case.expected)
                current[case.id] = label
    out = HERE / HOLDOUT_LABELS
    out.write_text("".join(current[k].model_dump_json() + "\n" for k in sorted(current)), encoding="utf-8")
    manifest_path = HERE / MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["labels_sha256"] = file_sha256(out)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    refusals = ", ".join(f"{k} {v}" for k, v in refused.items())
    print(f"holdout: {len(current)} labels recorded, {changed} differ from the collectors'; refused: {refusals}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("labels", nargs="+", type=Path)
    parser.add_argument("--holdout", action="store_true", help="record a holdout labeller's labels")
    parser.add_argument("--corpus", default="", help="with --holdout: the corpus labelled against")
    args = parser.parse_args(argv)
    from kb.corpus import load_corpus

    known = {e.id for e in load_corpus(HERE.parents[2] / "corpus").entries}
    if args.holdout:
        if not args.corpus:
            raise SystemExit("--holdout needs --corpus naming what was labelled against")
        return relabel_holdout(args.labels, known, args.corpus)
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

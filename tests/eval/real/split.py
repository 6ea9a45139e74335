"""Adds collected cases to the real benchmark: ids, checks, the dev/holdout split by thread, the manifest.

    python tests/eval/real/split.py [POOL.jsonl ...]

Threads already in `dev.jsonl` or `holdout.jsonl` keep their side (a new case of a known thread joins it),
but a thread that a corpus entry cites goes to dev, new or not: the entry was written from it. Any other new thread is
assigned within its stratum (negative or not, area, kind of its first case), in the order of a salted hash
of its name, to the holdout whenever that keeps the stratum's holdout share nearest 30 %. Writing the
holdout re-signs `manifest.json` (its case ids, threads and sha256), which `tests/test_real_benchmark.py`
checks; the thread list lets whoever writes an entry avoid reading them. Not part of the package: it is
how the data set is kept.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[2]))

from kb.benchmark import MANIFEST, NO_ENTRY, RealCase, case_id, cited_threads, file_sha256, thread_of  # noqa: E402

SALT = "verl-doctor-real-2026-12"
HOLDOUT_SHARE = 0.30
AREAS = {"ray", "network", "install", "config", "rollout", "metrics", "memory", "data", "checkpoint", "tooling"}


def _seen_threads() -> set[str]:
    """Threads someone read while writing entries (seen_threads.txt, one `owner/repo#N  why` a line)."""
    path = HERE / "seen_threads.txt"
    if not path.exists():
        return set()
    lines = path.read_text(encoding="utf-8").splitlines()
    return {ln.split()[0].lower() for ln in lines if ln.strip() and not ln.startswith("#")}


def _normalise(raw: dict[str, object], known: set[str]) -> RealCase:
    source = str(raw["source"]).replace("github.com/volcengine/verl/", "github.com/verl-project/verl/")
    thread = thread_of(source)
    expected = [str(e) for e in raw.get("expected") or []]  # type: ignore[attr-defined]
    negative = bool(raw.get("negative", False))
    if negative and expected:
        raise ValueError("a negative expects nothing")
    if not negative and not expected:
        raise ValueError("a positive needs entry ids or ['none']")
    bad = [e for e in expected if e != NO_ENTRY and e not in known]
    if bad:
        raise ValueError(f"unknown entry ids {bad}")
    if raw.get("area") not in AREAS:
        raise ValueError(f"unknown area {raw.get('area')!r}")
    text = str(raw["input"]).strip("\n")
    return RealCase(
        id=case_id(thread, text),
        source=source,
        thread=thread,
        project=str(raw.get("project") or thread.split("#")[0]),
        kind=raw["kind"],  # type: ignore[arg-type]
        area=str(raw["area"]),
        input=text,
        expected=expected,
        negative=negative,
        root_cause=str(raw.get("root_cause", "")),
        fix=str(raw.get("fix", "")),
        fix_keys=[str(k) for k in raw.get("fix_keys") or []],  # type: ignore[attr-defined]
        confidence=raw.get("confidence", "medium"),  # type: ignore[arg-type]
        verl_version=None if raw.get("verl_version") in (None, "") else str(raw["verl_version"]),
        ground_truth=str(raw.get("ground_truth", "")),
    )


def _read(path: Path) -> list[RealCase]:
    if not path.exists():
        return []
    return [RealCase.model_validate_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _write(path: Path, cases: list[RealCase]) -> None:
    cases = sorted(cases, key=lambda c: (c.negative, c.area, c.thread, c.id))
    path.write_text("".join(c.model_dump_json() + "\n" for c in cases), encoding="utf-8")


def _rank(thread: str) -> str:
    return hashlib.sha256(f"{SALT}:{thread}".encode()).hexdigest()


def main(pools: list[Path]) -> int:
    from kb.corpus import load_corpus

    entries = load_corpus(HERE.parents[2] / "corpus").entries
    known = {e.id for e in entries}
    cited = cited_threads(list(entries))
    sides: dict[str, list[RealCase]] = {s: _read(HERE / f"{s}.jsonl") for s in ("dev", "holdout")}
    # A holdout thread that an entry has come to cite was read to write that entry: it is dev from now on.
    cited |= _seen_threads()
    seen_by_entries = [c for c in sides["holdout"] if c.thread.lower() in cited]
    if seen_by_entries:
        print(f"moved to dev, cited by entries: {', '.join(sorted({c.thread for c in seen_by_entries}))}")
        sides["holdout"] = [c for c in sides["holdout"] if c.thread.lower() not in cited]
        sides["dev"] += seen_by_entries
    side_of = {c.thread: s for s, cases in sides.items() for c in cases}
    seen = {c.id for cases in sides.values() for c in cases}
    fresh: dict[str, list[RealCase]] = defaultdict(list)
    rejected = 0
    for pool in pools:
        for n, line in enumerate(pool.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                case = _normalise(json.loads(line), known)
            except (ValueError, KeyError, IndexError) as exc:
                print(f"{pool}:{n}: skipped: {exc}", file=sys.stderr)
                rejected += 1
                continue
            if case.id in seen:
                continue
            seen.add(case.id)
            if case.thread in side_of:
                sides[side_of[case.thread]].append(case)
            else:
                fresh[case.thread].append(case)

    def stratum(c: RealCase) -> tuple[bool, str, str]:
        return (c.negative, c.area, c.kind)

    counts: dict[tuple[bool, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for s, cases in sides.items():
        for thread in {c.thread for c in cases}:
            first = next(c for c in cases if c.thread == thread)
            counts[stratum(first)][s == "holdout"] += 1
    for thread in sorted(fresh, key=_rank):
        key = stratum(fresh[thread][0])
        dev_n, hold_n = counts[key]
        side = "holdout" if round(HOLDOUT_SHARE * (dev_n + hold_n + 1)) > hold_n else "dev"
        if thread.lower() in cited:
            side = "dev"
        counts[key][side == "holdout"] += 1
        sides[side].extend(fresh[thread])

    for s, cases in sides.items():
        _write(HERE / f"{s}.jsonl", cases)
    holdout = HERE / "holdout.jsonl"
    manifest = {
        "holdout_sha256": file_sha256(holdout),
        "holdout_ids": sorted(c.id for c in sides["holdout"]),
        "holdout_threads": sorted({c.thread for c in sides["holdout"]}),
        "dev_cases": len(sides["dev"]),
        "salt": SALT,
        "made_by": "tests/eval/real/split.py",
    }
    (HERE / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    for s, cases in sides.items():
        pos = sum(not c.negative for c in cases)
        print(
            f"{s}: {len(cases)} cases ({pos} positive, {len(cases) - pos} negative), "
            f"{len({c.thread for c in cases})} threads"
        )
    print(f"rejected {rejected}")
    return 0


if __name__ == "__main__":
    sys.exit(main([Path(p) for p in sys.argv[1:]]))

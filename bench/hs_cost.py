"""Where the scan's Hyperscan time goes: CPU per MB of the scan database over a seeded driver log, with
groups of patterns left out (against the same number left out at random), and against another build of
the library when one is importable.

    .venv/bin/python bench/hs_cost.py                 # a seeded 100 MB job's driver log (~22 MB)
    .venv/bin/python bench/hs_cost.py --log FILE --reps 7

A scan worker spends most of its CPU in one Hyperscan call per 8 MB buffer (``ScanDatabase.scan``); the
rest is reading and counting newlines. Every figure here is CPU time of that call alone (best and median
of ``--reps``, the variants interleaved so that the machine's load moves them alike). ``--pyperscan``
also times the same expressions compiled by pyperscan, whose wheel bundles a fat-runtime Hyperscan with
AVX2 and AVX-512 code paths (the ``hyperscan`` wheel's library has none): ``pip install pyperscan`` first.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

#: Patterns that carry a case-insensitive flag, and those with a dot repeat (``.*``, ``.+``, ``.{m,n}``).
CASELESS = re.compile(r"\(\?[a-z]*i")
DOT_REPEAT = re.compile(r"(?<!\\)\.(?:\*|\+|\{\d*,\d*\})")


def expressions() -> tuple[list[str], list[str]]:
    """The scan database's expressions, and the same with the symptoms marked said (what the scan searched
    for before they were left out)."""
    from kb.cli import common
    from kb.scan.database import ScanDatabase
    from kb.scan.spec import ScanSpec

    diagnoser = common.build_diagnoser(None, semantic=False)
    scanned = ScanDatabase(list(ScanSpec.of(diagnoser).symptoms)).expressions
    return scanned, ScanDatabase(list(diagnoser.rules.patterns.patterns)).expressions


def hs_scanner(exprs: list[str]) -> Callable[[bytes], None]:
    import hyperscan as hs

    db = hs.Database(mode=hs.HS_MODE_BLOCK)
    db.compile(
        expressions=[e.encode("utf-8") for e in exprs],
        ids=list(range(len(exprs))),
        elements=len(exprs),
        flags=[hs.HS_FLAG_MULTILINE | hs.HS_FLAG_ALLOWEMPTY] * len(exprs),
    )
    scratch = hs.Scratch(db)
    return lambda data: db.scan(data, match_event_handler=lambda *_: None, scratch=scratch)


def pyperscan_scanner(exprs: list[str]) -> Callable[[bytes], None]:
    import pyperscan as ps

    db = ps.BlockDatabase(
        *[ps.Pattern(e.encode("utf-8"), ps.Flag.MULTILINE, ps.Flag.ALLOWEMPTY, tag=i) for i, e in enumerate(exprs)]
    )
    scanner = db.build(None, lambda *_: ps.Scan.Continue)
    return scanner.scan


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", help="A log file to scan (default: a seeded driver log, as bench/scan.py writes)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--pyperscan", action="store_true", help="Also time pyperscan's build of the library.")
    args = ap.parse_args()
    if args.log:
        data = Path(args.log).read_bytes()
    else:
        import scan as seeded

        with tempfile.TemporaryDirectory() as tmp:
            jobs = seeded.build(Path(tmp), 100 * 1000 * 1000)
            data = (jobs[1] / "verl_demo.log").read_bytes()
    exprs, with_said = expressions()
    caseless = {i for i, e in enumerate(exprs) if CASELESS.search(e)}
    dotted = {i for i, e in enumerate(exprs) if DOT_REPEAT.search(e)}
    rng = random.Random(args.seed)
    variants: dict[str, list[str]] = {"all": exprs}
    variants[f"with the {len(with_said) - len(exprs)} said symptoms too"] = with_said
    for name, group in (("caseless", caseless), ("dot repeat", dotted), ("either", caseless | dotted)):
        variants[f"without {len(group)} {name}"] = [e for i, e in enumerate(exprs) if i not in group]
        drop = set(rng.sample(range(len(exprs)), len(group)))
        variants[f"without {len(group)} at random ({name})"] = [e for i, e in enumerate(exprs) if i not in drop]
    scanners = {name: hs_scanner(ex) for name, ex in variants.items()}
    if args.pyperscan:
        scanners["all, pyperscan (fat runtime)"] = pyperscan_scanner(exprs)
    times: dict[str, list[float]] = {name: [] for name in scanners}
    for _ in range(args.reps):
        for name, scan in scanners.items():
            c0 = time.process_time()
            scan(data)
            times[name].append(time.process_time() - c0)
    mb = len(data) / 1e6
    print(f"{len(exprs)} expressions (symptoms and markers), {mb:.1f} MB, {args.reps} interleaved reps (CPU s)")
    base = statistics.median(times["all"])
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:40s} best {min(ts):.3f}  median {med:.3f}  ({mb / med:.0f} MB/s)  {med / base:.2f}x of all")


if __name__ == "__main__":
    main()

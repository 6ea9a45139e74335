"""Summarise the oracle fixtures: per release, lines, starts/fails, and the distinct verl messages.

usage: python3 scripts/preflight_oracle/summarize.py [FIXTURE_DIR] [--write-readme]   (plain Python)

Prints Markdown. A message template is the recorded message with every number replaced by N, the
first line only (Hydra's and OmegaConf's messages go on with hints and 'full_key:' lines), cut at
140 characters: one template per (stage, exception, template) -- what an engine's regex has to
match. The fixtures' README embeds this output between its SUMMARY markers.
"""

from __future__ import annotations

import collections
import contextlib
import io
import json
import os
import re
import sys

RELEASES = ("0.4.0", "0.4.1", "0.5.0", "0.6.0", "0.6.1", "0.7.0", "0.7.1", "0.8.0", "0.9.0", "0.9.1")


def template(message: str, raised_at: str | None = None, stage: str = "") -> str:
    if not message:
        # a bare assert: name it by the source line that raised it (file:line: code)
        code = (raised_at or "").split(": ", 1)[-1]
        return f"(empty message) raised by: {code}"[:140]
    first = message.split("\n", 1)[0]
    # the wrapped error of Hydra's instantiate is on the second line: keep it
    if first.startswith("Error in call to target") and "\n" in message:
        first = first + " " + message.split("\n")[1]
    t = re.sub(r"\d+(\.\d+)?", "N", first)
    if stage == "hydra" or "is not in struct" in t:
        # the key or override the user typed is data, not part of Hydra's / OmegaConf's message
        t = re.sub(r"'[^']*'", "'<key>'", t, count=1)
    t = re.sub(r"(Invalid loss_agg_mode: )[^')\"]*", r"\1<value>", t)
    t = t.replace("|", "\\|")
    return t[:140] + ("…" if len(t) > 140 else "")


def load(path: str) -> list[dict[str, object]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--write-readme"]
    d = args[0] if args else os.path.join("tests", "fixtures", "preflight")
    if "--write-readme" in sys.argv[1:]:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            report(d)
        readme = os.path.join(d, "README.md")
        with open(readme, encoding="utf-8") as fh:
            text = fh.read()
        start, end = "<!-- SUMMARY:START -->", "<!-- SUMMARY:END -->"
        if start not in text or end not in text:
            print(f"{readme}: no SUMMARY markers", file=sys.stderr)
            return 2
        head, rest = text.split(start, 1)
        tail = rest.split(end, 1)[1]
        with open(readme, "w", encoding="utf-8") as fh:
            fh.write(head + start + "\n" + buf.getvalue() + end + tail)
        return 0
    return report(d)


def report(d: str) -> int:
    rows = []
    per_release: dict[str, collections.Counter[tuple[str, str, str]]] = {}
    for rel in RELEASES:
        p = os.path.join(d, f"verl-{rel}.jsonl")
        if not os.path.exists(p):
            continue
        recs = load(p)
        v = collections.Counter(str(r["verdict"]) for r in recs)
        st = collections.Counter(str(r["stage"]) for r in recs if r["verdict"] == "fails")
        rows.append((rel, len(recs), v["starts"], v["fails"], ", ".join(f"{k} {n}" for k, n in sorted(st.items()))))
        c: collections.Counter[tuple[str, str, str]] = collections.Counter()
        for r in recs:
            if r["verdict"] == "fails":
                c[(str(r["stage"]), str(r["exception"]),
                   template(str(r["message"] or ""), r.get("raised_at"), str(r["stage"])))] += 1  # type: ignore[arg-type]
        per_release[rel] = c
    print("| release | lines | starts | fails | fails by stage |")
    print("| --- | ---: | ---: | ---: | --- |")
    for rel, n, s, f, st in rows:
        print(f"| {rel} | {n} | {s} | {f} | {st} |")
    print()
    all_templates = sorted({k for c in per_release.values() for k in c})
    rels = list(per_release)
    print("Distinct messages (stage, exception, template) and the lines per release that raised them"
          " (blank: never raised there):")
    print()
    print("| stage | exception | message template | " + " | ".join(rels) + " |")
    print("| --- | --- | --- | " + " | ".join("---:" for _ in rels) + " |")
    for key in all_templates:
        stage, exc, tmpl = key
        cells = [str(per_release[r][key]) if per_release[r][key] else "" for r in rels]
        print(f"| {stage} | {exc} | `{tmpl}` | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

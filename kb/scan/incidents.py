"""From per-file block groups to a job's incidents: the same failure across ranks and files grouped
once, the first failure told from the cascade it caused, each incident diagnosed by the engine.

Ordering uses the timestamps the blocks carry (glog ``[E1206 18:44:12…]``, logging, vLLM) and, where a
block has none (Python tracebacks in ``worker-*.err``), the line order of the driver log, which
interleaves every worker's output in time order. A cascade (NCCL watchdog timeouts on the other ranks,
"actor died unexpectedly", SIGTERM) is attributed to the earliest non-cascade failure; when there is
none, the earliest cascade-type incident is the first failure (a genuine hang).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kb.scan.report import Incident, Location, Role
from kb.scan.segments import MAX_LOCATIONS, BlockGroup, TimeKey
from kb.signals import Signals

if TYPE_CHECKING:
    from kb.engine import Diagnoser

#: Lines of the first occurrence kept in the report.
EXCERPT_LINES = 60


@dataclass
class Draft:
    group: BlockGroup  # the first occurrence's group (excerpt, kind, title)
    file: str
    file_order: int
    count: int = 0
    ranks: set[int] = field(default_factory=set)
    files: dict[str, int] = field(default_factory=dict)
    locations: list[Location] = field(default_factory=list)
    time: TimeKey | None = None
    time_text: str | None = None
    time_own: bool = False
    driver_line: int | None = None

    def order(self) -> tuple[bool, TimeKey, float, int, int]:
        return (
            self.time is None,
            self.time or (0, 0, 0, 0, 0, 0.0),
            float(self.driver_line) if self.driver_line is not None else float("inf"),
            self.file_order,
            self.group.start_line,
        )


def merge_groups(per_file: list[tuple[str, str, dict[str, BlockGroup]]]) -> list[Draft]:
    """``per_file``: (relative path, file kind, groups) in file order; driver logs should come first."""
    drafts: dict[str, Draft] = {}
    for order, (rel, kind, groups) in enumerate(per_file):
        for sig, g in groups.items():
            d = drafts.get(sig)
            if d is None:
                d = drafts[sig] = Draft(group=g, file=rel, file_order=order)
            d.count += g.count
            d.ranks |= g.ranks
            d.files[rel] = d.files.get(rel, 0) + g.count
            rank = next(iter(g.ranks)) if len(g.ranks) == 1 else None
            for ln in g.lines:
                if len(d.locations) < MAX_LOCATIONS:
                    d.locations.append(Location(file=rel, line=ln, rank=rank))
            if g.time is not None and (d.time is None or g.time < d.time):
                d.time, d.time_text, d.time_own = g.time, g.time_text, g.time_own
            if kind in ("driver", "hydra_log", "wandb_log") and g.lines:
                first = g.lines[0]
                d.driver_line = first if d.driver_line is None else min(d.driver_line, first)
    return list(drafts.values())


def assign_roles(drafts: list[Draft]) -> tuple[list[tuple[Draft, Role, Draft | None]], Draft | None]:
    """(draft, role, caused-by draft) in report order, and the first failure."""
    errors = sorted((d for d in drafts if d.group.kind == "error"), key=Draft.order)
    cascades = sorted((d for d in drafts if d.group.kind == "cascade"), key=Draft.order)
    notices = sorted((d for d in drafts if d.group.kind == "notice"), key=Draft.order)
    root = errors[0] if errors else (cascades[0] if cascades else None)
    out: list[tuple[Draft, Role, Draft | None]] = []
    if root is not None:
        out.append((root, "first-failure", None))
    out += [(d, "error", None) for d in errors if d is not root]
    for d in cascades:
        if d is root:
            continue
        # A cascade follows its cause; only two timestamps of their own can say otherwise.
        both_own = root is not None and d.time_own and root.time_own and d.time is not None and root.time is not None
        attributed = root is not None and not (both_own and d.time < root.time)  # type: ignore[operator]
        out.append((d, "cascade", root if attributed else None))
    out += [(d, "notice", None) for d in notices]
    return out, root


def build_incidents(
    drafts: list[Draft], diagnoser: Diagnoser, facts: Signals, job_label: str, top: int = 3
) -> list[Incident]:
    ordered, _ = assign_roles(drafts)
    ids = {id(d): f"{job_label}I{i}" for i, (d, _, _) in enumerate(ordered, 1)}
    incidents: list[Incident] = []
    for d, role, cause in ordered:
        g = d.group
        # A notice is a line some symptom regex liked: the rules judge it alone. Loading the embedding
        # model (seconds) is for errors the rules cannot place.
        result = diagnoser.diagnose(g.text, top=top, facts=facts, semantic=role != "notice")
        for m in result.matches:
            for ev in m.evidence:
                if ev.line_no is not None and ev.kind != "metric":
                    ev.line_no = g.start_line + ev.line_no - 1
        if role == "notice" and not result.matches:
            continue  # a line a symptom regex liked, which the engine does not hold to be anything
        excerpt, excerpt_start = _excerpt(g)
        first = d.locations[0] if d.locations else Location(file=d.file, line=g.start_line)
        incidents.append(
            Incident(
                id=ids[id(d)],
                role=role,
                kind=g.kind,  # type: ignore[arg-type]
                title=g.title,
                signature=g.signature.split("|", 1)[-1],
                caused_by=ids[id(cause)] if cause is not None else None,
                count=d.count,
                ranks=sorted(d.ranks),
                files=dict(d.files),
                first=first,
                locations=d.locations,
                time=d.time_text,
                excerpt=excerpt,
                excerpt_start=excerpt_start,
                diagnosis=result,
            )
        )
    return incidents


def _excerpt(g: BlockGroup) -> tuple[list[str], int]:
    """(lines, file line of the first) of the first occurrence: the whole block, or for a long one a window
    of consecutive lines ending a little after its key line (the exception), so that line is always shown."""
    lines = g.text.splitlines()
    if len(lines) <= EXCERPT_LINES:
        return lines, g.start_line
    key = (g.lines[0] - g.start_line) if g.lines else len(lines) - 1
    end = min(len(lines), max(key + 1 + EXCERPT_LINES // 4, EXCERPT_LINES))
    start = max(0, end - EXCERPT_LINES)
    return lines[start:end], g.start_line + start

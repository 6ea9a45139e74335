"""What part of an input is worth embedding: the distilled error of a log, or a question as it is.

Used by the engine (the semantic query) and by the issue archive (what an issue is embedded by).
"""

from __future__ import annotations

from kb.loglines import Line
from kb.signals import Signals


def distill(lines: list[Line], signals: Signals, max_chars: int = 1200) -> str:
    """The part of an input worth embedding: exceptions, Hydra errors, verl frames, error-looking lines.

    A plain question (no exception, few lines) is returned as it is.
    """
    if is_question(lines, signals):
        return " ".join(ln.text.strip() for ln in lines)[:max_chars]
    parts: list[str] = []
    for exc in signals.exceptions[-3:]:
        parts.append(f"{exc.type}: {exc.message}")
    for h in signals.hydra[:3]:
        parts.append(lines_by_no(lines, h.line_no))
    verl_frames = [f for f in signals.frames if f.is_verl][-3:]
    parts += [f"{f.path.split('/verl/')[-1]} {f.function}" for f in verl_frames]
    if len(" ".join(parts)) < 200:
        keywords = ("error", "Error", "failed", "Failed", "Exception", "refused", "timeout", "killed", "WARN")
        parts += [ln.text.strip() for ln in lines if any(k in ln.text for k in keywords)][-5:]
    text = " ".join(dict.fromkeys(p for p in parts if p))
    if not text:
        text = " ".join(ln.text.strip() for ln in lines[-10:])
    return text[:max_chars]


def is_question(lines: list[Line], signals: Signals) -> bool:
    """Words rather than output: no exception, no Hydra error, no metrics, a few lines."""
    return not (signals.exceptions or signals.hydra or signals.metrics or signals.frames) and len(lines) <= 6


def lines_by_no(lines: list[Line], no: int) -> str:
    idx = no - (lines[0].no if lines else 1)
    return lines[idx].text.strip() if 0 <= idx < len(lines) else ""

"""Settings of the TUI: one documented field each."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field


class TuiSettings(BaseModel):
    """What ``verl-doctor tui`` was started with."""

    corpus: Path | None = None
    """Corpus directory (default: the bundled corpus, or $VERL_DOCTOR_CORPUS)."""

    semantic: bool = True
    """Load the embedding model in the background; off means rules (and title/word search) only."""

    top: int = Field(default=5, ge=1, le=20)
    """How many diagnoses the results list shows."""

    theme: Literal["dark", "light"] = "dark"
    """The theme the app opens with; the theme binding toggles between the two."""

    dark_theme: str = "textual-dark"
    """The Textual theme used for ``dark``."""

    light_theme: str = "textual-light"
    """The Textual theme used for ``light``."""

    cursor_blink: bool = True
    """Blink the cursor in the paste area and the input boxes."""

    search_delay: float = Field(default=0.15, ge=0.0)
    """Seconds the FAQ search waits after the last key press before it searches."""

    scan_workers: int | None = Field(default=None, ge=1)
    """Processes the job-directory scan may use (default: the scanner's own choice)."""

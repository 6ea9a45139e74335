"""Keeping third-party chatter off stderr: transformers' "Loading weights" bar and bm25s's DEBUG lines
(bm25s sets its logger to DEBUG, and the MCP SDK puts a rich handler on the root logger) reached the
terminal on every semantic run, ``serve`` and ``mcp``. Warnings and errors still get through."""

from __future__ import annotations

import logging
import os


def quiet_transformers() -> None:
    """Before the embedding model loads: no progress bars, transformers' own messages at error level only."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:
        return
    transformers_logging.disable_progress_bar()
    transformers_logging.set_verbosity_error()


def quiet_bm25s() -> None:
    """After ``import bm25s``: its logger back to WARNING."""
    logging.getLogger("bm25s").setLevel(logging.WARNING)

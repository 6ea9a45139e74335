"""The searchable FAQ web pages, server-rendered with a little JS; attached to the app by ``server.app``."""

from __future__ import annotations

from fastapi import FastAPI


def attach(app: FastAPI) -> None:
    """Mount the pages (/, /search, /diagnose, /entries/{id}, /areas/{area}) and /static on ``app``."""
    from server.web.pages import attach_pages

    attach_pages(app)

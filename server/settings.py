"""Server settings: one documented field each."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    """Address to bind. Anything but loopback needs a token (or --insecure)."""

    port: int = Field(default=8000, ge=0, le=65535)
    """TCP port; 0 picks a free one."""

    scan_roots: list[Path] = Field(default_factory=list)
    """Directories POST /v1/scan may read. Paths outside them (after resolving symlinks) are refused."""

    token: str | None = None
    """Bearer token every /v1 request must carry when set."""

    insecure: bool = False
    """Allow binding a non-loopback address without a token."""

    max_body_bytes: int = 5 * 1024 * 1024
    """Largest JSON request body; bigger ones get 413."""

    max_upload_bytes: int = 200 * 1024 * 1024
    """Largest .tar.gz job archive POST /v1/scan accepts."""

    max_extracted_bytes: int = 2 * 1024 * 1024 * 1024
    """Largest total size an uploaded archive may unpack to."""

    corpus: Path | None = None
    """Corpus directory (default: the bundled one)."""

    semantic: bool = True
    """Load the embedding model for semantic search (off: rules and BM25-free lexical only)."""

"""Server settings: one documented field each."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from pydantic import BaseModel, Field, field_validator

#: Host names a loopback server answers to (DNS rebinding protection), besides ``allowed_hosts``.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "ip6-localhost")
#: Shortest --token accepted: a guessable token on a public address is no protection.
MIN_TOKEN_CHARS = 16


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (no --token needed to serve on it)."""
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_problem(token: str | None) -> str | None:
    """Why ``token`` cannot protect a server (blank, too short, spaces around it), or None when it can."""
    if token is None:
        return None
    if not token.strip():
        return '--token is blank; give a random secret, e.g. --token "$(openssl rand -hex 16)"'
    if token != token.strip():
        return "--token has spaces around it; give the secret alone"
    if len(token) < MIN_TOKEN_CHARS:
        return f"--token is {len(token)} characters; use at least {MIN_TOKEN_CHARS}, e.g. $(openssl rand -hex 16)"
    return None


def _env_hosts() -> list[str]:
    return [h.strip() for h in os.environ.get("VERL_DOCTOR_ALLOWED_HOSTS", "").split(",") if h.strip()]


class ServerSettings(BaseModel):
    host: str = "127.0.0.1"
    """Address to bind. Anything but loopback needs a token (or --insecure)."""

    port: int = Field(default=8000, ge=0, le=65535)
    """TCP port; 0 picks a free one."""

    scan_roots: list[Path] = Field(default_factory=list)
    """Directories POST /v1/scan may read. Paths outside them (after resolving symlinks) are refused."""

    token: str | None = None
    """Bearer token every /v1 request must carry when set."""

    allowed_hosts: list[str] = Field(default_factory=_env_hosts)
    """Host header names a loopback server also answers to (e.g. a reverse proxy's name); others get 421.
    Default: $VERL_DOCTOR_ALLOWED_HOSTS, comma-separated."""

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

    @field_validator("token")
    @classmethod
    def _not_blank(cls, token: str | None) -> str | None:
        if token is not None and not token.strip():
            raise ValueError("the token is blank")
        return token

"""``verl-doctor serve``: the HTTP API, the FAQ web pages and MCP over streamable HTTP, with uvicorn."""

from __future__ import annotations

from pathlib import Path

import click

from kb.cli import common
from kb.cli.common import corpus_option, fail


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one).")
@click.option(
    "--scan-root",
    "scan_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="A directory POST /v1/scan may read (repeatable).",
)
@click.option(
    "--token",
    envvar="VERL_DOCTOR_TOKEN",
    help="Bearer token required on /v1, /mcp and the pages (or $VERL_DOCTOR_TOKEN).",
)
@click.option("--insecure", is_flag=True, help="Allow a non-loopback address without --token.")
@click.option(
    "--max-body", default=5 * 1024 * 1024, show_default=True, type=click.IntRange(1024), help="Body size cap in bytes."
)
@corpus_option
@click.option("--no-semantic", is_flag=True, help="Rules and lexical search only: no embedding model.")
def serve_cmd(
    host: str,
    port: int,
    scan_roots: tuple[str, ...],
    token: str | None,
    insecure: bool,
    max_body: int,
    corpus_path: str | None,
    no_semantic: bool,
) -> None:
    """Run the HTTP API, the FAQ web pages and MCP (streamable HTTP at /mcp) with uvicorn.

    \b
    verl-doctor serve                          # http://127.0.0.1:8000/  (docs at /docs)
    verl-doctor serve --scan-root /shared/jobs --port 9000
    verl-doctor serve --host 0.0.0.0 --token "$(openssl rand -hex 16)"
    """
    from server.settings import is_loopback, token_problem

    if problem := token_problem(token):
        fail(problem)
    if not is_loopback(host) and not token and not insecure:
        fail(f"refusing to serve on {host} without --token (bearer auth); pass --insecure to do it anyway")
    roots = []
    for root in scan_roots:
        path = Path(root)
        if not path.is_dir():
            fail(f"--scan-root {root} is not a directory")
        roots.append(path.resolve())
    import uvicorn

    from server.app import create_app
    from server.settings import ServerSettings

    settings = ServerSettings(
        host=host,
        port=port,
        scan_roots=roots,
        token=token,
        insecure=insecure,
        max_body_bytes=max_body,
        corpus=Path(corpus_path) if corpus_path else None,
        semantic=not no_semantic,
    )
    # The diagnoser comes from the composition root, with the CLI's handling of a corpus that cannot be read.
    app = create_app(settings, common.build_diagnoser(corpus_path, semantic=not no_semantic))
    uvicorn.run(app, host=host, port=port, log_level="info")

"""The ``verl-doctor`` command line: the click group, one module per command (or group of commands).

This is the one part of ``kb`` that wires the other packages in; heavy imports (the embedding model,
the scanner, the server, the TUI) happen inside the commands that need them, so importing the package
imports only click and the command modules. Shared pieces (``fail()``, the exit codes, ``--corpus``,
the diagnoser) are in :mod:`kb.cli.common`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from kb import __version__
from kb.cli.ask import ask_cmd
from kb.cli.common import EXIT_INTERNAL, EXIT_INTERRUPTED, fail
from kb.cli.corpus import corpus_group
from kb.cli.eval import eval_cmd
from kb.cli.index import index_cmd
from kb.cli.issues import issues_group
from kb.cli.match import match_cmd
from kb.cli.mcp import mcp_cmd
from kb.cli.overrides import check_overrides_cmd
from kb.cli.preflight import preflight_cmd
from kb.cli.scan import scan_cmd
from kb.cli.serve import serve_cmd
from kb.cli.tui import tui_cmd

__all__ = ["main"]


class _Group(click.Group):
    """Turns unexpected exceptions into one clear line; VERL_DOCTOR_DEBUG=1 shows the traceback."""

    def main(self, args: Any = None, *rest: Any, **kwargs: Any) -> Any:
        # No arguments given: the command line of this very process (the console script, `python -m kb`),
        # never click's CliRunner, which always passes them. Only then may a command skip the teardown.
        if args is None:
            from kb.cli import common

            common.own_process = True
        return super().main(args, *rest, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit):
            raise
        except KeyboardInterrupt:
            fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            sys.stderr.close()
            sys.exit(0)
        except Exception as exc:
            if os.environ.get("VERL_DOCTOR_DEBUG"):
                raise
            fail(
                f"internal error: {type(exc).__name__}: {exc} (set VERL_DOCTOR_DEBUG=1 for the traceback)",
                EXIT_INTERNAL,
            )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="verl-doctor")
def main() -> None:
    """Diagnose verl failures: the known problem, why it happens, and the exact fix for your verl version.

    \b
    verl-doctor corpus validate            check every entry of the knowledge base
    verl-doctor check-overrides -- k=v ... check Hydra overrides before you submit a job
    verl-doctor preflight -- python -m ... would verl start with this launch? (and the fix)
    verl-doctor match error.log            diagnose a traceback, a log or a question
    verl-doctor scan JOB_DIR               every log of a job: incidents, cascades, metric drift
    verl-doctor ask "..."                  answers in words, citing the entries
    verl-doctor serve | tui | mcp          HTTP API + FAQ web page, terminal app, MCP server
    """


# The order the commands were registered in before the package existed (help lists them sorted anyway).
for _command in (
    corpus_group,
    check_overrides_cmd,
    match_cmd,
    index_cmd,
    eval_cmd,
    serve_cmd,
    scan_cmd,
    ask_cmd,
    issues_group,
    mcp_cmd,
    tui_cmd,
    preflight_cmd,
):
    main.add_command(_command)

"""The `concur` command line."""

from __future__ import annotations

import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

import typer
from rich.markup import escape

from concur import __version__
from concur.cli import data_cmds, store_cmds, study_cmds
from concur.cli.common import (
    DEBUG_ENV,
    Settings,
    debug_enabled,
    err,
    fit_output_width,
    is_environment_error,
    log_to_terminal,
    os_error_message,
    set_debug,
    unexpected_error_message,
    write_crash_log,
)
from concur.cli.lazy import LazyGroup
from concur.errors import ConcurError


class Commands(LazyGroup):
    """The top-level commands, each imported only when it runs, in the order `concur --help` lists them."""

    lazy = {
        "score": "concur.cli.score_cmd:score",
        "benches": "concur.cli.registry_cmds:benches",
        "approaches": "concur.cli.registry_cmds:approaches",
        "run": "concur.cli.run_cmds:run",
        "status": "concur.cli.status_cmd:status",
        "matrix": "concur.cli.analysis_cmds:matrix",
        "compare": "concur.cli.analysis_cmds:compare",
        "results": "concur.cli.analysis_cmds:results_table",
        "figures": "concur.cli.figures_cmd:figures",
        "report": "concur.cli.report_cmd:report",
    }


app = typer.Typer(
    name="concur",
    cls=Commands,
    help="Concurrence studies of extractive question answering: do modeling improvements hold across benchmarks?",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"concur {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    registry: list[Path] = typer.Option(
        [], "--registry", help="Extra spec directory (with benchmarks/ and/or approaches/); repeatable; also $CONCUR_REGISTRY."
    ),
    runs_dir: Path | None = typer.Option(None, "--runs-dir", help="Output directory (default ./runs; also $CONCUR_RUNS)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", envvar=DEBUG_ENV, help="Print an unexpected error's traceback instead of logging it."),
) -> None:
    set_debug(debug)
    fit_output_width()
    log_to_terminal()
    ctx.obj = Settings(registry_dirs=list(registry), runs_dir=runs_dir)


app.add_typer(data_cmds.app, name="data")
app.add_typer(study_cmds.app, name="study")
app.add_typer(store_cmds.app, name="store")


def main() -> None:
    """Entry point: no input ends in a raw traceback.

    A user error (ConcurError, or an OS error such as a full disk or a denied path) prints one
    line and exits with status 2; anything else is a bug: one line naming a log file that holds
    its traceback, status 1 (--debug or $CONCUR_DEBUG=1 print the traceback instead).
    """
    try:
        app()
    except ConcurError as exc:
        _fail(exc, f"[bold red]error:[/] {escape(str(exc))}", 2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)
    except BrokenPipeError:  # the reader of our output (e.g. `| head`) has gone: nothing left to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that flushing stdout at exit does not fail again
        sys.exit(1)
    except OSError as exc:
        if not is_environment_error(exc):
            _unexpected(exc)
        _fail(exc, f"[bold red]error:[/] {escape(os_error_message(exc))}", 2)
    except Exception as exc:  # the last resort: a bug is told in one line, its traceback logged
        _unexpected(exc)


def _fail(error: BaseException, line: str, status: int) -> NoReturn:
    """A user error: its one line (after its traceback with --debug), then `status`."""
    if debug_enabled():
        traceback.print_exception(error, file=sys.stderr)
    err.print(line)
    sys.exit(status)


def _unexpected(error: BaseException) -> NoReturn:
    """A bug: its traceback to a log file (or to stderr with --debug), one line on stderr, status 1."""
    log = None if debug_enabled() else write_crash_log(error)
    if log is None:
        traceback.print_exception(error, file=sys.stderr)
    err.print(escape(unexpected_error_message(error, log)))
    sys.exit(1)

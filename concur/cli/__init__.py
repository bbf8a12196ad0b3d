"""The `concur` command line."""

from __future__ import annotations

import os
import shlex
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

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
    log_to_terminal,
    set_debug,
    unexpected_error_message,
    write_crash_log,
)
from concur.cli.lazy import LazyGroup
from concur.errors import ConcurError
from concur.oserrors import is_environment_error, os_error_message
from concur.stopping import Stopped, terminate_as_stop

if TYPE_CHECKING:
    from typer._click import Context  # the context typer's commands get (typer vendors click: not `click.Context`)


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
        "ranks": "concur.cli.analysis_cmds:ranks",
        "figures": "concur.cli.figures_cmd:figures",
        "report": "concur.cli.report_cmd:report",
    }

    def parse_args(self, ctx: Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args))

    def invoke(self, ctx: Context) -> Any:
        """Run the command; a stop (Ctrl-C, SIGTERM) leaves it as `CommandStopped`, which typer does not turn into a bare exit."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            raise CommandStopped(interrupt if isinstance(interrupt, Stopped) else Stopped()) from None


class CommandStopped(Exception):  # noqa: N818 - it carries a stop, as Stopped is one
    """A command stopped by a signal, on its way to `main`, which prints how far it got."""

    def __init__(self, stop: Stopped) -> None:
        super().__init__(str(stop))
        self.stop = stop


GLOBAL_VALUE_OPTIONS = ("--registry", "--runs-dir")  # the root's options that take a value
GLOBAL_FLAGS = ("--debug",)  # and those that do not (--version and --help act where they stand)


def hoist_global_options(args: list[str]) -> list[str]:
    """The root's options given after the subcommand moved before it: `concur run ... --runs-dir R` is
    `concur --runs-dir R run ...`, as a user who puts every option last expects. Nothing after `--` moves."""
    start = 0
    while start < len(args) and args[start].startswith("-"):  # the root's own options come first
        start += 2 if args[start] in GLOBAL_VALUE_OPTIONS else 1
    front, rest, index = args[:start], [], start
    while index < len(args):
        arg = args[index]
        if arg == "--":
            rest += args[index:]
            break
        if arg in GLOBAL_VALUE_OPTIONS and index + 1 < len(args):
            front += args[index : index + 2]
            index += 2
            continue
        joined = "=" in arg and arg.split("=", 1)[0] in GLOBAL_VALUE_OPTIONS  # --runs-dir=R
        (front if arg in GLOBAL_FLAGS or joined else rest).append(arg)  # one without its value stays, for the parser to name
        index += 1
    return front + rest


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
    registry: list[str] = typer.Option(
        [], "--registry", help="Extra spec directory (with benchmarks/ and/or approaches/); repeatable; also $CONCUR_REGISTRY."
    ),
    runs_dir: str | None = typer.Option(None, "--runs-dir", help="Output directory (default ./runs; also $CONCUR_RUNS)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
    debug: bool = typer.Option(False, "--debug", envvar=DEBUG_ENV, help="Print an unexpected error's traceback instead of logging it."),
) -> None:
    set_debug(debug)
    fit_output_width()
    log_to_terminal()
    if runs_dir is not None and not runs_dir.strip():
        raise ConcurError("--runs-dir is empty; give a directory, e.g. --runs-dir runs (leave the option out for ./runs)")
    if any(not directory.strip() for directory in registry):
        raise ConcurError("--registry is empty; give a spec directory (holding benchmarks/ and/or approaches/)")
    ctx.obj = Settings(registry_dirs=[Path(directory) for directory in registry], runs_dir=Path(runs_dir) if runs_dir is not None else None)


app.add_typer(data_cmds.app, name="data")
app.add_typer(study_cmds.app, name="study")
app.add_typer(store_cmds.app, name="store")


def main() -> None:
    """Entry point: no input ends in a raw traceback.

    A user error (ConcurError, or an OS error such as a full disk or a denied path) prints one
    line and exits with status 2 (3: a grid left jobs without a result to other owners); a stop
    by Ctrl-C or SIGTERM says how far a grid got and exits 130 or 143; anything else is a bug:
    one line naming a log file that holds its traceback, status 1 (--debug or $CONCUR_DEBUG=1
    print the traceback instead).
    """
    try:
        with terminate_as_stop():
            app()
    except ConcurError as exc:
        _fail(exc, f"[bold red]error:[/] {escape(str(exc))}", getattr(exc, "exit_status", 2))
    except CommandStopped as stopped:
        err.print(stop_line(stopped.stop), markup=False)
        sys.exit(stopped.stop.exit_status)
    except BrokenPipeError:  # the reader of our output (e.g. `| head`) has gone: nothing left to tell
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that flushing stdout at exit does not fail again
        sys.exit(1)
    except OSError as exc:
        if not is_environment_error(exc):
            _unexpected(exc)
        _fail(exc, f"[bold red]error:[/] {escape(os_error_message(exc))}", 2)
    except Exception as exc:  # the last resort: a bug is told in one line, its traceback logged
        _unexpected(exc)


def stop_line(stop: Stopped) -> str:
    """The last line of a stopped command: the signal and, for a grid, how far it got and the command that continues it."""
    if stop.summary is None:
        return f"stopped by {stop.signum.name}"
    command = shlex.join(["concur", *sys.argv[1:]])
    return f"stopped by {stop.signum.name}: {stop.summary}; `{command}` continues it (it runs only the jobs without a result)"


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

"""What every command shares: the global options, consoles and output formats, and how failures are told."""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
import tempfile
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console, ConsoleRenderable, Group
from rich.highlighter import NullHighlighter
from rich.logging import RichHandler
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.traceback import Traceback

from concur import __version__
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, closest
from concur.progress import STDERR
from concur.registry import Registry, default_registry
from concur.runner.execution.worker import PACKAGE_LOGGER
from concur.workspace import RUNS_ENV, Workspace, data_roots

PIPED_WIDTH = 240  # tables written to a file or pipe are not folded to 80 columns
UNBOUNDED_WIDTH = 1_000_000  # room to measure a table's natural width
ERROR_WIDTH = 80  # characters of a job's error shown in a table cell

out = Console(highlight=False)
err = STDERR

DEBUG_ENV = "CONCUR_DEBUG"  # 1: an unexpected error prints its traceback (as --debug)
STATE_ENV = "XDG_STATE_HOME"  # crash logs go to $XDG_STATE_HOME/concur/logs (default ~/.local/state)
DEFAULT_STATE_DIR = Path("~/.local/state")
LOG_SUBDIR = Path("concur") / "logs"
FALLBACK_LOG_DIR = "concur-logs"  # under the system temp dir, when the state dir is not writable
TERMINAL_HANDLER = "concur-terminal"  # the name of the handler `log_to_terminal` adds, so it is added once
_debug_flag = False  # set by the root command's --debug; read by `concur.cli.main` after the command failed


class Format(StrEnum):
    table = "table"
    json = "json"


def fit_output_width() -> None:
    """Set stdout's width for this command: $COLUMNS when given, else the terminal's, else `PIPED_WIDTH`.

    Read per command rather than when the module is imported, so that a command run in-process
    (tests, notebooks) follows the environment and stdout of its own call.
    """
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        out.width = int(columns)
    else:
        out.width = None if out.is_terminal else PIPED_WIDTH  # type: ignore[assignment]  # None: rich measures the terminal


@dataclass
class Settings:
    """The root command's options, handed to every subcommand through typer's context."""

    registry_dirs: list[Path] = field(default_factory=list)
    runs_dir: Path | None = None

    def registry(self) -> Registry:
        return default_registry(self.registry_dirs)

    def workspace(self) -> Workspace:
        """The runs dir (which a run creates); a file in its place is refused, naming it."""
        workspace = Workspace.resolve(self.runs_dir)
        if workspace.root.exists() and not workspace.root.is_dir():
            raise ConcurError(f"{workspace.root} is a file, not a runs directory; give a directory with --runs-dir (or ${RUNS_ENV})")
        return workspace

    def existing_workspace(self) -> Workspace:
        """The runs dir of a command that reads what ran: one that does not exist is a mistake (a typo, the wrong
        machine), not an empty study, so it is refused with the closest runs dir beside it."""
        workspace = self.workspace()
        if not workspace.root.is_dir():
            raise ConcurError(missing_runs_dir(workspace.root, given=self.runs_dir is not None))
        return workspace

    def locator(self, source_dirs: list[Path] | None) -> SourceLocator:
        return SourceLocator(tuple(data_roots(tuple(source_dirs or ()))), self.workspace().cache_dir)


def missing_runs_dir(root: Path, *, given: bool) -> str:
    """Why a runs dir that does not exist cannot be read, where it came from, and the likeliest one meant."""
    source = "--runs-dir" if given else (f"${RUNS_ENV}" if os.environ.get(RUNS_ENV) else "the default, ./runs")
    beside = [entry.name for entry in root.parent.iterdir() if is_runs_dir(entry)] if root.parent.is_dir() else []
    hint = closest(root.name, beside)
    meant = f"; did you mean {root.parent / hint}?" if hint else ""
    return f"no runs directory at {root} (from {source}): nothing has run there{meant} (`concur run` and `concur study run` create one)"


def is_runs_dir(path: Path) -> bool:
    """Whether `path` looks like a runs dir: a directory holding the index or job directories."""
    workspace = Workspace(path)
    return path.is_dir() and (workspace.db_path.is_file() or workspace.jobs_dir.is_dir())


def settings(ctx: typer.Context) -> Settings:
    return ctx.ensure_object(Settings)


def set_debug(enabled: bool) -> None:
    """Remember --debug for the error handler, which runs after the command (and its context) ended."""
    global _debug_flag
    _debug_flag = enabled


def debug_enabled() -> bool:
    """--debug or $CONCUR_DEBUG (anything but empty, 0, false, no)."""
    return _debug_flag or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


class LineHandler(RichHandler):
    """A RichHandler that prints each record as one line of text, as every other line on stderr is printed,
    instead of a table of time, level and message folded to the terminal's (or a log's 80) columns."""

    def render(self, *, record: logging.LogRecord, traceback: Traceback | None, message_renderable: ConsoleRenderable) -> ConsoleRenderable:
        return message_renderable if traceback is None else Group(message_renderable, traceback)


def log_to_terminal() -> None:
    """Show what the library logs (INFO and up) on stderr, through the console the progress bars use, so a
    line logged while a bar is live appears above it."""
    package = logging.getLogger(PACKAGE_LOGGER)
    if any(handler.name == TERMINAL_HANDLER for handler in package.handlers):
        return
    handler = LineHandler(console=err, markup=False, highlighter=NullHighlighter(), keywords=[])
    handler.name = TERMINAL_HANDLER
    package.addHandler(handler)
    package.setLevel(logging.INFO)


def echo(line: str) -> None:
    """One line of what a running grid reports (starts, ends, retries), on stderr, taken as text."""
    err.print(line, markup=False)


def warn(line: str) -> None:
    """One warning line on stderr, the line taken as text (a path may hold brackets rich would read as markup)."""
    err.print(f"[yellow]warning:[/] {escape(line)}")


def unexpected_error_message(error: BaseException, log: Path | None) -> str:
    """The one line an unexpected error (a bug) gets: its type, message, and where its traceback went (`log`, else printed above)."""
    lines = str(error).strip().splitlines()
    where = f"the traceback is in {log} (rerun with --debug to print it)" if log else "the traceback is above"
    what = type(error).__name__ + (f": {lines[0]}" if lines else "")
    return f"concur: unexpected error: {what}; {where}"


def write_crash_log(error: BaseException) -> Path | None:
    """Write the command line and traceback to a new log file; None when no log directory is writable."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    text = f"concur {__version__}: {shlex.join(sys.argv)}\n{''.join(traceback.format_exception(error))}"
    state = Path(os.environ.get(STATE_ENV) or DEFAULT_STATE_DIR.expanduser())
    for directory in (state / LOG_SUBDIR, Path(tempfile.gettempdir()) / FALLBACK_LOG_DIR):
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"crash-{stamp}-{os.getpid()}.log"
            path.write_text(text, encoding="utf-8")
            return path
        except OSError:
            continue
    return None


def print_json(payload: Any) -> None:
    """JSON on stdout, unstyled, so it can be piped."""
    print(json.dumps(payload, indent=2, sort_keys=False, ensure_ascii=False))


def print_table(title: str | None, columns: list[str], rows: list[list[Any]]) -> None:
    out.print(make_table(title, columns, rows))


def make_table(title: str | None, columns: list[str], rows: list[list[Any]]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if value is None else str(value) for value in row))
    return table


def number(value: float | None, digits: int = 2) -> str:
    """A score or a duration for a table cell; empty when there is none."""
    return "" if value is None else f"{value:.{digits}f}"


def fits(table: Table, console: Console) -> bool:
    """Whether `table` prints on `console` without folding any cell."""
    natural = Measurement.get(console, console.options.update_width(UNBOUNDED_WIDTH), table).maximum
    return natural <= console.width


DEFAULT_RECIPES = Path("analysis")  # the figure recipes `concur figures` and `concur report` use unless given others

SOURCE_DIR_OPTION = typer.Option(
    None,
    "--source-dir",
    help="Directory holding local copies of source files (as DIR/<source path>[.gz]); also $CONCUR_DATA_ROOT.",
)

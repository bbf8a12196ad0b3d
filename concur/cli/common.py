"""What every command shares: the global options, consoles and output formats."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from concur.data.sources import SourceLocator
from concur.progress import STDERR
from concur.registry import Registry, default_registry
from concur.workspace import Workspace, data_roots

PIPED_WIDTH = 240  # tables written to a file or pipe are not folded to 80 columns
UNBOUNDED_WIDTH = 1_000_000  # room to measure a table's natural width

out = Console(highlight=False)
if not out.is_terminal and "COLUMNS" not in os.environ:  # an explicit $COLUMNS still sets the width
    out = Console(highlight=False, width=PIPED_WIDTH)
err = STDERR


class Format(StrEnum):
    table = "table"
    json = "json"


@dataclass
class Settings:
    """The root command's options, handed to every subcommand through typer's context."""

    registry_dirs: list[Path] = field(default_factory=list)
    runs_dir: Path | None = None

    def registry(self) -> Registry:
        return default_registry(self.registry_dirs)

    def workspace(self) -> Workspace:
        return Workspace.resolve(self.runs_dir)

    def locator(self, source_dirs: list[Path] | None) -> SourceLocator:
        return SourceLocator(tuple(data_roots(tuple(source_dirs or ()))), self.workspace().cache_dir)


def settings(ctx: typer.Context) -> Settings:
    return ctx.ensure_object(Settings)


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


def fits(table: Table, console: Console) -> bool:
    """Whether `table` prints on `console` without folding any cell."""
    natural = Measurement.get(console, console.options.update_width(UNBOUNDED_WIDTH), table).maximum
    return natural <= console.width


SOURCE_DIR_OPTION = typer.Option(
    None,
    "--source-dir",
    help="Directory holding local copies of source files (as DIR/<source path>[.gz]); also $CONCUR_DATA_ROOT.",
)

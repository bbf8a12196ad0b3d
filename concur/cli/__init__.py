"""The `concur` command line."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.markup import escape

from concur import __version__
from concur.cli import analysis_cmds, data_cmds, figures_cmd, registry_cmds, report_cmd, run_cmds, score_cmd, study_cmds
from concur.cli.common import Settings, err
from concur.errors import ConcurError

app = typer.Typer(
    name="concur",
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
) -> None:
    ctx.obj = Settings(registry_dirs=list(registry), runs_dir=runs_dir)


app.command("score")(score_cmd.score)
app.command("benches")(registry_cmds.benches)
app.command("approaches")(registry_cmds.approaches)
app.add_typer(data_cmds.app, name="data")
app.command("run")(run_cmds.run)
app.command("status")(run_cmds.status)
app.add_typer(study_cmds.app, name="study")
app.command("matrix")(analysis_cmds.matrix)
app.command("compare")(analysis_cmds.compare)
app.command("results")(analysis_cmds.results_table)
app.command("figures")(figures_cmd.figures)
app.command("report")(report_cmd.report)


def main() -> None:
    """Entry point: user errors print one clear line and exit with status 2."""
    try:
        app()
    except ConcurError as exc:
        err.print(f"[bold red]error:[/] {escape(str(exc))}")
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("interrupted")
        sys.exit(130)

"""`concur store check|rebuild`: is the runs dir whole, and make it whole.

Results are files first (docs/reliability.md), so the index can always be rebuilt from the job
directories; `check` says what does not add up, one line per problem, and `rebuild` moves
damaged files aside into `runs/damaged/<time>/` (it never deletes one) and makes the index
hold exactly the readable results.
"""

from __future__ import annotations

import typer
from rich.markup import escape

from concur.cli.common import Format, err, out, print_json, settings
from concur.runner.records.jobdir import RESULT_FILE
from concur.runner.records.store import Health, inspect_runs, rebuild_index

app = typer.Typer(help="Check the runs dir's results and index, and rebuild the index from the job directories.", no_args_is_help=True)
KEYS_LISTED = 20  # keys named per kind of problem; the rest are counted
REBUILD_HINT = "`concur store rebuild` (or any `concur status`) indexes them"
FAILURE_EXIT = 1


@app.command("check")
def check(
    ctx: typer.Context,
    output: Format = typer.Option(Format.table, "--format", help="table or json"),
) -> None:
    """Read every job directory and the index: count finished, failed, running and interrupted jobs, and list
    damaged files, results not indexed and index rows without a result; exit 1 when anything is wrong."""
    workspace = settings(ctx).existing_workspace()
    health = inspect_runs(workspace.db_path, workspace.jobs_dir)
    lines = problem_lines(health)
    if output is Format.json:
        print_json({"runs_dir": str(workspace.root), "counts": health.counts(), "problems": lines})
    else:
        out.print(f"{workspace.root}: " + ", ".join(f"{count:,} {name}" for name, count in health.counts().items()), markup=False)
        for line in lines:
            out.print(f"[red]problem:[/] {escape(line)}")
        if health.clean:
            out.print("[green]clean:[/] every result is readable and indexed")
    if not health.clean:
        raise typer.Exit(FAILURE_EXIT)


@app.command("rebuild")
def rebuild(ctx: typer.Context) -> None:
    """Move damaged result.json, job.json and index files aside into runs/damaged/<time>/ (never deleting one)
    and rebuild the index from the job directories; a job whose result was moved aside runs again."""
    workspace = settings(ctx).existing_workspace()
    rebuilt = rebuild_index(workspace.db_path, workspace.jobs_dir, workspace.damaged_aside())
    for source, destination in rebuilt.moved:
        err.print(f"moved aside: {source} -> {destination}", markup=False)
    how = "built anew (the damaged one is kept aside)" if rebuilt.index_replaced else "rebuilt"
    out.print(f"{workspace.db_path}: {how} with {rebuilt.rows:,} results", markup=False)
    rerun = sum(source.name == RESULT_FILE for source, _ in rebuilt.moved)
    if rerun:
        out.print(f"{rerun:,} job(s) lost their damaged result: the next `concur run` or `concur study run` runs them again", markup=False)


def problem_lines(health: Health) -> list[str]:
    """One line per damaged file; results not indexed and index rows without a result, by kind."""
    lines = [str(error) for error in ([health.index_problem] if health.index_problem else []) + health.damaged]
    if health.unindexed:
        lines.append(f"{len(health.unindexed):,} results are not in the index: {_keys(health.unindexed)}; {REBUILD_HINT}")
    if health.orphans:
        lines.append(
            f"{len(health.orphans):,} index rows have no result.json: {_keys(health.orphans)}; "
            "`concur store rebuild` (or any `concur status`) drops them"
        )
    return lines


def _keys(keys: list[str]) -> str:
    shown = ", ".join(keys[:KEYS_LISTED])
    return shown + (f" and {len(keys) - KEYS_LISTED:,} more" if len(keys) > KEYS_LISTED else "")

"""`concur figures`: regenerate the paper's figures and tables from recipes in one command."""

from __future__ import annotations

from pathlib import Path

import typer

from concur.analysis.results import NAMED_SOURCES, Results
from concur.cli.analysis_cmds import load
from concur.cli.common import SOURCE_DIR_OPTION, err, print_table, settings
from concur.errors import ConcurError
from concur.progress import task_progress
from concur.recipes.run import run_recipe
from concur.recipes.spec import load_recipe, recipe_paths

DEFAULT_RECIPES = Path("analysis")


def figures(
    ctx: typer.Context,
    targets: list[Path] = typer.Argument(None, help="Recipe files or directories of recipes (default: ./analysis)."),
    results: list[str] = typer.Option(
        ["store"],
        "--results",
        "-r",
        help=f"Results to draw from: {', '.join(NAMED_SOURCES)} or a tidy CSV; repeat or join with + to combine. "
        "A recipe that names its own results (e.g. a leaderboard) uses those.",
    ),
    out_dir: Path | None = typer.Option(None, "--out-dir", "-o", help="Where figures and tables go (default: RUNS/figures)."),
    source_dir: list[Path] | None = SOURCE_DIR_OPTION,
) -> None:
    """Draw every recipe's figure or table (PDF + PNG; CSV, Markdown and LaTeX for tables)."""
    state = settings(ctx)
    recipes = [
        load_recipe(path) for target in (targets or [DEFAULT_RECIPES]) for path in recipe_paths(target)
    ]  # all parsed before any work
    out_dir = out_dir or state.workspace().root / "figures"
    loaded: dict[tuple[str, ...], Results] = {}
    rows, drawn = [], 0
    with task_progress() as progress:
        task = progress.add_task("recipes", total=len(recipes), status="")
        for recipe in recipes:
            requests = recipe.results or tuple(results)
            if requests not in loaded:
                loaded[requests] = load(state, list(requests), source_dir)
            output = run_recipe(recipe, loaded[requests], state.registry(), out_dir)
            for note in output.notes:
                err.print(f"note ({recipe.name}): {note}", markup=False, highlight=False)
            if output.skipped:
                rows.append([recipe.name, "+".join(requests), f"skipped: {output.skipped}"])
            else:
                drawn += 1
                rows.append([recipe.name, "+".join(requests), "\n".join(str(path) for path in output.paths)])
            progress.update(task, advance=1, status=recipe.name)
    print_table(f"figures and tables in {out_dir}", ["recipe", "results", "files"], rows)
    if not drawn:
        raise ConcurError("no recipe could be drawn from these results (see the reasons above)")

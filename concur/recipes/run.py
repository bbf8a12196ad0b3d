"""Run a recipe: select the cells, then let its figure kind draw and write figures and tables.

A recipe draws what the results hold: a benchmark or approach it names that is not in the
results is left out with a note, and a recipe left with too little to draw is skipped
with the reason, never written as an empty figure.
"""

from __future__ import annotations

from pathlib import Path

from concur.analysis.results import Results
from concur.analysis.view import em_table
from concur.components import resolve
from concur.recipes.drawing import Output, Skip
from concur.recipes.spec import Recipe
from concur.registry import Registry


def run_recipe(recipe: Recipe, results: Results, registry: Registry | None, out_dir: Path, *, reference: str | None = None) -> Output:
    """Draw one recipe into `out_dir`; `reference` replaces the benchmark the recipe compares with."""
    if reference is not None:
        recipe = recipe.with_reference(reference)
    output = Output(recipe)
    try:
        table = em_table(
            results, policy=recipe.policy, benches=_benches_needed(recipe), approaches=recipe.approaches, registry=registry, lenient=True
        )
        output.notes.extend(table.notes)
        resolve("figure", recipe.kind).draw(recipe, table, out_dir / recipe.name, output)
    except Skip as reason:
        output.skipped = str(reason)
    return output


def _benches_needed(recipe: Recipe) -> str | None:
    """The recipe's benchmarks with the ones it compares them against (its reference, a table's rows, robustness' x)."""
    if not recipe.anchors or recipe.benches is None:
        return recipe.benches
    return ",".join([*recipe.anchors, recipe.benches])

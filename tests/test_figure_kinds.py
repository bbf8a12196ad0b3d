"""Figure kinds are components: a recipe names a built-in by its short name or its own kind as `module:attr`,
and its fields are checked against the kind's options dataclass when the recipe is loaded."""

from __future__ import annotations

import csv
import textwrap

import pytest

from concur.components import names
from concur.errors import SpecError
from concur.recipes.spec import load_recipe

# A kind of one's own, in a module outside concur: each approach's rank on each benchmark (1 = best).
RANKS_MODULE = """
from dataclasses import dataclass

from concur.components import FigureKind
from concur.recipes.drawing import Skip, write_text


@dataclass(frozen=True)
class RankOptions:
    reference: str
    best_first: bool = True
    minimum: float = 0.0  # approaches below this EM on the reference are left out

    def problem(self):
        return ("minimum", "must be between 0 and 100") if not 0 <= self.minimum <= 100 else None


def draw(recipe, table, stem, output):
    options = recipe.options
    if options.reference not in table.wide.columns:
        raise Skip(f"the reference benchmark {options.reference!r} is not in the results")
    kept = table.wide[table.wide[options.reference] >= options.minimum]
    ranks = kept.rank(ascending=not options.best_first, method="min").astype(int)
    write_text(stem.with_suffix(".csv"), ranks.sort_index().to_csv(index_label="approach"), output)


KIND = FigureKind(options=RankOptions, draw=draw, reference="reference")
"""

RESULTS = "approach,benchmark,em\na,b1,50\nb,b1,70\nc,b1,60\na,b2,10\nb,b2,30\nc,b2,20\n"


@pytest.fixture
def ranks_kind(tmp_path, monkeypatch) -> str:
    """The kind's `module:attr`, importable for this test only."""
    (tmp_path / "kinds").mkdir()
    (tmp_path / "kinds" / "my_ranks.py").write_text(RANKS_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path / "kinds"))
    return "my_ranks:KIND"


def _recipe(tmp_path, body: str) -> str:
    path = tmp_path / "ranks.toml"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_a_recipe_draws_with_a_kind_of_ones_own(concur, tmp_path, ranks_kind):
    (tmp_path / "mine.csv").write_text(RESULTS)
    recipe = _recipe(tmp_path, f'kind = "{ranks_kind}"\ntitle = "Ranks"\nreference = "b1"\nminimum = 55\n')
    drawn = concur("figures", recipe, "--results", str(tmp_path / "mine.csv"), "--out-dir", str(tmp_path / "out"))
    assert drawn.returncode == 0, drawn.stderr
    with (tmp_path / "out" / "ranks.csv").open() as handle:
        assert list(csv.reader(handle)) == [["approach", "b1", "b2"], ["b", "1", "1"], ["c", "2", "2"]]  # a (50 on b1) left out
    assert "1 drawn, 0 skipped, 0 failed" in drawn.stderr


def test_reference_replaces_the_option_the_kind_names(concur, tmp_path, ranks_kind):
    (tmp_path / "mine.csv").write_text(RESULTS)
    recipe = _recipe(tmp_path, f'kind = "{ranks_kind}"\ntitle = "Ranks"\nreference = "squad"\nminimum = 15\n')
    assert load_recipe(tmp_path / "ranks.toml").with_reference("b2").options.reference == "b2"
    drawn = concur("figures", recipe, "--results", str(tmp_path / "mine.csv"), "--reference", "b2", "--out-dir", str(tmp_path / "out"))
    assert drawn.returncode == 0, drawn.stderr
    with (tmp_path / "out" / "ranks.csv").open() as handle:
        assert list(csv.reader(handle))[1:] == [["b", "1", "1"], ["c", "2", "2"]]  # a (10 on b2) left out


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ('reference = "b1"\nminimun = 5\n', "field 'minimun': is not a known field; did you mean 'minimum'?"),
        ('reference = "b1"\nminimum = "high"\n', "field 'minimum': must be a number, got 'high'"),
        ('reference = "b1"\nbest_first = 1\n', "field 'best_first': must be true or false, got 1"),
        ("minimum = 5\n", "field 'reference': is required"),
        ('reference = "b1"\nminimum = 500\n', "field 'minimum': must be between 0 and 100, got 500.0"),
    ],
)
def test_a_recipes_own_fields_are_checked_on_load(tmp_path, ranks_kind, body, problem):
    path = tmp_path / "ranks.toml"
    path.write_text(f'kind = "{ranks_kind}"\ntitle = "Ranks"\n{body}')
    with pytest.raises(SpecError) as error:
        load_recipe(path)
    assert str(error.value) == f"{path}, {problem}"


def test_a_misspelt_or_missing_kind_names_the_known_ones(tmp_path):
    path = tmp_path / "r.toml"
    path.write_text('kind = "heatmpa"\ntitle = "t"\n')
    known = r"concurrence-table, scatter-grid, heatmap, .*"
    with pytest.raises(SpecError, match=rf"r\.toml, field 'kind': 'heatmpa' is not one of {known}\(did you mean 'heatmap'\?\)"):
        load_recipe(path)
    path.write_text('kind = "no_such_module:KIND"\ntitle = "t"\n')
    with pytest.raises(SpecError, match=r"field 'kind': figure kind 'no_such_module:KIND': cannot import 'no_such_module'"):
        load_recipe(path)


def test_the_built_in_kinds_are_the_ones_the_recipes_use():
    from concur.recipes.spec import recipe_paths
    from tests.conftest import REPO

    used = {load_recipe(path).kind for path in recipe_paths(REPO / "analysis")}
    assert used == set(names("figure"))  # every built-in kind is drawn by at least one recipe of analysis/

"""Draw many recipes in one go: each is drawn, skipped with its reason, or failed, and the rest go on.

`concur figures analysis/` is one command for every table and figure; one recipe whose
data cannot be had (a leaderboard not downloadable offline, a store with no runs) must not
keep the others from being drawn. A recipe is *skipped* when its inputs are not there (the
reason says how to get them) and *failed* when it could run and did not: a malformed recipe
file, a broken results file, or a bug, whose traceback goes to a log file named in the reason.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from concur.analysis.leaderboards import LEADERBOARDS
from concur.analysis.results import STORE, Results
from concur.errors import ConcurError, DownloadError, MissingSourceError, UnknownNameError
from concur.fsutil import atomic_open
from concur.recipes.drawing import Output
from concur.recipes.run import run_recipe
from concur.recipes.spec import Recipe, load_recipe
from concur.registry import Registry

ERROR_LOG_SUFFIX = ".error.log"


class State(StrEnum):
    drawn = "drawn"
    skipped = "skipped"
    failed = "failed"


@dataclass
class Outcome:
    """What became of one recipe; `reason` says why it was skipped or failed."""

    name: str
    results: tuple[str, ...]
    state: State
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reason: str = ""
    output: Output | None = None


def draw_recipes(
    paths: Sequence[Path],
    results: Sequence[str],
    load: Callable[[tuple[str, ...]], Results],
    registry: Registry | None,
    out_dir: Path,
    *,
    reference: str | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
) -> list[Outcome]:
    """Draw every recipe file; results are loaded once per distinct request (a recipe may fix its own)."""
    loaded: dict[tuple[str, ...], Results | Outcome] = {}
    outcomes = []
    for path in paths:
        outcome = _draw_one(path, tuple(results), load, loaded, registry, out_dir, reference)
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    return outcomes


def _draw_one(
    path: Path,
    default: tuple[str, ...],
    load: Callable[[tuple[str, ...]], Results],
    loaded: dict[tuple[str, ...], Results | Outcome],
    registry: Registry | None,
    out_dir: Path,
    reference: str | None,
) -> Outcome:
    try:
        recipe = load_recipe(path)
    except ConcurError as error:
        return Outcome(path.stem, default, State.failed, reason=str(error))
    requests = recipe.results or default
    if requests not in loaded:
        loaded[requests] = _load(requests, load)
        if reference is not None and recipe.results is None:
            _check_reference(reference, loaded[requests])
    source = loaded[requests]
    if isinstance(source, Outcome):
        return Outcome(recipe.name, requests, source.state, reason=source.reason)
    return draw_recipe(recipe, source, registry, out_dir, reference=reference if recipe.results is None else None)


def draw_recipe(recipe: Recipe, results: Results, registry: Registry | None, out_dir: Path, *, reference: str | None = None) -> Outcome:
    """Draw one parsed recipe from loaded results: drawn, skipped with the reason, or failed (a bug's traceback logged)."""
    try:
        output = run_recipe(recipe, results, registry, out_dir, reference=reference)
    except ConcurError as error:
        return Outcome(recipe.name, results.sources, State.failed, reason=str(error))
    except Exception as error:  # a bug: keep the traceback for a report, draw the other recipes
        return Outcome(recipe.name, results.sources, State.failed, reason=_logged(error, out_dir / f"{recipe.name}{ERROR_LOG_SUFFIX}"))
    if output.skipped:
        return Outcome(recipe.name, results.sources, State.skipped, notes=output.notes, reason=output.skipped, output=output)
    return Outcome(recipe.name, results.sources, State.drawn, paths=output.paths, notes=output.notes, output=output)


def _check_reference(reference: str, source: Results | Outcome) -> None:
    """A `--reference` the results do not hold is a typo to name at once, not a reason to skip every recipe."""
    if isinstance(source, Results):
        benches = sorted(set(source.frame["benchmark"].astype(str)))
        if reference not in benches:
            raise UnknownNameError("reference benchmark (in these results)", reference, benches)


def _load(requests: tuple[str, ...], load: Callable[[tuple[str, ...]], Results]) -> Results | Outcome:
    """The results, or the outcome every recipe drawing from them shares (skipped when data is missing)."""
    try:
        return load(requests)
    except (DownloadError, MissingSourceError) as error:
        return Outcome("", requests, State.skipped, reason=f"{error}; {fetch_hint(requests)}")
    except ConcurError as error:
        return Outcome("", requests, State.failed, reason=str(error))


def fetch_hint(requests: Iterable[str]) -> str:
    """How to get the data of results sources that could not be read."""
    hints = []
    for request in requests:
        for name in request.split("+"):
            if name in LEADERBOARDS:
                hints.append(f"fetch it once on a machine with internet access: concur results --results {name}")
            elif name == STORE:
                hints.append("run jobs first: concur study run analysis/studies/quickstart.toml (or concur run -a A -b B)")
    return "; ".join(dict.fromkeys(hints)) or "check the --results sources"


def _logged(error: Exception, log: Path) -> str:
    log.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(log, "wt") as handle:
        handle.write("".join(traceback.format_exception(error)))
    return f"unexpected {type(error).__name__}: {error} (traceback in {log})"

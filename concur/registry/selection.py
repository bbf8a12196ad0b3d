"""Choose approaches and benchmarks by id, family or glob: `pretrained`, `family:human`, `babi-*`, `squad,qamr`.

Items are comma-separated and expand in the order given; a family or glob expands to its
members in family order, then natural name order (babi-2 before babi-11). Every item must
match something, so a typo is an error with the closest valid name, not an empty matrix.
Only `all` (or no selection at all) selects everything: an empty one (`-a ''`, `' , '`) is an
error, since taking it for "all" would start training every approach.

The family order is part of what a reader sees: grouping by family makes slices of a matrix
comparable across tables and figures, and it never depends on the order results arrived in.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence

from concur.errors import ConcurError, UnknownNameError, some_names
from concur.registry.registry import natural_key

ALL = "all"
GLOB_CHARACTERS = "*?["
FAMILY_PREFIX = "family:"  # names a family explicitly, e.g. when an id could be read as one


def select(
    available: Sequence[str],
    request: str | None,
    families: Mapping[str, str],
    family_rank: Sequence[str],
    kind: str,
    *,
    skipped: list[str] | None = None,
    scope: str = "in these results",  # where the ids come from, for messages ("" for the registry)
) -> list[str]:
    """The ids of `available` that `request` names, without repeats.

    An item that matches nothing is an error (`scope` says where the ids come from), unless
    a `skipped` list is given to collect such items (figure recipes draw what the results
    hold and say what they left out).
    """
    ordered = family_order(list(available), families, family_rank)
    if request is None:
        return ordered
    items = [part.strip() for part in request.split(",") if part.strip()]  # "a,,b" and a trailing comma are harmless
    if not items:
        raise _empty_selection(request, ordered, families, family_rank, kind, scope)
    chosen: list[str] = []
    present_families = {families.get(item) for item in available}
    for item in items:
        try:
            matches = _expand(item, available, ordered, families, family_rank, present_families, kind, scope)
        except ConcurError:
            if skipped is None:
                raise
            skipped.append(item)
            continue
        chosen.extend(member for member in matches if member not in chosen)
    return chosen


def _empty_selection(
    request: str, ordered: Sequence[str], families: Mapping[str, str], family_rank: Sequence[str], kind: str, scope: str
) -> ConcurError:
    """The error for a selection with no item: what could be given instead."""
    present = [family for family in family_rank if any(families.get(member) == family for member in ordered)]
    every = f"every {kind} {scope}".strip()
    known = f"; known: {some_names(ordered)}" if ordered else ""
    kinds = f"ids, families ({', '.join(present or family_rank)}), globs"
    return ConcurError(f"empty {kind} selection {request!r}: give {kinds}, or {ALL!r} for {every}{known}")


def _expand(
    item: str,
    available: Sequence[str],
    ordered: list[str],
    families: Mapping[str, str],
    family_rank: Sequence[str],
    present_families: set[str | None],
    kind: str,
    scope: str,
) -> list[str]:
    what = f"{kind} {scope}".strip()  # e.g. "benchmark in these results"
    if item == ALL:
        return ordered
    family = item[len(FAMILY_PREFIX) :] if item.startswith(FAMILY_PREFIX) else None
    if family is None and item in available:
        return [item]
    known_families = sorted({*(name for name in present_families if name), *family_rank})
    if family is not None or item in present_families or item in family_rank:
        family = item if family is None else family
        if family not in known_families:
            raise UnknownNameError(f"{kind} family" + (f" ({scope})" if scope else ""), family, known_families)
        matches = [member for member in ordered if families.get(member) == family]
        if not matches:
            raise ConcurError(f"no {what} is of family {family!r}")
        return matches
    if any(character in item for character in GLOB_CHARACTERS):
        matches = [member for member in ordered if fnmatch.fnmatchcase(member, item)]
        if not matches:
            raise ConcurError(f"pattern {item!r} matches no {what}")
        return matches
    known = [*available, *(name for name in present_families if name)]
    raise UnknownNameError(kind + (f" ({scope})" if scope else ""), item, known)


def family_order(
    ids: Iterable[str],
    families: Mapping[str, str],
    family_rank: Sequence[str],
    *,
    scores: Mapping[str, float] | None = None,
) -> list[str]:
    """Ids grouped by family in `family_rank` order; other families follow by name, ids without a family last.

    Within a family, ids with higher `scores` come first when scores are given (missing
    scores last), so a legend can follow the lines it labels; ties, and everything when
    no scores are given, fall back to `natural_key` (babi-2 before babi-11).
    """
    rank = {family: position for position, family in enumerate(family_rank)}

    def key(item: str) -> tuple[int, str, bool, float, tuple[int | str, ...]]:
        family = families.get(item, "")
        position = rank.get(family, len(rank) if family else len(rank) + 1)
        score = math.nan if scores is None else float(scores.get(item, math.nan))
        missing = math.isnan(score)
        return (position, "" if family in rank else family, missing, 0.0 if missing else -score, natural_key(item))

    return sorted(ids, key=key)

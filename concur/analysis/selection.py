"""Choose approaches and benchmarks by id, family or glob: `pretrained`, `babi-*`, `squad,qamr`.

Items are comma-separated and expand in the order given; a family or glob expands to its
members in family order, then natural name order (babi-2 before babi-11). Every item must
match something, so a typo is an error with the closest valid name, not an empty matrix.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence

from concur.analysis.ordering import family_order
from concur.errors import ConcurError, UnknownNameError

ALL = "all"
GLOB_CHARACTERS = "*?["


def select(
    available: Sequence[str],
    request: str | None,
    families: Mapping[str, str],
    family_rank: Sequence[str],
    kind: str,
    *,
    skipped: list[str] | None = None,
) -> list[str]:
    """The ids of `available` that `request` names, without repeats.

    An item that matches nothing is an error, unless a `skipped` list is given to collect
    such items (figure recipes draw what the results hold and say what they left out).
    """
    ordered = family_order(list(available), families, family_rank)
    if request is None or request.strip() in ("", ALL):
        return ordered
    chosen: list[str] = []
    present_families = {families.get(item) for item in available}
    for item in (part.strip() for part in request.split(",")):
        if not item:
            continue
        try:
            matches = _expand(item, available, ordered, families, family_rank, present_families, kind)
        except ConcurError:
            if skipped is None:
                raise
            skipped.append(item)
            continue
        chosen.extend(member for member in matches if member not in chosen)
    return chosen


def _expand(item, available, ordered, families, family_rank, present_families, kind) -> list[str]:
    if item == ALL:
        return ordered
    if item in available:
        return [item]
    if item in present_families or item in family_rank:
        matches = [member for member in ordered if families.get(member) == item]
        if not matches:
            raise ConcurError(f"no {kind} of family {item!r} in these results")
        return matches
    if any(character in item for character in GLOB_CHARACTERS):
        matches = [member for member in ordered if fnmatch.fnmatchcase(member, item)]
        if not matches:
            raise ConcurError(f"pattern {item!r} matches no {kind} in these results")
        return matches
    known = [*available, *sorted(name for name in present_families if name)]
    raise UnknownNameError(f"{kind} (in these results)", item, known)

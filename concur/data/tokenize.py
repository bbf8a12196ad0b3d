"""Word tokenisation with character offsets, so a predicted token span maps back to exact passage text.

Tokens are runs of letters and digits (with inner apostrophes, hyphens, periods and commas
kept, as in "don't", "3.5", "1,000"; a final period is its own token), HTML-like tags (`<P>`,
`</Td>`) kept whole, and single other characters. MRQA passages carry such tags; the paper
normalises them for the non-pretrained models (`<P>` -> `BPB`, `</P>` -> `EEPE`), which
`vocabulary_form` does for every tag. The normalisation is reversible because it never
touches the text: the normalised form is only the key a token is looked up under, while its
offsets point into the original passage, so answers are always the passage's own characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

_TOKEN = re.compile(r"</?[A-Za-z][A-Za-z0-9]*>|\w+(?:[-'’.,]\w+)*|[^\w\s]", re.UNICODE)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9]*)>")


@dataclass(frozen=True)
class Tokens:
    """The tokens of one text: their surface forms and `[start, end)` character offsets."""

    words: tuple[str, ...]
    offsets: np.ndarray  # (n, 2) int64, end exclusive

    def __len__(self) -> int:
        return len(self.words)

    def spaces(self, text: str) -> list[bool]:
        """Whether whitespace follows each token in `text` (what a tagger needs to rebuild it)."""
        ends = self.offsets[:, 1]
        return [bool(end < len(text) and text[end].isspace()) for end in ends]


def tokenize(text: str) -> Tokens:
    """Split `text` into tokens with their character offsets."""
    matches = list(_TOKEN.finditer(text))
    offsets = np.array([match.span() for match in matches], dtype=np.int64).reshape(-1, 2)
    return Tokens(tuple(match.group() for match in matches), offsets)


def vocabulary_form(word: str) -> str:
    """The form a word is looked up under: tags become `B<TAG>B` / `EE<TAG>E` (`<P>` -> `BPB`), other words stay."""
    tag = _TAG.fullmatch(word)
    if tag is None:
        return word
    closing, name = tag.groups()
    return f"EE{name.upper()}E" if closing else f"B{name.upper()}B"


def token_span(offsets: np.ndarray, first_char: int, last_char: int) -> tuple[int, int] | None:
    """Tokens `(start, end)` (inclusive) covering the inclusive character span, or None if no token overlaps it."""
    starts, ends = offsets[:, 0], offsets[:, 1]
    overlapping = np.flatnonzero((starts <= last_char) & (ends > first_char))
    if len(overlapping) == 0:
        return None
    return int(overlapping[0]), int(overlapping[-1])

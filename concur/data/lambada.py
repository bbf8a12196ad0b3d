"""Convert LAMBADA (Paperno et al. 2016) to extractive question answering.

Upstream format: one passage per line, tokenised with single spaces, the target word being
the line's last token. Development and test come from `lambada-dataset.tar.gz` (Zenodo
record 2630551: `lambada_development_plain_text.txt`, `lambada_test_plain_text.txt`);
LAMBADA itself has no training passages, only novels. Training follows Chu et al. (2017),
"Broad Context Language Modeling as Reading Comprehension": their training set
(`lambada-train-valid/train.txt` in `lambada-train-valid.tar.gz`, released with the paper)
holds passages in the same one-per-line format, built from the LAMBADA training novels and
kept only where the target word occurs in the context.

Conversion, after Chu et al. (2017) and Cheng & Erk (2020), who read LAMBADA as reading
comprehension: the context is the passage without its last sentence, the question is the
last sentence with the target word replaced by `XXXXX`, and the answer span is the
target's first whole-token occurrence in the context. The last sentence starts after the
last sentence-final token (`.`, `!`, `?`, or one of `!!`, `??`, `!!!`, `???`, `?!`, `!?`)
before the target, the split used by the public preprocessing of Chu et al.'s data (Hoang
et al. 2018). Passages with no sentence boundary (no context) or whose target does not occur
in the context are dropped and counted: an extractive model cannot answer them.
"""

from __future__ import annotations

from pathlib import Path

from concur.components import ReaderKind
from concur.data.cloze import BLANK, cloze_question
from concur.data.model import Passage, Split
from concur.data.textfile import numbered_lines

SENTENCE_FINAL = frozenset({".", "!", "?", "!!", "??", "!!!", "???", "?!", "!?"})


def read_lambada(path: Path, split_name: str = "") -> Split:
    """Read a LAMBADA-format file (one passage per line) into the unified model."""
    stem = path.name.split(".")[0]
    split = Split(dataset=f"LAMBADA:{stem}", split=split_name, passages=[])
    for number, line in numbered_lines(path):
        tokens = line.split()
        if not tokens:
            continue  # a blank line holds no passage
        target = tokens[-1]
        boundary = max((i for i in range(len(tokens) - 1) if tokens[i] in SENTENCE_FINAL), default=-1)
        context = " ".join(tokens[: boundary + 1])
        question_text = " ".join([*tokens[boundary + 1 : -1], BLANK])
        question = cloze_question(split, f"{stem}:{number}", question_text, BLANK, context, target)
        if question is not None:
            split.passages.append(Passage(context=context, qas=[question]))
    return split


READER = ReaderKind(read_lambada)

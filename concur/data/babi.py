"""Convert bAbI tasks (v1.2 text format) to extractive question answering.

A bAbI file holds stories of numbered lines; numbering restarts at 1 for a new story; a
question line is `N question<TAB>answer<TAB>supporting fact line numbers`.

Conversion (as the reference study's extractive bAbI): the passage of a question is the
story's statements up to that question, joined by single spaces. The answer span is the
first occurrence, as a whole word and ignoring case, of the answer in the first
supporting-fact sentence (in the annotated order) that contains it. Where no supporting
fact contains the labelled answer but one contains its plural, the plural is the span
(task 15 asks "What is Gertrude afraid of? wolf" over "Mice are afraid of wolves."). The
accepted answers are the span text and the label. Questions whose answer cannot be found
are dropped and counted.
"""

from __future__ import annotations

import re
from pathlib import Path

from concur.components import ReaderKind
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.textfile import numbered_lines
from concur.errors import DataFormatError

NOT_IN_SUPPORT = "answer not found in its supporting facts"

# Plurals English spelling rules do not produce, among bAbI's nouns.
_IRREGULAR_PLURALS = {"mouse": "mice", "sheep": "sheep", "man": "men", "woman": "women", "child": "children"}


def plural_forms(word: str) -> list[str]:
    """Candidate plurals of a singular noun, most likely first."""
    lower = word.lower()
    if lower in _IRREGULAR_PLURALS:
        return [_IRREGULAR_PLURALS[lower]]
    forms = [word + "s", word + "es"]
    if lower.endswith("f"):
        forms.insert(0, word[:-1] + "ves")
    elif lower.endswith("fe"):
        forms.insert(0, word[:-2] + "ves")
    elif lower.endswith("y") and len(word) > 1 and lower[-2] not in "aeiou":
        forms.insert(0, word[:-1] + "ies")
    return forms


def read_babi(path: Path, split_name: str = "") -> Split:
    """Read one bAbI task file into the unified model (one passage per question)."""
    stem = path.name.split(".")[0]
    split = Split(dataset=f"bAbI:{stem}", split=split_name, passages=[])
    story = 0
    previous = 0
    statements: dict[int, str] = {}  # line number -> sentence, for the current story
    order: list[int] = []
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        index_text, _, rest = line.partition(" ")
        if not index_text.isdigit() or not rest:
            raise DataFormatError(path, "expected 'N sentence' or 'N question<TAB>answer<TAB>facts'", number)
        index = int(index_text)
        if index <= previous:  # numbering restarted: a new story begins
            story, statements, order = story + 1, {}, []
        previous = index
        if "\t" not in rest:
            statements[index] = rest.strip()
            order.append(index)
            continue
        fields = rest.split("\t")
        if len(fields) < 3:
            raise DataFormatError(path, "a question line needs question, answer and supporting facts", number)
        question_text, answer, support_text = fields[0].strip(), fields[1].strip(), fields[2].split()
        try:
            support = [int(fact) for fact in support_text]
        except ValueError:
            raise DataFormatError(path, f"supporting facts must be line numbers, got {fields[2]!r}", number) from None
        passage = _passage(order, statements)
        span = _answer_span(passage, support, answer)
        if span is None:
            split.dropped[NOT_IN_SUPPORT] += 1
            continue
        context = passage[0]
        first, last = span
        text = context[first : last + 1]
        answers = [text] if text == answer else [text, answer]
        qid = f"{stem}:{story}:{index}"
        question = Question(qid, question_text, answers, [DetectedAnswer(text, (span,))])
        split.passages.append(Passage(context=context, qas=[question], article=f"{stem}:{story}"))
    return split


def _passage(order: list[int], statements: dict[int, str]) -> tuple[str, dict[int, tuple[int, int]]]:
    """The story so far as one string, with each statement's `[start, end)` offsets."""
    bounds: dict[int, tuple[int, int]] = {}
    position = 0
    for index in order:
        bounds[index] = (position, position + len(statements[index]))
        position += len(statements[index]) + 1
    return " ".join(statements[index] for index in order), bounds


def _answer_span(passage: tuple[str, dict[int, tuple[int, int]]], support: list[int], answer: str) -> tuple[int, int] | None:
    """Inclusive span of the answer (or else its plural) in the first supporting fact holding it."""
    context, bounds = passage
    sentences = [bounds[fact] for fact in support if fact in bounds]
    for form in [answer, *plural_forms(answer)]:
        pattern = re.compile(rf"(?<!\w){re.escape(form)}(?!\w)", re.IGNORECASE)
        for start, end in sentences:
            match = pattern.search(context, start, end)
            if match:
                return (match.start(), match.end() - 1)
    return None


READER = ReaderKind(read_babi)

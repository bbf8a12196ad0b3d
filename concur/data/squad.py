"""Read SQuAD v1.1 JSON (`{"version", "data": [{"title", "paragraphs": [...]}]}`).

Answers become MRQA `detected_answers`: each distinct answer text with all its annotated
character spans (inclusive). An `answer_start` that does not point at its text is moved to
the nearest occurrence of the text in the context; an answer whose text does not occur at
all keeps counting for scoring but gives no training span, and is counted in `dropped`.
A question without any answer text (SQuAD 2.0's unanswerable ones) cannot be scored and is
an error naming its id: scoring it would count every prediction wrong without a word.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concur.components import ReaderKind
from concur.data.model import DetectedAnswer, Passage, Question, Split, unanswered
from concur.errors import DataFormatError
from concur.userfiles import load_json

UNLOCATED = "answer text not found in its context (kept for scoring, not for training)"


def read_squad(path: Path, split_name: str = "") -> Split:
    """Read a SQuAD v1.1-format file (plain or gzip) into the unified model."""
    document = load_json(path)
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise DataFormatError(path, "not SQuAD JSON: expected an object with a 'data' list")
    split = Split(dataset=f"SQuAD-{document.get('version', '?')}", split=split_name, passages=[])
    for a, article in enumerate(document["data"]):
        title = _field(path, article, "title", str, f"data[{a}]", required=False)
        for p, paragraph in enumerate(_field(path, article, "paragraphs", list, f"data[{a}]")):
            where = f"data[{a}].paragraphs[{p}]"
            context = _field(path, paragraph, "context", str, where)
            questions = [
                _question(path, context, qa, f"{where}.qas[{q}]", split) for q, qa in enumerate(_field(path, paragraph, "qas", list, where))
            ]
            split.passages.append(Passage(context=context, qas=questions, article=title or f"article-{a}"))
    return split


def _field(path: Path, obj: Any, name: str, kind: type, where: str, required: bool = True) -> Any:
    value = obj.get(name) if isinstance(obj, dict) else None
    if value is None and not required:
        return None
    if not isinstance(value, kind):
        raise DataFormatError(path, f"{where}: missing or invalid field {name!r} (expected {kind.__name__})")
    return value


def _question(path: Path, context: str, qa: Any, where: str, split: Split) -> Question:
    qid = _field(path, qa, "id", str, where)
    text = _field(path, qa, "question", str, where)
    spans: dict[str, list[tuple[int, int]]] = {}
    for i, answer in enumerate(_field(path, qa, "answers", list, where)):
        answer_text = _field(path, answer, "text", str, f"{where}.answers[{i}]")
        start = _field(path, answer, "answer_start", int, f"{where}.answers[{i}]")
        spans.setdefault(answer_text, [])
        located = locate(context, answer_text, start)
        if located is not None and located not in spans[answer_text]:
            spans[answer_text].append(located)
    if problem := unanswered(list(spans)):
        raise DataFormatError(path, f"{where} (question id {qid!r}): {problem}")
    detected = [DetectedAnswer(text, tuple(found)) for text, found in spans.items() if found]
    if spans and not detected:
        split.dropped[UNLOCATED] += 1
    return Question(qid=qid, question=text, answers=list(spans), detected_answers=detected)


def locate(context: str, text: str, start: int) -> tuple[int, int] | None:
    """Inclusive span of `text` at `start`, else at its nearest occurrence, else None."""
    if not text:
        return None
    if context[start : start + len(text)] == text:
        return (start, start + len(text) - 1)
    occurrences = []
    found = context.find(text)
    while found != -1:
        occurrences.append(found)
        found = context.find(text, found + 1)
    if not occurrences:
        return None
    nearest = min(occurrences, key=lambda offset: abs(offset - start))
    return (nearest, nearest + len(text) - 1)


READER = ReaderKind(read_squad)

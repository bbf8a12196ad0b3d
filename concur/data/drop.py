"""Convert DROP (Dua et al. 2019, `drop_dataset_{train,dev}.json`) to extractive QA by the MRQA rules.

DROP has no MRQA training release: MRQA 2019 only published a DROP dev set, made of the
DROP questions whose answer is a span of the passage. The same rule turns the original
DROP train into `mrqa-drop`'s training split.

Upstream format: `{passage id: {"passage", "qa_pairs": [{"question", "query_id",
"answer", "validated_answers"}], "wiki_url"}}`, where an answer is `{"number": str,
"date": {"day", "month", "year"}, "spans": [str]}` (exactly one kind filled in).

Conversion: a question is kept when its answer is a single span whose text occurs in the
passage; every occurrence is a detected span (as MRQA lists every occurrence) and the
first one is trained on. Validated answers that are single spans add accepted answers (and
their occurrences). Number, date, multi-span and empty answers, and spans not found in the
passage, are dropped and counted by reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from concur.components import ReaderKind
from concur.data.model import DetectedAnswer, Passage, Question, Span, Split
from concur.errors import DataFormatError
from concur.userfiles import load_json

NUMBER = "number answer (not a span)"
DATE = "date answer (not a span)"
MULTI_SPAN = "multi-span answer"
EMPTY = "empty answer"
NOT_IN_PASSAGE = "span answer not found in the passage"


def read_drop(path: Path, split_name: str = "") -> Split:
    """Read a DROP JSON file, keeping the questions the MRQA rules make extractive."""
    document = load_json(path)
    if not isinstance(document, dict):
        raise DataFormatError(path, "not DROP JSON: expected an object {passage id: {'passage', 'qa_pairs'}}")
    split = Split(dataset="DROP", split=split_name, passages=[])
    for passage_id, section in document.items():
        where = f"passage {passage_id!r}"
        if not isinstance(section, dict) or not isinstance(section.get("passage"), str) or not isinstance(section.get("qa_pairs"), list):
            raise DataFormatError(path, f"{where}: expected an object with a 'passage' string and a 'qa_pairs' list")
        context = section["passage"]
        questions = [
            question
            for index, qa in enumerate(section["qa_pairs"])
            if (question := _question(path, context, qa, f"{where}, qa_pairs[{index}]", split)) is not None
        ]
        if questions:
            split.passages.append(Passage(context=context, qas=questions, article=passage_id))
    return split


def answer_kind(answer: dict[str, Any]) -> str:
    """'span', or the reason a DROP answer is not a single span."""
    spans = _spans(answer)
    if len(spans) == 1:
        return "span"
    if len(spans) > 1:
        return MULTI_SPAN
    if str(answer.get("number") or "").strip():
        return NUMBER
    if any(str(value).strip() for value in (answer.get("date") or {}).values()):
        return DATE
    return EMPTY


def occurrences(context: str, text: str) -> tuple[Span, ...]:
    """Inclusive spans of every occurrence of `text` in `context`."""
    spans = []
    found = context.find(text)
    while found != -1:
        spans.append((found, found + len(text) - 1))
        found = context.find(text, found + 1)
    return tuple(spans)


def _question(path: Path, context: str, qa: Any, where: str, split: Split) -> Question | None:
    if not isinstance(qa, dict) or not isinstance(qa.get("query_id"), str) or not isinstance(qa.get("question"), str):
        raise DataFormatError(path, f"{where}: expected an object with 'query_id' and 'question' strings")
    answers = [qa.get("answer"), *(qa.get("validated_answers") or [])]
    if not all(_well_formed(answer) for answer in answers):
        raise DataFormatError(
            path, f"{where} (query {qa['query_id']}): an answer must be an object with 'number', 'date' and a 'spans' list of strings"
        )
    kind = answer_kind(answers[0])
    if kind != "span":
        split.dropped[kind] += 1
        return None
    texts = list(dict.fromkeys(_spans(answer)[0] for answer in answers if answer_kind(answer) == "span"))
    detected = [DetectedAnswer(text, spans) for text in texts if (spans := occurrences(context, text))]
    if not detected or detected[0].text != texts[0]:
        split.dropped[NOT_IN_PASSAGE] += 1
        return None
    return Question(qid=qa["query_id"], question=qa["question"], answers=texts, detected_answers=detected)


def _well_formed(answer: Any) -> bool:
    if not isinstance(answer, dict):
        return False
    spans, date = answer.get("spans") or [], answer.get("date") or {}
    return isinstance(spans, list) and all(isinstance(span, str) for span in spans) and isinstance(date, dict)


def _spans(answer: dict[str, Any]) -> list[str]:
    """The answer's non-blank span texts, stripped."""
    return [span.strip() for span in answer.get("spans") or [] if span.strip()]


READER = ReaderKind(read_drop)

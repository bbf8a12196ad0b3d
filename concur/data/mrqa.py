"""Read and write the MRQA 2019 unified format (`.jsonl` or `.jsonl.gz`).

The first line is a header `{"header": {"dataset": ..., "split": ...}}`; every further line
is one context with its questions. We read `context`, `qas[].qid`, `question`, `answers`
and `detected_answers[].{text, char_spans}`; the spaCy token fields of the upstream files
are not needed by any stage and are not written back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concur.components import ReaderKind
from concur.data.model import DetectedAnswer, Passage, Question, Split, span_problem, unanswered
from concur.data.textfile import numbered_lines, parse_json_line
from concur.errors import DataFormatError
from concur.fsutil import atomic_open

GZIP_LEVEL = 6


def read_mrqa(path: Path) -> Split:
    """Read a whole MRQA file; a malformed line is a `DataFormatError` naming its number."""
    header: dict[str, Any] | None = None
    passages: list[Passage] = []
    for number, record in _json_lines(path):
        if header is None:
            header = _parse_header(path, number, record)
            continue
        passages.append(_parse_passage(path, number, record))
    if header is None:
        raise DataFormatError(path, "the file is empty: an MRQA file starts with a header line")
    return Split(dataset=str(header.get("dataset", "")), split=str(header.get("split", "")), passages=passages)


def write_mrqa(split: Split, path: Path) -> None:
    """Write `split` atomically; `.gz` paths are gzip-compressed deterministically."""
    level = GZIP_LEVEL if path.name.endswith(".gz") else None
    with atomic_open(path, "wt", gzip_level=level) as handle:
        _dump_line(handle, {"header": {"dataset": split.dataset, "split": split.split}})
        for passage in split.passages:
            _dump_line(handle, passage_record(passage))


def passage_record(passage: Passage) -> dict[str, Any]:
    """The MRQA JSON object of one passage."""
    record: dict[str, Any] = {
        "context": passage.context,
        "qas": [
            {
                "qid": question.qid,
                "question": question.question,
                "answers": question.answers,
                "detected_answers": [
                    {"text": answer.text, "char_spans": [list(span) for span in answer.char_spans]} for answer in question.detected_answers
                ],
            }
            for question in passage.qas
        ],
    }
    if passage.article is not None:
        record["article"] = passage.article
    return record


def _dump_line(handle, record: dict[str, Any]) -> None:
    handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")))
    handle.write("\n")


def _json_lines(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield `(line number, parsed JSON)` for non-blank lines, with errors that name the line."""
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        yield number, parse_json_line(path, line, number)


def _parse_header(path: Path, number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or not isinstance(record.get("header"), dict):
        raise DataFormatError(path, 'the first line must be a header {"header": {"dataset": ..., "split": ...}}', number)
    return record["header"]


def _parse_passage(path: Path, number: int, record: Any) -> Passage:
    def fail(problem: str) -> DataFormatError:
        return DataFormatError(path, problem, number)

    if not isinstance(record, dict):
        raise fail("expected a JSON object with 'context' and 'qas'")
    context = record.get("context")
    qas = record.get("qas")
    if not isinstance(context, str):
        raise fail("missing or non-string field 'context'")
    if not isinstance(qas, list):
        raise fail("missing or non-list field 'qas'")
    questions = []
    for index, qa in enumerate(qas):
        where = f"qas[{index}]"
        if not isinstance(qa, dict):
            raise fail(f"{where} is not an object")
        qid, text, answers = qa.get("qid"), qa.get("question"), qa.get("answers")
        if not isinstance(qid, str) or not qid:
            raise fail(f"{where}: missing field 'qid'")
        if not isinstance(text, str):
            raise fail(f"{where} (qid {qid}): missing field 'question'")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise fail(f"{where} (qid {qid}): 'answers' must be a list of strings")
        if problem := unanswered(answers):
            raise fail(f"{where} (qid {qid}): {problem}")
        detected = []
        for answer in qa.get("detected_answers", []):
            try:
                spans = tuple((int(first), int(last)) for first, last in answer["char_spans"])
                detected.append(DetectedAnswer(text=str(answer["text"]), char_spans=spans))
            except (KeyError, TypeError, ValueError):
                raise fail(f"{where} (qid {qid}): detected_answers need 'text' and 'char_spans' [[first, last], ...]") from None
            for span in spans:
                problem = span_problem(context, span)
                if problem:
                    raise fail(f"{where} (qid {qid}): {problem}")
        questions.append(Question(qid=qid, question=text, answers=answers, detected_answers=detected))
    article = record.get("article")
    return Passage(context=context, qas=questions, article=article if isinstance(article, str) else None)


def read_mrqa_split(path: Path, split_name: str = "") -> Split:
    """`read_mrqa` as a source reader: the split is named by the spec (an MRQA header names its dataset's)."""
    split = read_mrqa(path)
    if split_name:
        split.split = split_name
    return split


READER = ReaderKind(read_mrqa_split)

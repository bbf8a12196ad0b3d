"""Convert ReCoRD (Zhang et al. 2018) to extractive question answering.

Upstream formats, both read:

- the official release (`train.json`, `dev.json`): one JSON document
  `{"version", "data": [{"id", "source", "passage": {"text", "entities": [{"start", "end"}]},
  "qas": [{"id", "query", "answers": [{"start", "end", "text"}]}]}]}`;
- SuperGLUE's copy (`ReCoRD/{train,val}.jsonl` in `ReCoRD.zip`): one such passage object per
  line, identified by integer `idx` fields instead of string `id`s.

`end` is inclusive in both (the release's README; SuperGLUE's tools read
`text[start:end + 1]`), which is MRQA's convention, so spans are kept as annotated. Each
distinct answer text becomes a detected answer with all its annotated spans; an answer whose
text is not at its annotated start is moved to the nearest occurrence of the text. The passage
(its `@highlight` lines included) and the `@placeholder` query are kept as they are; the
entity list is not used (no answer choices). Queries without answers (the unreleased test
set) or whose answers occur nowhere in the passage are dropped and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from concur.components import ReaderKind
from concur.data.cloze import EMPTY_PASSAGE, NO_ANSWER, NO_BLANK, NOT_IN_PASSAGE, PLACEHOLDER
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.squad import locate
from concur.data.textfile import parse_json_line
from concur.errors import DataFormatError
from concur.fsutil import UNREADABLE, open_text
from concur.userfiles import parse_json


def read_record(path: Path, split_name: str = "") -> Split:
    """Read a ReCoRD file (official JSON or SuperGLUE JSON lines) into the unified model."""
    split = Split(dataset="ReCoRD", split=split_name, passages=[])
    for where, line, record in _records(path):
        passage = _passage(path, where, line, record, split)
        if passage is not None:
            split.passages.append(passage)
    return split


def _records(path: Path) -> Iterator[tuple[str, int | None, Any]]:
    """`(where, line or None, passage object)` for each passage of either format."""
    try:
        with open_text(path) as handle:
            first = handle.readline()
            try:
                head = json.loads(first)
            except json.JSONDecodeError:
                head = None  # the first line of a pretty-printed document
            if isinstance(head, dict) and "passage" in head:
                yield "line 1", 1, head
                for number, line in enumerate(handle, start=2):
                    if line.strip():
                        yield f"line {number}", number, parse_json_line(path, line, number)
                return
            document = head if isinstance(head, dict) and "data" in head else parse_json(first + handle.read(), path)
    except (*UNREADABLE, OSError) as exc:
        raise DataFormatError(path, f"unreadable: truncated, corrupt or not UTF-8 ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise DataFormatError(path, "not ReCoRD: expected {'data': [...]} or one passage object per line")
    for index, record in enumerate(document["data"]):
        yield f"data[{index}]", None, record


def _field(path: Path, line: int | None, obj: Any, name: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = obj.get(name) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataFormatError(path, f"{where}: missing or invalid field {name!r}", line)
    return value


def _identifier(path: Path, line: int | None, obj: Any, where: str) -> str:
    """The official release's string `id`, else SuperGLUE's integer `idx`."""
    key = "id" if isinstance(obj, dict) and "id" in obj else "idx"
    return str(_field(path, line, obj, key, (str, int), where))


def _passage(path: Path, where: str, line: int | None, record: Any, split: Split) -> Passage | None:
    article = _identifier(path, line, record, where)
    text = _field(path, line, _field(path, line, record, "passage", dict, where), "text", str, f"{where}.passage")
    questions = []
    for index, qa in enumerate(_field(path, line, record, "qas", list, where)):
        question = _question(path, line, text, qa, f"{where}.qas[{index}]", article, split)
        if question is not None:
            questions.append(question)
    return Passage(context=text, qas=questions, article=article) if questions else None


def _question(path: Path, line: int | None, text: str, qa: Any, where: str, article: str, split: Split) -> Question | None:
    qid = _identifier(path, line, qa, where)
    if "idx" in qa and "id" not in qa:
        qid = f"{article}-{qid}"  # SuperGLUE's integer ids: qualify by the passage's
    query = _field(path, line, qa, "query", str, where)
    answers = _field(path, line, qa, "answers", list, where) if qa.get("answers") is not None else []
    spans: dict[str, list[tuple[int, int]]] = {}
    for index, answer in enumerate(answers):
        answer_where = f"{where}.answers[{index}]"
        answer_text = _field(path, line, answer, "text", str, answer_where)
        start = _field(path, line, answer, "start", int, answer_where)
        if start < 0:
            raise DataFormatError(path, f"{answer_where}: negative 'start' {start}", line)
        located = locate(text, answer_text, start)
        found = spans.setdefault(answer_text, [])
        if located is not None and located not in found:
            found.append(located)
    if not text.strip():
        reason = EMPTY_PASSAGE
    elif not spans:
        reason = NO_ANSWER
    elif PLACEHOLDER not in query:
        reason = NO_BLANK
    elif not any(spans.values()):
        reason = NOT_IN_PASSAGE
    else:
        detected = [DetectedAnswer(answer_text, tuple(found)) for answer_text, found in spans.items() if found]
        return Question(qid=qid, question=query, answers=list(spans), detected_answers=detected)
    split.dropped[reason] += 1
    return None


READER = ReaderKind(read_record)

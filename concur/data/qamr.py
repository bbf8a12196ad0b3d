"""Convert QAMR (Michael et al. 2018, uwnlp/qamr `data/filtered/*.tsv`) to extractive QA.

QAMR questions were written about single sentences. A QA file has one QA pair per row and
nine tab-separated fields: sentence id, target word indices, worker id, QA index in the
assignment, target word index, question, answer token indices, and two validator judgments
`<worker>:<token indices>`. The sentences themselves are in a companion file
(`wiki-sentences.tsv`: `<sentence id><TAB><space-tokenised sentence>`).

Conversion:

- A passage is one source document: a sentence id `Wiki1k:<source>:<doc>:<paragraph>:<sentence>`
  (or `PTB:<section>/<file>:<sentence>`) names its document by the fields before its
  ordinals; the document's sentences in the sentences file, in (paragraph, sentence) order,
  are joined by single spaces, each sentence being its tokens joined by single spaces, so
  that token positions give exact character offsets.
- Every answer (the asker's, then each validator's) is the contiguous token range from its
  first to its last highlighted token, as the QAMR authors' own SQuAD export does (a few
  highlights skip a comma inside a list). The accepted answers are their distinct texts,
  the one most annotators gave first (the asker's on a tie): it gives the training span, so
  that an asker's slip outvoted by both validators is not trained on.
- Dropped and counted: questions about a sentence missing from the sentences file; the same
  question (under the SQuAD answer normalisation) asked about more than one sentence of one
  document, which the joined passage makes ambiguous; questions whose answer tokens fall
  outside their sentence.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from concur.components import ReaderKind
from concur.data.model import DetectedAnswer, Passage, Question, Span, Split
from concur.data.textfile import numbered_lines
from concur.errors import DataFormatError
from concur.metrics import normalize_answer

MISSING_SENTENCE = "sentence not in the sentences file"
AMBIGUOUS = "same question asked about more than one sentence of the passage"
OUTSIDE_SENTENCE = "answer token index outside its sentence"

FIELDS = 9
# Trailing ordinal fields of a sentence id (paragraph, sentence), by corpus prefix.
_ORDINALS = {"Wiki1k": 2, "PTB": 1}


@dataclass(frozen=True)
class _Row:
    """One QA pair of the file, with its answers as inclusive token ranges."""

    number: int
    qid: str
    sentence_id: str
    question: str
    answers: tuple[tuple[int, int], ...]  # the asker's first, then the validators'


def read_qamr(path: Path, split_name: str = "", *, sentences: Path | None = None) -> Split:
    """Read a QAMR QA file, with the companion file of its sentences, into one passage per document."""
    if sentences is None:
        raise DataFormatError(path, "QAMR questions need their sentences: give the sentences file (wiki-sentences.tsv) as an option")
    tokens = read_sentences(sentences)
    split = Split(dataset="QAMR", split=split_name, passages=[])
    rows_by_document: dict[str, list[_Row]] = {}
    for row in _rows(path):
        if row.sentence_id not in tokens:
            split.dropped[MISSING_SENTENCE] += 1
            continue
        rows_by_document.setdefault(document_of(path, row.sentence_id, row.number)[0], []).append(row)
    documents: dict[str, list[str]] = defaultdict(list)
    for sentence_id in tokens:
        documents[document_of(sentences, sentence_id)[0]].append(sentence_id)
    for document, rows in rows_by_document.items():
        order = sorted(documents[document], key=lambda sentence_id: document_of(sentences, sentence_id)[1])
        passage = _passage(document, order, tokens, rows, split)
        if passage.qas:
            split.passages.append(passage)
    return split


def read_sentences(path: Path) -> dict[str, list[str]]:
    """`{sentence id: tokens}` from a `<id><TAB><space-tokenised sentence>` file."""
    tokens: dict[str, list[str]] = {}
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        sentence_id, tab, text = line.partition("\t")
        if not tab or not sentence_id:
            raise DataFormatError(path, "expected '<sentence id><TAB><tokenised sentence>'", number)
        tokens[sentence_id] = text.split()
    return tokens


def document_of(path: Path, sentence_id: str, line: int | None = None) -> tuple[str, tuple[int, ...]]:
    """The document a sentence belongs to and the sentence's position in it."""
    parts = sentence_id.split(":")
    ordinals = _ORDINALS.get(parts[0])
    if ordinals is None or len(parts) <= ordinals + 1 or not all(part.isdigit() for part in parts[-ordinals:]):
        raise DataFormatError(
            path, f"sentence id {sentence_id!r} is neither Wiki1k:<source>:<doc>:<paragraph>:<sentence> nor PTB:<file>:<sentence>", line
        )
    return ":".join(parts[:-ordinals]), tuple(int(part) for part in parts[-ordinals:])


def _rows(path: Path) -> list[_Row]:
    rows = []
    for number, line in numbered_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != FIELDS:
            raise DataFormatError(path, f"expected {FIELDS} tab-separated fields, got {len(fields)}", number)
        sentence_id, targets, worker, index, _, question, answer, *judgments = fields
        answers = [_token_range(path, number, answer, "answer")]
        for judgment in judgments:
            validator, colon, indices = judgment.partition(":")
            if not colon or not validator:
                raise DataFormatError(path, f"a validator judgment must be '<worker>:<token indices>', got {judgment!r}", number)
            answers.append(_token_range(path, number, indices, "validator judgment"))
        qid = f"{sentence_id}|{'-'.join(targets.split())}|{worker}|{index}"
        rows.append(_Row(number, qid, sentence_id, question, tuple(answers)))
    return rows


def _token_range(path: Path, number: int, text: str, what: str) -> tuple[int, int]:
    """The inclusive token range covering space-separated indices."""
    indices = text.split()
    if not indices or not all(index.isdigit() for index in indices):
        hint = " (only the filtered/ files hold answers in every judgment)" if what != "answer" else ""
        raise DataFormatError(path, f"{what} must be space-separated token indices, got {text!r}{hint}", number)
    values = [int(index) for index in indices]
    return min(values), max(values)


def _passage(document: str, order: list[str], tokens: dict[str, list[str]], rows: list[_Row], split: Split) -> Passage:
    """The document's sentences joined into one context, with its convertible questions."""
    token_spans: dict[str, list[Span]] = {}  # sentence -> inclusive char span of each token
    pieces: list[str] = []
    position = 0
    for sentence_id in order:
        spans = []
        for token in tokens[sentence_id]:
            if pieces:
                pieces.append(" ")
                position += 1
            spans.append((position, position + len(token) - 1))
            pieces.append(token)
            position += len(token)
        token_spans[sentence_id] = spans
    context = "".join(pieces)
    asked: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        asked[normalize_answer(row.question)].add(row.sentence_id)
    rank = {sentence_id: index for index, sentence_id in enumerate(order)}
    questions = []
    for row in sorted(rows, key=lambda row: (rank[row.sentence_id], row.number)):
        if len(asked[normalize_answer(row.question)]) > 1:
            split.dropped[AMBIGUOUS] += 1
            continue
        spans = token_spans[row.sentence_id]
        if any(last >= len(spans) for _, last in row.answers):
            split.dropped[OUTSIDE_SENTENCE] += 1
            continue
        found: dict[str, list[Span]] = {}
        votes: Counter[str] = Counter()
        for first, last in row.answers:
            span = (spans[first][0], spans[last][1])
            text = context[span[0] : span[1] + 1]
            votes[text] += 1
            located = found.setdefault(text, [])
            if span not in located:
                located.append(span)
        texts = sorted(found, key=lambda text: -votes[text])  # stable: ties keep the asker's answer first
        detected = [DetectedAnswer(text, tuple(found[text])) for text in texts]
        questions.append(Question(row.qid, row.question, texts, detected))
    return Passage(context=context, qas=questions, article=document)


@dataclass(frozen=True)
class QamrOptions:
    """What a spec sets for the qamr reader: the source holding the sentences the questions index into."""

    sentences: str


READER = ReaderKind(read_qamr, options=QamrOptions, companions=("sentences",))

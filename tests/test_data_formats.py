"""MRQA JSON lines and SQuAD JSON: reading, writing, and clear errors on bad files."""

import gzip
import json

import pytest

from concur.data.babi import read_babi
from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.mrqa import read_mrqa, write_mrqa
from concur.data.readers import detect_format, read_any
from concur.data.squad import UNLOCATED, read_squad
from concur.errors import DataFormatError
from concur.fsutil import md5_file
from tests.conftest import shared_file


def _split() -> Split:
    context = "Super Bowl 50 was played in Santa Clara, California."
    question = Question(
        "q1",
        "Where was it played?",
        ["Santa Clara", "Santa Clara, California"],
        [DetectedAnswer("Santa Clara", ((28, 38),)), DetectedAnswer("Santa Clara, California", ((28, 50),))],
    )
    return Split("Toy", "dev", [Passage(context, [question], article="Super_Bowl_50")])


def _write_lines(path, lines):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for line in lines:
            handle.write(line + "\n")


def test_mrqa_round_trip_is_exact_and_deterministic(tmp_path):
    split = _split()
    write_mrqa(split, tmp_path / "a.jsonl.gz")
    write_mrqa(split, tmp_path / "b.jsonl.gz")
    assert md5_file(tmp_path / "a.jsonl.gz") == md5_file(tmp_path / "b.jsonl.gz")
    again = read_mrqa(tmp_path / "a.jsonl.gz")
    assert again.passages == split.passages
    assert (again.dataset, again.split) == ("Toy", "dev")
    first, last = again.passages[0].qas[0].first_span
    assert again.passages[0].context[first : last + 1] == "Santa Clara"
    lines = gzip.open(tmp_path / "a.jsonl.gz", "rt").read().splitlines()
    assert json.loads(lines[0]) == {"header": {"dataset": "Toy", "split": "dev"}}
    assert json.loads(lines[1])["qas"][0]["detected_answers"][1]["char_spans"] == [[28, 50]]


def test_real_mrqa_squad_dev_counts():
    path = shared_file("mrqa/dev/SQuAD.jsonl.gz")
    assert md5_file(path) == "05f3f16c5c31ba8e46ff5fa80647ac46"
    split = read_mrqa(path)
    assert (split.dataset, split.split) == ("SQuAD", "dev")
    assert split.n_questions == 10_507
    assert split.n_passages == 2_067
    assert detect_format(path) == "mrqa"


def test_malformed_mrqa_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl.gz"
    good = json.dumps({"context": "abc", "qas": [{"qid": "1", "question": "q", "answers": ["a"]}]})
    _write_lines(path, ['{"header": {"dataset": "X", "split": "dev"}}', good, '{"context": "abc", "qas": [}'])
    with pytest.raises(DataFormatError) as info:
        read_mrqa(path)
    assert info.value.line == 3 and "bad.jsonl.gz, line 3" in str(info.value) and "invalid JSON" in str(info.value)


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"qas": []}, "missing or non-string field 'context'"),
        ({"context": "abc", "qas": [{"question": "q", "answers": []}]}, "missing field 'qid'"),
        (
            {
                "context": "abc",
                "qas": [{"qid": "7", "question": "q", "answers": ["a"], "detected_answers": [{"text": "a", "char_spans": [[2, 9]]}]}],
            },
            "outside the passage",
        ),
    ],
)
def test_invalid_mrqa_records(tmp_path, record, problem):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"header": {"dataset": "X"}}\n' + json.dumps(record) + "\n")
    with pytest.raises(DataFormatError, match=problem) as info:
        read_mrqa(path)
    assert info.value.line == 2


def test_empty_and_truncated_files(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(DataFormatError, match="empty"):
        read_mrqa(empty)
    full = tmp_path / "full.jsonl.gz"
    write_mrqa(Split("X", "dev", [_split().passages[0]] * 400), full)
    truncated = tmp_path / "truncated.jsonl.gz"
    truncated.write_bytes(full.read_bytes()[: full.stat().st_size // 2])
    with pytest.raises(DataFormatError, match="truncated, corrupt or not UTF-8 after line") as info:
        read_mrqa(truncated)
    assert "truncated.jsonl.gz" in str(info.value)


SQUAD_FIXTURE = {
    "version": "1.1",
    "data": [
        {
            "title": "Normans",
            "paragraphs": [
                {
                    "context": "The Normans were in Normandy. Normandy is in France.",
                    "qas": [
                        {
                            "id": "a",
                            "question": "Where were the Normans?",
                            "answers": [
                                {"text": "Normandy", "answer_start": 20},
                                {"text": "Normandy", "answer_start": 20},
                                {"text": "in Normandy", "answer_start": 17},
                            ],
                        },
                        {
                            "id": "b",
                            "question": "Where is Normandy?",
                            "answers": [{"text": "France", "answer_start": 43}],
                        },  # off by two: relocated to 45
                        {"id": "c", "question": "Who?", "answers": [{"text": "Vikings", "answer_start": 0}]},
                    ],
                }
            ],
        }
    ],
}


def test_squad_reader_groups_relocates_and_counts(tmp_path):
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(SQUAD_FIXTURE))
    split = read_squad(path, "train")
    assert split.n_questions == 3 and split.n_passages == 1
    passage = split.passages[0]
    assert passage.article == "Normans"
    a, b, c = passage.qas
    assert a.answers == ["Normandy", "in Normandy"]
    assert a.detected_answers == [DetectedAnswer("Normandy", ((20, 27),)), DetectedAnswer("in Normandy", ((17, 27),))]
    assert b.first_span == (45, 50) and passage.context[45:51] == "France"
    assert c.answers == ["Vikings"] and c.detected_answers == [] and c.first_span is None
    assert split.dropped == {UNLOCATED: 1}
    assert detect_format(path) == "squad"
    assert read_any(path).gold_answers() == {"a": ["Normandy", "in Normandy"], "b": ["France"], "c": ["Vikings"]}


def test_squad_reader_names_the_broken_field(tmp_path):
    broken = json.loads(json.dumps(SQUAD_FIXTURE))
    del broken["data"][0]["paragraphs"][0]["qas"][1]["id"]
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    with pytest.raises(DataFormatError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[1\]: missing or invalid field 'id'"):
        read_squad(path)
    not_squad = tmp_path / "list.json"
    not_squad.write_text("[1, 2]")
    with pytest.raises(DataFormatError, match="not SQuAD JSON"):
        read_squad(not_squad)


def test_real_xquad_subset_of_squad_dev():
    split = read_squad(shared_file("squad/xquad/xquad.en.json.gz"), "dev")
    assert split.n_questions == 1_190
    assert split.n_passages == 240
    assert len({passage.article for passage in split.passages}) == 48
    assert not split.dropped


@pytest.mark.parametrize("reader", [read_squad, read_babi])  # read_mrqa: test_empty_and_truncated_files
def test_readers_report_a_cut_off_gzip_stream(tmp_path, reader):
    lines = "".join(f"{i} Mary went to room {i * 7919 % 10007}.\n" for i in range(1, 5000)).encode()
    compressed = gzip.compress(lines)
    corrupt = tmp_path / "data.txt.gz"
    corrupt.write_bytes(compressed[: len(compressed) // 2])
    with pytest.raises(DataFormatError, match=r"data.txt.gz: .*(truncated|corrupt)"):
        reader(corrupt)


@pytest.mark.parametrize("reader", [read_squad, read_babi, read_mrqa])
def test_readers_report_text_that_is_not_utf8(tmp_path, reader):
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("1 Zo\xeb went to the caf\xe9.\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"latin1.txt(, line 1 column 5)?: .*UTF-8"):
        reader(latin1)

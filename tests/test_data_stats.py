"""Table 2 statistics: hand-counted tokens on a small split, and the command on real bAbI."""

import json

import pytest

from concur.data.model import DetectedAnswer, Passage, Question, Split
from concur.data.stats import split_stats
from tests.conftest import SHARED_DATA, shared_file


def small_split() -> Split:
    # passage 1: "Mary went to the kitchen ." -> 6 tokens; passage 2: "John's dog, Rex, sleeps." -> 7 tokens
    first = Passage(
        context="Mary went to the kitchen.",
        qas=[
            Question("q1", "Where is Mary?", ["the kitchen"], [DetectedAnswer("the kitchen", ((13, 23),))]),  # 4 tokens, answer 2
            Question("q2", "Who went?", ["Mary"], [DetectedAnswer("Mary", ((0, 3),))]),  # 3 tokens, answer 1
        ],
    )
    second = Passage(
        context="John's dog, Rex, sleeps.",
        # an accepted answer not in the passage and no span: its length still counts (3 tokens), it is not "found"
        qas=[Question("q3", "Whose dog sleeps?", ["John Smith's dog"], [])],  # 4 tokens
    )
    return Split("toy", "train", [first, second])


def test_split_stats_hand_counted():
    stats = split_stats(small_split())
    assert stats.questions == 3 and stats.passages == 2
    assert stats.question_tokens == pytest.approx((4 + 3 + 4) / 3)
    assert stats.passage_tokens == pytest.approx((6 + 7) / 2)
    assert stats.answer_tokens == pytest.approx((2 + 1 + 3) / 3)
    assert stats.answer_in_passage == pytest.approx(2 / 3)


def test_split_stats_of_an_empty_split_are_zero():
    stats = split_stats(Split("toy", "test", []))
    assert stats.as_dict() == {
        "questions": 0,
        "passages": 0,
        "question_tokens": 0.0,
        "passage_tokens": 0.0,
        "answer_tokens": 0.0,
        "answer_in_passage": 0.0,
    }


def test_data_stats_command_on_real_babi(concur, tmp_path):
    shared_file("babi")
    runs = str(tmp_path / "runs")
    result = concur("--runs-dir", runs, "data", "stats", "babi-1", "--format", "json", "--source-dir", str(SHARED_DATA))
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)["babi-1"]
    # bAbI task 1: 1,000 questions per split, one passage each; every question is "Where is <name>?" (4 tokens)
    assert stats["train"]["questions"] == stats["train"]["passages"] == 1000
    assert stats["test"]["questions"] == stats["test"]["passages"] == 1000
    assert stats["train"]["question_tokens"] == stats["test"]["question_tokens"] == 4.0
    assert stats["train"]["answer_tokens"] == 1.0 and stats["train"]["answer_in_passage"] == 1.0
    table = concur("--runs-dir", runs, "data", "stats", "babi-1", "--source-dir", str(SHARED_DATA))
    assert "100.0%" in table.stdout and "1,000" in table.stdout
    unknown = concur("--runs-dir", runs, "data", "stats", "babi-01")
    assert unknown.returncode == 2 and "unknown benchmark 'babi-01'" in unknown.stderr


def test_stats_of_a_test_only_set_read_only_its_own_source_and_write_nothing(concur, tmp_path):
    real = shared_file("squadshifts/new_wiki_v1.0.json.gz")  # the locator accepts a gzipped copy
    sources = tmp_path / "sources"  # holds the shift set only: SQuAD train, the benchmark's train source, is absent
    (sources / "squadshifts").mkdir(parents=True)
    (sources / "squadshifts" / real.name).symlink_to(real)
    runs = tmp_path / "runs"
    result = concur(
        "--runs-dir",
        str(runs),
        "data",
        "stats",
        "squadshifts-new-wiki",
        "--split",
        "test",
        "--format",
        "json",
        "--source-dir",
        str(sources),
    )
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)["squadshifts-new-wiki"]
    assert list(stats) == ["test"]
    assert stats["test"]["questions"] == 7938 and stats["test"]["passages"] == 1581  # Miller et al. 2020's new-wiki
    assert stats["test"]["answer_in_passage"] == 1.0
    assert not (runs / "data" / "squadshifts-new-wiki").exists()  # inspected, not prepared: no half benchmark on disk
    shown = concur(
        "--runs-dir",
        str(runs),
        "data",
        "show",
        "squadshifts-new-wiki",
        "--split",
        "test",
        "-n",
        "1",
        "--format",
        "json",
        "--source-dir",
        str(sources),
    )
    (example,) = json.loads(shown.stdout)
    assert example["passage"][example["span"][0] : example["span"][1] + 1] == example["span_text"]
    bad = concur("--runs-dir", str(runs), "data", "stats", "squadshifts-new-wiki", "--split", "dev", "--source-dir", str(sources))
    assert bad.returncode != 0 and "no split 'dev'; choose one of train, test" in bad.stderr


def test_sampled_examples_are_seeded_in_split_order_and_show_their_span():
    from concur.data.examples import sample_examples

    split = small_split()
    first, again = sample_examples(split, 2, 0), sample_examples(split, 2, 0)
    assert [example.qid for example in first] == [example.qid for example in again]
    assert {example.qid for example in sample_examples(split, 5, 0)} == {"q1", "q2", "q3"}  # all when asked for more
    qids = [example.qid for example in first]
    assert qids == sorted(qids) and len(set(qids)) == 2
    by_qid = {example.qid: example for example in sample_examples(split, 3, 0)}
    assert by_qid["q1"].span_text == "the kitchen" and by_qid["q3"].span_text is None
    assert any([e.qid for e in sample_examples(split, 2, seed)] != qids for seed in range(1, 10))  # seeds differ


def test_data_show_prints_examples_of_real_babi(concur, tmp_path):
    shared_file("babi")
    runs = str(tmp_path / "runs")
    shown = concur("--runs-dir", runs, "data", "show", "babi-1", "-n", "2", "--format", "json", "--source-dir", str(SHARED_DATA))
    examples = json.loads(shown.stdout)
    assert len(examples) == 2
    for example in examples:
        assert example["span_text"] in example["answers"]
        first, last = example["span"]
        assert example["passage"][first : last + 1] == example["span_text"]
    bad = concur("--runs-dir", runs, "data", "show", "babi-1", "--split", "dev", "--source-dir", str(SHARED_DATA))
    assert bad.returncode != 0 and "no split 'dev'; choose one of train, test" in bad.stderr

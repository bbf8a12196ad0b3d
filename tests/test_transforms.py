"""Downsampling and carving: exact counts, no overlap, seeded determinism."""

import pytest

from concur.data.model import Passage, Question, Split
from concur.data.transforms import carve, downsample
from concur.errors import ConcurError


def _split(passages: int = 10, per_passage: int = 3) -> Split:
    return Split(
        "Toy",
        "train",
        [
            Passage(f"context {p}", [Question(f"p{p}q{q}", "?", ["a"]) for q in range(per_passage)], article=f"doc{p // 2}")
            for p in range(passages)
        ],
    )


def _qids(split: Split) -> list[str]:
    return [question.qid for _, question in split.questions()]


def test_downsample_keeps_exact_count_grouped_in_original_order():
    whole = _split()
    small = downsample(whole, 7, seed=3)
    assert small.n_questions == 7
    qids = _qids(small)
    assert qids == [qid for qid in _qids(whole) if qid in set(qids)]  # original order
    for passage in small.passages:
        assert all(q.qid.startswith(passage.context.replace("context ", "p") + "q") for q in passage.qas)
    assert _qids(downsample(whole, 7, seed=3)) == qids
    assert _qids(downsample(whole, 7, seed=4)) != qids


def test_downsample_more_than_available_is_an_error():
    with pytest.raises(ConcurError, match="has 30"):
        downsample(_split(), 31, seed=0)


@pytest.mark.parametrize("by", ["context", "article"])
def test_carve_partitions_without_overlap(by):
    whole = _split()
    train, test = carve(whole, by=by, test_fraction=0.2, seed=1)
    assert sorted(_qids(train) + _qids(test)) == sorted(_qids(whole))
    assert not set(_qids(train)) & set(_qids(test))
    if by == "context":
        assert test.n_passages == 2
    else:
        assert {p.article for p in train.passages}.isdisjoint({p.article for p in test.passages})
        assert test.n_passages == 2  # one of five two-passage articles
    again = carve(whole, by=by, test_fraction=0.2, seed=1)
    assert _qids(again[1]) == _qids(test)


def test_carve_by_context_keeps_a_repeated_passage_text_on_one_side():
    whole = _split()
    whole.passages[7].context = whole.passages[2].context  # the source repeats a passage (SQuADShifts Reddit does)
    for seed in range(20):
        train, test = carve(whole, by="context", test_fraction=0.3, seed=seed)
        assert not {p.context for p in train.passages} & {p.context for p in test.passages}
        assert len({p.context for p in test.passages}) == 3  # round(0.3 * 9 distinct texts)
        assert train.n_questions + test.n_questions == 30


def test_carve_errors():
    with pytest.raises(ConcurError, match="carve by 'paragraph'"):
        carve(_split(), by="paragraph", test_fraction=0.2, seed=0)
    no_articles = Split("X", "dev", [Passage("c", [Question("q", "?", ["a"])])] * 4)
    with pytest.raises(ConcurError, match="no article id"):
        carve(no_articles, by="article", test_fraction=0.5, seed=0)
    with pytest.raises(ConcurError, match="leaves one side empty"):
        carve(_split(passages=2), by="context", test_fraction=0.1, seed=0)

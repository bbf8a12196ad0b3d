"""EM and F1 against values computed by hand with the official SQuAD v1.1 rules."""

import pytest

from concur.metrics import evaluate, exact_match, normalize_answer, token_f1


@pytest.mark.parametrize(
    ("text", "normalised"),
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("U.S.A.", "usa"),
        ("  an  apple\tand\na pear ", "apple and pear"),
        ("Anaconda theater", "anaconda theater"),  # articles only as whole words
        ("state-of-the-art", "stateoftheart"),  # punctuation goes before articles
        ("“Hello”", "“hello”"),  # typographic quotes are not ASCII punctuation
        ("the the the", ""),
    ],
)
def test_normalize_answer(text, normalised):
    assert normalize_answer(text) == normalised


@pytest.mark.parametrize(
    ("prediction", "gold", "em", "f1"),
    [
        ("The Eiffel Tower!", "eiffel tower", 1.0, 1.0),
        ("a cat and the hat", "cat hat", 0.0, 0.8),  # P = 2/3, R = 1
        ("new new york", "new york", 0.0, 0.8),  # repeated tokens count once per gold token
        ("state-of-the-art", "state of the art", 0.0, 0.0),
        ("the the the", "the", 1.0, 0.0),  # both normalise to "": official EM 1, F1 0
        ("Denver", "Denver Broncos", 0.0, 2 / 3),  # P = 1, R = 1/2
        ("“Hello”", "hello", 0.0, 0.0),
    ],
)
def test_exact_match_and_f1(prediction, gold, em, f1):
    assert exact_match(prediction, gold) == em
    assert token_f1(prediction, gold) == pytest.approx(f1)


def test_evaluate_takes_max_over_gold_and_counts_missing_and_extra():
    gold = {
        "q1": ["Denver Broncos", "Broncos"],
        "q2": ["cat hat"],
        "q3": ["Paris"],
    }
    predictions = {"q1": "the Broncos", "q2": "a cat and the hat", "unknown": "x"}
    scores = evaluate(gold, predictions)
    assert scores.exact_match == pytest.approx(100 / 3)
    assert scores.f1 == pytest.approx(100 * (1 + 0.8 + 0) / 3)
    assert scores.missing == ["q3"]
    assert scores.extra == ["unknown"]
    assert scores.n_gold == 3 and scores.n_predicted == 2
    assert scores.official() == {"exact_match": pytest.approx(33.3333333), "f1": pytest.approx(60.0)}


def test_evaluate_empty_gold_scores_zero():
    scores = evaluate({}, {"q": "a"})
    assert (scores.exact_match, scores.f1, scores.extra) == (0.0, 0.0, ["q"])

"""BiDAF++ (Clark & Gardner 2018): shapes, padding invariance, that it learns, and its spec."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.models.bidaf_pp import BidafPP, BidafPPApproach  # noqa: E402
from concur.registry import default_registry  # noqa: E402
from concur.registry.hparams import build_hparams  # noqa: E402
from tests.reader_stories import (  # noqa: E402
    LAST_SENTENCE_STORIES,
    assert_padding_does_not_change_the_scores,
    assert_scores_have_the_batchs_shape,
    fit_losses,
    story_data,
)


def small_hparams(**changes):
    spec = default_registry().approach("bidaf-pp")
    hp = build_hparams(spec.implementation, spec.hparams)
    small = dict(hidden_size=8, linear_size=12, char_dim=4, char_filters=6, char_kernel=3)
    return dataclasses.replace(hp, **{**small, **changes})


@pytest.fixture(scope="module")
def data():
    return story_data(14, 17)


def test_output_shapes(data):
    encoded, inputs = data
    torch.manual_seed(0)
    assert_scores_have_the_batchs_shape(BidafPP(small_hparams(), inputs), encoded)


def test_padding_does_not_change_the_scores(data):
    encoded, inputs = data
    torch.manual_seed(0)
    # question 2 has the shortest passage; question 1 the longest passage and question
    assert_padding_does_not_change_the_scores(BidafPP(small_hparams(), inputs), encoded, short=2, long=1, rtol=1e-5, atol=1e-5)


def test_a_few_steps_make_the_loss_fall(data):
    encoded, inputs = data
    torch.manual_seed(0)
    model = BidafPP(small_hparams(dropout=0.0), inputs)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batch = collate(encoded, list(range(len(LAST_SENTENCE_STORIES))), False)
    losses = fit_losses(model, batch, optimizer, 17)
    assert losses[-1] < 0.3 * losses[0]


def test_dropout_is_variational_and_off_in_eval(data):
    encoded, inputs = data
    torch.manual_seed(0)
    model = BidafPP(small_hparams(dropout=0.5), inputs)
    batch = collate(encoded, [0, 1], False)
    model.eval()
    first, second = model(batch), model(batch)
    torch.testing.assert_close(first.start, second.start)
    model.train()
    assert not torch.allclose(model(batch).start, model(batch).start)


def test_spec_validates_and_names_the_paper_settings():
    spec = default_registry().approach("bidaf-pp")
    assert spec.implementation == "bidaf-pp"
    hp = build_hparams(spec.implementation, spec.hparams)
    assert hp.problem() is None
    assert (hp.optimizer, hp.learning_rate, hp.batch_size, hp.ema_decay, hp.max_answer_length) == ("adadelta", 1.0, 45, 0.999, 17)
    assert (hp.hidden_size, hp.linear_size, hp.dropout) == (100, 200, 0.2)
    assert BidafPPApproach.model_class is BidafPP

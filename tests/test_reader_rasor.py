"""RaSoR: explicit span scores of the right shape, equal to the FFNN over [h_i; h_j], padding-independent, trainable."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch", reason="the reader models need PyTorch")

from concur.approaches.reader.batch import Batch, n_features  # noqa: E402
from concur.approaches.reader.hparams.rasor import RasorHParams  # noqa: E402
from concur.approaches.reader.inputs import ReaderInputs  # noqa: E402
from concur.approaches.reader.layers import MASKED, span_grid  # noqa: E402
from concur.approaches.reader.models.rasor import RaSoR, RasorApproach  # noqa: E402
from concur.registry.registry import default_registry  # noqa: E402
from tests.reader_stories import fit_losses  # noqa: E402

VOCABULARY, DIM, FEATURES = 30, 12, n_features(False)


def hparams(**overrides) -> RasorHParams:
    """The spec's hyperparameters with small sizes (and any overrides)."""
    spec = default_registry().approach("rasor")
    small = {"hidden_size": 8, "lstm_layers": 2, "ffnn_size": 10, "max_answer_length": 4, "dropout": 0.0}
    return RasorHParams(**{**spec.hparams, **small, **overrides})


def inputs() -> ReaderInputs:
    generator = torch.Generator().manual_seed(0)
    return ReaderInputs(
        vectors=torch.randn(VOCABULARY, DIM, generator=generator),
        n_tuned=2,
        n_chars=5,
        n_pos=4,
        n_ner=4,
        n_features=FEATURES,
        linguistic=False,
    )


def example(passage: int, question: int, seed: int) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "c_words": torch.randint(2, VOCABULARY, (passage,), generator=generator),
        "q_words": torch.randint(2, VOCABULARY, (question,), generator=generator),
        "start": torch.randint(0, passage - 1, (), generator=generator),
    }


def pad(examples: list[dict[str, torch.Tensor]]) -> Batch:
    """A padded batch of hand-made examples (answer: the two tokens from `start`)."""
    size = len(examples)
    width = max(len(e["c_words"]) for e in examples)
    q_width = max(len(e["q_words"]) for e in examples)

    def side(key: str, length: int) -> dict[str, torch.Tensor]:
        words = torch.zeros(size, length, dtype=torch.long)
        mask = torch.zeros(size, length, dtype=torch.bool)
        for row, e in enumerate(examples):
            n = len(e[key])
            words[row, :n], mask[row, :n] = e[key], True
        return {
            "words": words,
            "chars": torch.zeros(size, length, 1, dtype=torch.long),
            "pos": torch.zeros(size, length, dtype=torch.long),
            "ner": torch.zeros(size, length, dtype=torch.long),
            "features": torch.zeros(size, length, FEATURES),
            "mask": mask,
        }

    c, q = side("c_words", width), side("q_words", q_width)
    starts = torch.stack([e["start"] for e in examples])
    return Batch(**{f"c_{k}": v for k, v in c.items()}, **{f"q_{k}": v for k, v in q.items()}, starts=starts, ends=starts + 1)


def test_spans_have_one_score_per_start_and_length():
    hp = hparams()
    batch = pad([example(9, 4, seed=1), example(6, 3, seed=2), example(11, 5, seed=3)])
    logits = RaSoR(hp, inputs()).eval()(batch)
    assert logits.start is None and logits.end is None
    assert logits.spans.shape == (3, 11, hp.max_answer_length)
    assert torch.isfinite(logits.spans).all()


def test_span_scores_are_the_feed_forward_network_over_start_and_end_states():
    hp = hparams()
    model = RaSoR(hp, inputs()).eval()
    h = torch.randn(2, 7, model.passage_rnn.out_dim)
    fast = model.score_spans(model.span_start(h), model.span_end(h))
    first_layer = torch.cat([model.span_start.weight, model.span_end.weight], dim=1)  # W over [h_i; h_j]
    for i in range(7):
        for d in range(hp.max_answer_length):
            if i + d < 7:
                pair = torch.cat([h[:, i], h[:, i + d]], dim=-1)
                hidden = torch.relu(pair @ first_layer.T + model.span_start.bias)
                assert torch.allclose(fast[:, i, d], model.span_score(hidden).squeeze(-1), atol=1e-5)


def test_padding_does_not_change_a_questions_span_scores():
    hp = hparams()
    model = RaSoR(hp, inputs()).eval()
    short = example(6, 3, seed=4)
    with torch.no_grad():
        alone = span_grid(model(pad([short])), pad([short]).c_mask, hp.max_answer_length)
        padded_batch = pad([short, example(13, 7, seed=5)])
        padded = span_grid(model(padded_batch), padded_batch.c_mask, hp.max_answer_length)
    assert torch.allclose(alone[0], padded[0, :6], atol=1e-5)
    assert (padded[0, 6:] == MASKED).all()
    assert (alone[0, 5, 1:] == MASKED).all() and (alone[0, 5, 0] > MASKED).all()  # spans past the passage end


def test_a_few_dozen_steps_fit_eight_examples():
    torch.manual_seed(0)
    hp = hparams()
    model = RaSoR(hp, inputs())
    batch = pad([example(8 + k % 4, 3 + k % 3, seed=10 + k) for k in range(8)])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = fit_losses(model, batch, optimizer, hp.max_answer_length)
    assert losses[-1] < 0.3 * losses[0]


def test_spec_validates_and_names_the_approach_class():
    spec = default_registry().approach("rasor")
    assert spec.implementation == "rasor"
    hp = RasorHParams(**spec.hparams)
    assert hp.problem() is None
    assert (hp.hidden_size, hp.lstm_layers, hp.max_answer_length, hp.tune_top_k) == (50, 2, 30, 0)
    assert spec.model["linguistic_features"] is False
    assert RasorApproach.model_class is RaSoR
    assert dataclasses.replace(hp, ffnn_size=0).problem() == ("ffnn_size", "must be at least 1")

"""Mnemonic Reader: shapes, padding invariance, that it learns, its specs, and a with-features run end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from concur.approaches.base import RunContext, build_approach  # noqa: E402
from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.encode import EncodedSplit  # noqa: E402
from concur.approaches.reader.models.mnemonic_reader import SFU, CharBiLSTM, MnemonicReader, PointerScorer  # noqa: E402
from concur.data.babi import read_babi  # noqa: E402
from concur.data.model import Split  # noqa: E402
from concur.registry.hparams import build_hparams  # noqa: E402
from concur.registry.registry import default_registry  # noqa: E402
from tests.conftest import shared_file  # noqa: E402
from tests.reader_stories import (  # noqa: E402, F401
    assert_padding_does_not_change_the_scores,
    assert_scores_have_the_batchs_shape,
    fit_losses,
    one_thread,
    tiny_split,
    tiny_story_model,
)
from tests.spacy_pipeline import build_babi_pipeline  # noqa: E402

APPROACH = "mnemonic-reader"
pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = {"hidden_size": 8, "char_dim": 4, "char_hidden_size": 4, "pos_dim": 3, "ner_dim": 3, "hops": 2, "pointer_hops": 2}


def small_hparams(**overrides):
    spec = default_registry().approach(APPROACH)
    return build_hparams(spec.implementation, {**spec.hparams, **SMALL, "dropout": 0.0, **overrides})


def tiny_model(linguistic: bool = False, **overrides) -> tuple[MnemonicReader, EncodedSplit]:
    return tiny_story_model(MnemonicReader, small_hparams(**overrides), linguistic)


def test_output_shapes():
    assert_scores_have_the_batchs_shape(*tiny_model())


def test_linguistic_features_add_tag_embeddings():
    plain, _ = tiny_model(linguistic=False)
    tagged, data = tiny_model(linguistic=True)
    assert not hasattr(plain, "pos_embedding") and tagged.pos_embedding.num_embeddings == 5
    assert tagged(collate(data, [0, 1], linguistic=True)).start.shape[0] == 2


def test_padding_does_not_change_a_questions_scores():
    # the shortest passage and question, then the longest of both
    assert_padding_does_not_change_the_scores(*tiny_model(), short=0, long=2, rtol=1e-4, atol=1e-5)


def one_word_passage(batch, row: int):
    """Cut the passage of `row` to its first word (padding the rest)."""
    for name in ("c_words", "c_chars", "c_pos", "c_ner", "c_features", "c_mask"):
        getattr(batch, name)[row, 1:] = 0
    return batch


def test_a_one_word_passage_is_scored_the_same_alone_and_padded():
    # the self alignment excludes each word itself; a one-word passage has nothing else to attend to
    model, data = tiny_model()
    model.eval()
    alone = model(one_word_passage(collate(data, [0], linguistic=False), 0))
    padded = model(one_word_passage(collate(data, [2, 0], linguistic=False), 1))
    torch.testing.assert_close(padded.start[1, :1], alone.start[0, :1], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(padded.end[1, :1], alone.end[0, :1], rtol=1e-4, atol=1e-5)


def test_a_few_dozen_steps_on_eight_examples_make_the_loss_fall():
    model, data = tiny_model()
    hp = small_hparams()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(data, np.arange(8), linguistic=False)
    model.train()
    losses = fit_losses(model, batch, optimizer, hp.max_answer_length)
    assert losses[-1] < 0.3 * losses[0], losses


def test_sfu_keeps_the_input_where_the_gate_is_closed():
    sfu = SFU(4, 6)
    with torch.no_grad():
        sfu.gate.weight.zero_()
        sfu.gate.bias.fill_(-50.0)
    x = torch.randn(2, 3, 4)
    torch.testing.assert_close(sfu(x, torch.randn(2, 3, 6)), x)


def _values_and_gradients(module: torch.nn.Module, outputs: torch.Tensor, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    weights = torch.randn(outputs.shape, generator=torch.Generator().manual_seed(1))
    return [outputs, *torch.autograd.grad((outputs * weights).sum(), [*inputs, *module.parameters()])]


def test_sfu_fuses_an_alignment_as_over_the_concatenated_input():
    torch.manual_seed(0)
    sfu = SFU(4, 12)
    x, attended = torch.randn(2, 3, 4, requires_grad=True), torch.randn(2, 3, 4, requires_grad=True)
    by_blocks = _values_and_gradients(sfu, sfu.fuse_alignment(x, attended), [x, attended])
    both = torch.cat([x, attended, x * attended, x - attended], dim=-1)
    gate = torch.sigmoid(sfu.gate(both))  # the unit's definition, written out
    expected = _values_and_gradients(sfu, gate * torch.tanh(sfu.compose(both)) + (1 - gate) * x, [x, attended])
    for ours, theirs in zip(by_blocks, expected, strict=True):
        torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("training", [True, False])
def test_pointer_scores_as_over_the_concatenated_input(training):
    torch.manual_seed(0)
    scorer = PointerScorer(4, 5, dropout=0.0).train(training)
    c, z = torch.randn(2, 3, 4, requires_grad=True), torch.randn(2, 4, requires_grad=True)
    by_blocks = _values_and_gradients(scorer, scorer(c, z), [c, z])
    tokens = z.unsqueeze(1).expand_as(c)
    written_out = scorer.out(torch.tanh(scorer.hidden(torch.cat([c, tokens, c * tokens], dim=-1)))).squeeze(-1)
    for ours, theirs in zip(by_blocks, _values_and_gradients(scorer, written_out, [c, z]), strict=True):
        torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("approach_id", [APPROACH, f"{APPROACH}-nofeat"])
def test_the_specs_validate(approach_id):
    spec = default_registry().approach(approach_id)
    assert spec.implementation == "mnemonic-reader"
    hp = build_hparams(spec.implementation, spec.hparams)
    assert hp.problem() is None and hp.hops >= 1 and hp.reattention_gamma >= 0
    assert spec.model["linguistic_features"] is (approach_id == APPROACH)


def test_with_features_trains_and_answers_every_question_of_real_babi(tmp_path, monkeypatch):
    pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]'); the with-features run needs it")
    monkeypatch.delenv("CONCUR_VECTORS", raising=False)
    source = read_babi(shared_file("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt.gz"), "train")
    train = Split(source.dataset, "train", source.passages[:24])
    test = Split(source.dataset, "test", source.passages[24:32])
    pipeline = build_babi_pipeline(tmp_path / "babi_rules")
    spec = default_registry().approach(APPROACH)
    spec = dataclasses.replace(spec, model={**spec.model, "spacy_pipeline": str(pipeline), "offline_vectors": "random", "word_dim": 8})
    approach = build_approach(spec, {**spec.hparams, **SMALL, "epochs": 2.0, "batch_size": 8})
    lines: list[str] = []
    context = RunContext(device="cpu", seed=0, log=lines.append)
    report = approach.train(train, context)
    assert report.train_questions == 24 and report.details["tagger"].startswith("en_babi_rules")
    assert approach._model.linguistic and approach._model.pos_embedding.num_embeddings > 2
    predictions = approach.predict(test, context)
    questions = {question.qid: passage.context for passage, question in test.questions()}
    assert predictions.keys() == questions.keys()
    assert all(answer and answer in questions[qid] for qid, answer in predictions.items())


def test_char_bilstm_gives_the_final_states_of_a_packed_bidirectional_lstm():
    torch.manual_seed(5)
    encoder = CharBiLSTM(n_chars=9, char_dim=3, hidden=4, dropout=0.0)
    torch.manual_seed(5)  # the same draws: the embedding, then the weights of bidirectional=True
    embedding = torch.nn.Embedding(9, 3, padding_idx=0)
    lstm = torch.nn.LSTM(3, 4, batch_first=True, bidirectional=True)
    chars = torch.zeros(2, 3, 6, dtype=torch.long)
    for (row, word), length in zip([(0, 0), (0, 1), (1, 0)], [6, 2, 4]):
        chars[row, word, :length] = torch.randint(1, 9, (length,))
    flat = chars.view(6, 6)[[0, 1, 3]]
    packed = torch.nn.utils.rnn.pack_padded_sequence(embedding(flat), torch.tensor([6, 2, 4]), batch_first=True, enforce_sorted=False)
    final = lstm(packed)[1][0]
    expected = torch.zeros(2, 3, 8)
    expected.view(6, 8)[[0, 1, 3]] = torch.cat([final[0], final[1]], dim=-1)
    torch.testing.assert_close(encoder(chars)[0], expected, atol=1e-6, rtol=1e-5)

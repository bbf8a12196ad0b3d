"""FusionNet: shapes, padding invariance, that it learns, its specs, and a with-features run end to end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from concur.approaches.base import RunContext, build_approach  # noqa: E402
from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.encode import EncodedSplit  # noqa: E402
from concur.approaches.reader.models.fusionnet import FullyAwareAttention, FusionNet  # noqa: E402
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

APPROACH = "fusionnet"
pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = {"hidden_size": 6, "attention_size": 8, "cove_hidden_size": 5, "cove_layers": 2, "pos_dim": 3, "ner_dim": 3}


def small_hparams(**overrides):
    spec = default_registry().approach(APPROACH)
    return build_hparams(spec.implementation, {**spec.hparams, **SMALL, "dropout": 0.0, **overrides})


def tiny_model(linguistic: bool = False, **overrides) -> tuple[FusionNet, EncodedSplit]:
    return tiny_story_model(FusionNet, small_hparams(**overrides), linguistic)


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


def test_a_few_dozen_steps_on_eight_examples_make_the_loss_fall():
    model, data = tiny_model()
    hp = small_hparams()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = collate(data, np.arange(8), linguistic=False)
    model.train()
    losses = fit_losses(model, batch, optimizer, hp.max_answer_length)
    assert losses[-1] < 0.3 * losses[0], losses


def test_fully_aware_attention_scores_relu_u_x_d_relu_u_y():
    attention = FullyAwareAttention(5, 4, dropout=0.0)
    with torch.no_grad():
        attention.diagonal.copy_(torch.tensor([0.5, 2.0, 1.0, 3.0]))
    x, y = torch.randn(1, 3, 5), torch.randn(1, 4, 5)
    mask = torch.tensor([[True, True, True, False]])
    weights = attention(x, y, torch.eye(4).unsqueeze(0), mask)  # attending one-hot values gives the weights
    u = attention.project.weight
    scores = (torch.relu(x @ u.T) * attention.diagonal) @ torch.relu(y @ u.T).transpose(1, 2)
    expected = torch.softmax(scores.masked_fill(~mask.unsqueeze(1), float("-inf")), dim=2)
    torch.testing.assert_close(weights, expected)
    # the form is symmetric: scoring y against x gives the transposed scores
    back = attention(y, x, torch.eye(3).unsqueeze(0), torch.ones(1, 3, dtype=torch.bool))
    torch.testing.assert_close(back, torch.softmax(scores.transpose(1, 2), dim=2))


@pytest.mark.parametrize("approach_id", [APPROACH, f"{APPROACH}-nofeat"])
def test_the_specs_validate(approach_id):
    spec = default_registry().approach(approach_id)
    assert spec.implementation == "fusionnet"
    hp = build_hparams(spec.implementation, spec.hparams)
    assert hp.problem() is None and hp.cove_layers >= 1
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

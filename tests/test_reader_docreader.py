"""DrQA's Document Reader: start/end logits of the right shape, padding-independent, trainable, with and
without POS/NER/lemma features, and the with-features approach end to end through a real spaCy pipeline."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the reader models need PyTorch")

from concur.approaches.base import RunContext, build_approach  # noqa: E402
from concur.approaches.reader.batch import Batch, n_features  # noqa: E402
from concur.approaches.reader.hparams.docreader import DocReaderHParams  # noqa: E402
from concur.approaches.reader.inputs import ReaderInputs  # noqa: E402
from concur.approaches.reader.models.docreader import DocReader, DocReaderApproach  # noqa: E402
from concur.data.babi import read_babi  # noqa: E402
from concur.errors import ModelUnavailableError  # noqa: E402
from concur.registry.registry import default_registry  # noqa: E402
from concur.registry.specs import ApproachSpec  # noqa: E402
from tests.conftest import write_babi_like  # noqa: E402
from tests.reader_stories import fit_losses  # noqa: E402
from tests.spacy_pipeline import build_babi_pipeline  # noqa: E402

VOCABULARY, DIM, N_POS, N_NER = 30, 12, 7, 5
SMALL = {"hidden_size": 8, "layers": 2, "dropout": 0.0}


def hparams(**overrides) -> DocReaderHParams:
    spec = default_registry().approach("docreader")
    return DocReaderHParams(**{**spec.hparams, **SMALL, **overrides})


def inputs(linguistic: bool) -> ReaderInputs:
    generator = torch.Generator().manual_seed(0)
    return ReaderInputs(
        vectors=torch.randn(VOCABULARY, DIM, generator=generator),
        n_tuned=10,
        n_chars=5,
        n_pos=N_POS,
        n_ner=N_NER,
        n_features=n_features(linguistic),
        linguistic=linguistic,
    )


def example(passage: int, question: int, seed: int, linguistic: bool = True) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    start = torch.randint(0, passage - 1, (), generator=generator)
    return {
        "c_words": torch.randint(2, VOCABULARY, (passage,), generator=generator),
        "c_pos": torch.randint(1, N_POS, (passage,), generator=generator) if linguistic else torch.zeros(passage, dtype=torch.long),
        "c_ner": torch.randint(1, N_NER, (passage,), generator=generator) if linguistic else torch.zeros(passage, dtype=torch.long),
        "c_features": torch.rand(passage, n_features(linguistic), generator=generator).round(),
        "q_words": torch.randint(2, VOCABULARY, (question,), generator=generator),
        "start": start,
    }


def pad(examples: list[dict[str, torch.Tensor]]) -> Batch:
    """A padded batch of hand-made examples (answer: the two tokens from `start`)."""
    size = len(examples)
    width = max(len(e["c_words"]) for e in examples)
    q_width = max(len(e["q_words"]) for e in examples)
    columns = examples[0]["c_features"].shape[1]
    c = {
        "words": torch.zeros(size, width, dtype=torch.long),
        "pos": torch.zeros(size, width, dtype=torch.long),
        "ner": torch.zeros(size, width, dtype=torch.long),
        "features": torch.zeros(size, width, columns),
        "mask": torch.zeros(size, width, dtype=torch.bool),
    }
    q = {"words": torch.zeros(size, q_width, dtype=torch.long), "mask": torch.zeros(size, q_width, dtype=torch.bool)}
    for row, e in enumerate(examples):
        n, m = len(e["c_words"]), len(e["q_words"])
        for key in ("words", "pos", "ner", "features"):
            c[key][row, :n] = e[f"c_{key}"]
        c["mask"][row, :n] = True
        q["words"][row, :m], q["mask"][row, :m] = e["q_words"], True
    starts = torch.stack([e["start"] for e in examples])
    return Batch(
        c_words=c["words"],
        c_chars=torch.zeros(size, width, 1, dtype=torch.long),
        c_pos=c["pos"],
        c_ner=c["ner"],
        c_features=c["features"],
        c_mask=c["mask"],
        q_words=q["words"],
        q_chars=torch.zeros(size, q_width, 1, dtype=torch.long),
        q_pos=torch.zeros(size, q_width, dtype=torch.long),
        q_ner=torch.zeros(size, q_width, dtype=torch.long),
        q_features=torch.zeros(size, q_width, columns),
        q_mask=q["mask"],
        starts=starts,
        ends=starts + 1,
    )


@pytest.mark.parametrize("linguistic", [True, False], ids=["features", "nofeat"])
def test_start_and_end_logits_per_passage_token(linguistic):
    batch = pad([example(9, 4, seed=1, linguistic=linguistic), example(6, 3, seed=2, linguistic=linguistic)])
    logits = DocReader(hparams(), inputs(linguistic)).eval()(batch)
    assert logits.spans is None
    assert logits.start.shape == logits.end.shape == (2, 9)
    assert torch.isfinite(logits.start).all() and torch.isfinite(logits.end).all()


def test_tags_are_read_only_with_linguistic_features():
    batch = pad([example(9, 4, seed=3)])
    retagged = dataclasses.replace(batch, c_pos=(batch.c_pos % (N_POS - 1)) + 1, c_ner=torch.ones_like(batch.c_ner))
    for linguistic, changes in ((True, True), (False, False)):
        torch.manual_seed(0)
        model = DocReader(hparams(), inputs(linguistic)).eval()
        expected = 2 * DIM + n_features(linguistic) + ((N_POS - 2) + (N_NER - 2) if linguistic else 0)
        assert model.paragraph_rnn.layers[0][0].input_size == expected
        if not linguistic:  # the -nofeat batch has 3 feature columns
            batch = dataclasses.replace(batch, c_features=batch.c_features[..., :3])
            retagged = dataclasses.replace(retagged, c_features=retagged.c_features[..., :3])
        with torch.no_grad():
            before, after = model(batch).start, model(retagged).start
        assert (not torch.allclose(before, after)) == changes


def test_tags_are_one_hot_without_padding_or_unknown_bits():
    model = DocReader(hparams(), inputs(True))
    one_hot = model.tags(torch.tensor([[0, 1, 2, 6]]), N_POS)
    assert one_hot.tolist() == [[[0] * 5, [0] * 5, [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]]


@pytest.mark.parametrize("linguistic", [True, False], ids=["features", "nofeat"])
def test_padding_does_not_change_a_questions_scores(linguistic):
    model = DocReader(hparams(), inputs(linguistic)).eval()
    short = example(6, 3, seed=4, linguistic=linguistic)
    with torch.no_grad():
        alone = model(pad([short]))
        padded = model(pad([short, example(13, 7, seed=5, linguistic=linguistic)]))
    assert torch.allclose(alone.start[0], padded.start[0, :6], atol=1e-5)
    assert torch.allclose(alone.end[0], padded.end[0, :6], atol=1e-5)


def test_a_few_dozen_steps_fit_eight_examples():
    torch.manual_seed(0)
    hp = hparams()
    model = DocReader(hp, inputs(True))
    batch = pad([example(8 + k % 4, 3 + k % 3, seed=10 + k) for k in range(8)])
    optimizer = torch.optim.Adamax(model.parameters(), lr=2e-2)
    losses = fit_losses(model, batch, optimizer, hp.max_answer_length)
    assert losses[-1] < 0.3 * losses[0]


@pytest.mark.parametrize("approach_id, linguistic", [("docreader", True), ("docreader-nofeat", False)])
def test_specs_validate(approach_id, linguistic):
    spec = default_registry().approach(approach_id)
    assert spec.implementation == "docreader"
    hp = DocReaderHParams(**spec.hparams)
    assert hp.problem() is None
    assert (hp.hidden_size, hp.layers, hp.tune_top_k, hp.max_answer_length, hp.batch_size) == (128, 3, 1000, 15, 32)
    assert spec.model["linguistic_features"] is linguistic
    assert spec.model.get("spacy_pipeline") == ("en_core_web_sm" if linguistic else None)
    assert DocReaderApproach.model_class is DocReader
    assert dataclasses.replace(hp, layers=0).problem() == ("layers", "must be at least 1")


# --- the approach end to end ---------------------------------------------------------------


def small_spec(approach_id: str, **model) -> ApproachSpec:
    """The spec with random word vectors (no download) and `model` overrides of its [model] table."""
    spec = default_registry().approach(approach_id)
    return dataclasses.replace(spec, model={**spec.model, "offline_vectors": "random", "word_dim": 16, **model})


def small_hparams(approach_id: str) -> dict:
    return {**default_registry().approach(approach_id).hparams, **SMALL, "epochs": 2.0, "batch_size": 8}


def context(tmp_path: Path, lines: list[str]) -> RunContext:
    return RunContext(device="cpu", seed=0, log=lines.append)


@pytest.fixture(scope="module")
def babi(tmp_path_factory):
    directory = tmp_path_factory.mktemp("babi-like")
    train = read_babi(write_babi_like(directory / "qa1_train.txt", stories=12, seed=21), "train")
    test = read_babi(write_babi_like(directory / "qa1_test.txt", stories=4, seed=22), "test")
    return train, test


def test_with_features_trains_through_the_approach_on_a_spacy_pipeline(tmp_path, babi):
    pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]')")
    train, test = babi
    pipeline = build_babi_pipeline(tmp_path / "babi_rules")
    approach = build_approach(small_spec("docreader", spacy_pipeline=str(pipeline)), small_hparams("docreader"))
    assert isinstance(approach, DocReaderApproach)
    lines: list[str] = []
    report = approach.train(train, context(tmp_path, lines))
    assert report.details["tagger"] == "en_babi_rules 1.0.0"
    assert report.train_questions == train.n_questions and report.optimizer_steps == 2 * -(-train.n_questions // 8)
    assert all(loss == loss for loss in report.losses)  # no NaN
    model = approach._model
    assert model.linguistic and model.paragraph_rnn.layers[0][0].input_size > 2 * 16 + n_features(True)
    predictions = approach.predict(test, context(tmp_path, lines))
    assert set(predictions) == {question.qid for _, question in test.questions()}
    assert all(isinstance(answer, str) and answer for answer in predictions.values())


def test_with_features_without_its_pipeline_package_says_how_to_download_it(tmp_path, babi):
    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]')")
    if spacy.util.is_package("en_core_web_sm"):
        pytest.skip("en_core_web_sm is installed here, so the spec's pipeline is not missing")
    approach = build_approach(small_spec("docreader"), small_hparams("docreader"))
    with pytest.raises(ModelUnavailableError) as caught:
        approach.train(babi[0], context(tmp_path, []))
    message = str(caught.value)
    assert "'docreader'" in message and "python -m spacy download en_core_web_sm" in message and "-nofeat" in message


def test_with_features_without_its_pipeline_directory_names_it(tmp_path, babi):
    pytest.importorskip("spacy", reason="spaCy is not installed (pip install 'concur[features]')")
    missing = tmp_path / "no" / "pipeline"
    approach = build_approach(small_spec("docreader", spacy_pipeline=str(missing)), small_hparams("docreader"))
    with pytest.raises(ModelUnavailableError) as caught:
        approach.train(babi[0], context(tmp_path, []))
    message = str(caught.value)
    assert "'docreader'" in message and str(missing) in message and "spacy download" in message and "-nofeat" in message


def test_with_features_without_spacy_names_the_extra_and_nofeat_still_trains(tmp_path, babi, monkeypatch):
    monkeypatch.setitem(sys.modules, "spacy", None)  # as if spaCy were not installed
    with_features = build_approach(small_spec("docreader"), small_hparams("docreader"))
    with pytest.raises(ModelUnavailableError) as caught:
        with_features.train(babi[0], context(tmp_path, []))
    assert "concur[features]" in str(caught.value) and "-nofeat" in str(caught.value)

    train, test = babi
    nofeat = build_approach(small_spec("docreader-nofeat"), small_hparams("docreader-nofeat"))
    report = nofeat.train(train, context(tmp_path, []))
    assert report.details["tagger"] is None and report.train_questions == train.n_questions
    assert nofeat._model.paragraph_rnn.layers[0][0].input_size == 2 * 16 + n_features(False)
    predictions = nofeat.predict(test, context(tmp_path, []))
    assert len(predictions) == test.n_questions

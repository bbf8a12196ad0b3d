"""BiDAF's and QANet's embedding layers run once per distinct word of a batch, with the values and gradients of running them per token."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.models.bidaf import BiDAF  # noqa: E402
from concur.approaches.reader.models.qanet import QANet  # noqa: E402
from concur.registry import default_registry  # noqa: E402
from concur.registry.hparams import build_hparams  # noqa: E402
from tests.reader_stories import story_data  # noqa: E402

ENCODED, INPUTS = story_data(14, 17)
CHARS = dict(char_dim=4, char_filters=6, char_kernel=3)
# model class, its spec, small sizes, the dropout rates of its embedding layer, the module reading the embeddings
READERS = {
    "bidaf": (BiDAF, "bidaf", dict(hidden_size=8, **CHARS), ("dropout",), "contextual"),
    "qanet": (
        QANet,
        "qanet",
        dict(hidden_size=8, embedding_encoder_convs=1, model_encoder_blocks=1, model_encoder_convs=1, attention_heads=2, **CHARS),
        ("word_dropout", "char_dropout"),
        "embedding_encoder",
    ),
}


def small_model(reader: str, dropout: float) -> torch.nn.Module:
    model_class, spec_id, small, rates, _ = READERS[reader]
    spec = default_registry().approach(spec_id)
    hp = build_hparams(spec.implementation, spec.hparams)
    torch.manual_seed(0)
    return model_class(dataclasses.replace(hp, **small, **dict.fromkeys(rates, dropout)), INPUTS)


def embeddings(reader: str, model: torch.nn.Module, batch) -> tuple[torch.Tensor, torch.Tensor]:
    """The passage's and the question's embeddings of one forward pass, caught where the model reads them."""
    seen = []
    hook = getattr(model, READERS[reader][4]).register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    model(batch)
    hook.remove()
    return seen[0], seen[1]


def per_token(model: torch.nn.Module, words: torch.Tensor, chars: torch.Tensor) -> torch.Tensor:
    """The embedding layer as the papers state it: character CNN, word vector and highway for every token on its own."""
    rows = [model.embed(word.view(1), spelling.view(1, -1)) for word, spelling in zip(words.view(-1), chars.view(-1, chars.shape[-1]))]
    return torch.cat(rows).view(*words.shape, -1)


@pytest.mark.parametrize("reader", READERS)
def test_the_embedding_of_each_distinct_word_equals_the_per_token_one_with_its_gradients(reader):
    model = small_model(reader, dropout=0.0)
    batch = collate(ENCODED, [0, 1, 2], False)
    c, q = embeddings(reader, model, batch)
    expected_c, expected_q = per_token(model, batch.c_words, batch.c_chars), per_token(model, batch.q_words, batch.q_chars)
    torch.testing.assert_close(c, expected_c, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(q, expected_q, atol=1e-6, rtol=1e-5)
    weights = torch.randn_like(c), torch.randn_like(q)
    parameters = [p for p in model.parameters() if p.requires_grad]
    ours = torch.autograd.grad(sum((x * w).sum() for x, w in zip((c, q), weights)), parameters, allow_unused=True)
    theirs = torch.autograd.grad(sum((x * w).sum() for x, w in zip((expected_c, expected_q), weights)), parameters, allow_unused=True)
    assert sum(g is not None for g in ours) >= 5  # character embedding and CNN, highway (and QANet's projection)
    for mine, reference in zip(ours, theirs, strict=True):
        assert (mine is None) == (reference is None)
        if mine is not None:
            torch.testing.assert_close(mine, reference, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("reader", READERS)
def test_in_training_a_words_repeats_share_their_embedding_dropout(reader):
    model = small_model(reader, dropout=0.5)
    model.train()
    batch = collate(ENCODED, [0, 1, 2], False)
    c, q = embeddings(reader, model, batch)
    vectors = {}
    for words, chars, embedded in ((batch.c_words, batch.c_chars, c), (batch.q_words, batch.q_chars, q)):
        for word, spelling, vector in zip(words.view(-1), chars.view(-1, chars.shape[-1]), embedded.view(-1, c.shape[-1])):
            key = (int(word), tuple(int(x) for x in spelling if x))
            vectors.setdefault(key, []).append(vector)
    repeated = [copies for key, copies in vectors.items() if key[0] != 0 and len(copies) > 1]
    assert len(repeated) >= 5  # the stories repeat their names and places
    for copies in repeated:
        for copy in copies[1:]:
            assert torch.equal(copy, copies[0])
    model.eval()  # and dropout did act: the eval embeddings differ
    assert not torch.equal(embeddings(reader, model, batch)[0], c)

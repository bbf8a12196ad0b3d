"""BiDAF's embedding layer runs once per distinct word of a batch, with the values and gradients of running it per token."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.models.bidaf import BiDAF  # noqa: E402
from concur.registry import default_registry  # noqa: E402
from concur.registry.hparams import build_hparams  # noqa: E402
from tests.reader_stories import story_data  # noqa: E402


def small_model(dropout: float) -> BiDAF:
    spec = default_registry().approach("bidaf")
    hp = build_hparams(spec.implementation, spec.hparams)
    small = dict(hidden_size=8, char_dim=4, char_filters=6, char_kernel=3, dropout=dropout)
    torch.manual_seed(0)
    return BiDAF(dataclasses.replace(hp, **small), INPUTS)


ENCODED, INPUTS = story_data(14, 17)


def per_token(model: BiDAF, words: torch.Tensor, chars: torch.Tensor) -> torch.Tensor:
    """The embedding layer as the paper states it: character CNN, word vector and highway for every token on its own."""
    rows = [model.embed(word.view(1), spelling.view(1, -1)) for word, spelling in zip(words.view(-1), chars.view(-1, chars.shape[-1]))]
    return torch.cat(rows).view(*words.shape, -1)


def test_the_embedding_of_each_distinct_word_equals_the_per_token_one_with_its_gradients():
    model = small_model(dropout=0.0)
    batch = collate(ENCODED, [0, 1, 2], False)
    # the forward pass's embeddings, caught at the contextual BiLSTM's input
    seen = []
    model.contextual.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    model(batch)
    c, q = seen
    expected_c, expected_q = per_token(model, batch.c_words, batch.c_chars), per_token(model, batch.q_words, batch.q_chars)
    torch.testing.assert_close(c, expected_c, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(q, expected_q, atol=1e-6, rtol=1e-5)
    weights = torch.randn_like(c), torch.randn_like(q)
    embedding = [model.char_cnn, model.highway]
    ours = torch.autograd.grad(sum((x * w).sum() for x, w in zip((c, q), weights)), [p for m in embedding for p in m.parameters()])
    theirs = torch.autograd.grad(
        sum((x * w).sum() for x, w in zip((expected_c, expected_q), weights)), [p for m in embedding for p in m.parameters()]
    )
    for mine, reference in zip(ours, theirs, strict=True):
        torch.testing.assert_close(mine, reference, atol=1e-5, rtol=1e-4)


def test_in_training_a_words_repeats_share_their_character_dropout():
    model = small_model(dropout=0.5)
    model.train()
    batch = collate(ENCODED, [0, 1, 2], False)
    seen = []
    model.contextual.register_forward_pre_hook(lambda module, args: seen.append(args[0]))
    model(batch)
    c, q = seen
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
    # and dropout did act: the training output differs from the eval one
    model.eval()
    seen.clear()
    model(batch)
    assert not torch.equal(seen[0], c)

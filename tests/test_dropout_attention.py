"""concur's CPU dropout and training attention compute what PyTorch's do, from seeded bulk masks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from transformers import BertConfig, BertForQuestionAnswering

from concur.approaches.dropout import FastDropout, dropout, keep_mask, scaled_keep_mask, use_fast_dropout
from concur.approaches.hf_span import attention


def test_the_keep_rate_is_one_minus_p_and_a_seed_fixes_the_mask():
    torch.manual_seed(0)
    mask = keep_mask((1000, 1000), 0.1)
    # a million Bernoulli(0.9) draws: the standard deviation of their mean is 0.0003
    assert abs(mask.float().mean().item() - 0.9) < 0.0015
    torch.manual_seed(0)
    assert torch.equal(keep_mask((1000, 1000), 0.1), mask)
    assert not torch.equal(keep_mask((1000, 1000), 0.1), mask)  # the generator moved on
    assert keep_mask((7, 3), 0.0).all() and keep_mask((5,), 0.5).shape == (5,)


def test_dropout_scales_the_kept_elements_and_its_gradient_is_the_same_mask():
    x = torch.randn(4, 33, requires_grad=True)
    torch.manual_seed(5)
    y = dropout(x, 0.25, training=True)
    torch.manual_seed(5)
    mask = keep_mask(x.shape, 0.25)
    assert torch.equal(y, x.detach() * mask * (1 / 0.75))
    y.sum().backward()
    assert torch.equal(x.grad, mask * (1 / 0.75))
    assert dropout(x, 0.25, training=False) is x
    assert dropout(x, 0.0, training=True) is x
    assert torch.equal(dropout(x, 1.0, training=True), torch.zeros_like(x))


def test_a_scale_is_folded_into_the_mask_in_training_and_applied_alone_outside_it():
    x = torch.randn(5, 8, requires_grad=True)
    torch.manual_seed(3)
    y = dropout(x, 0.2, training=True, scale=4.0)
    torch.manual_seed(3)
    mask = keep_mask(x.shape, 0.2)
    torch.testing.assert_close(y, x.detach() * mask * (4.0 / 0.8))
    y.sum().backward()
    torch.testing.assert_close(x.grad, mask * (4.0 / 0.8))
    assert torch.equal(dropout(x, 0.2, training=False, scale=4.0), x * 4.0)
    assert torch.equal(dropout(x, 0.0, training=True, scale=0.5), x * 0.5)
    under_autocast = dropout(x.detach().bfloat16(), 0.2, training=True)
    assert under_autocast.dtype == torch.bfloat16  # the mask takes the input's dtype


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_the_scaled_mask_written_as_bits_is_the_boolean_mask_converted_and_scaled(dtype):
    for value in (1 / 0.9, 4.0 / 0.8 / 0.7, 2.0):
        torch.manual_seed(11)
        expected = keep_mask((6, 35), 0.3).to(dtype) * torch.tensor(value, dtype=dtype)
        torch.manual_seed(11)
        mask = scaled_keep_mask((6, 35), 0.3, value, dtype)
        assert mask.dtype == dtype and mask.shape == (6, 35) and torch.equal(mask, expected)
        assert set(mask.unique().tolist()) == {0.0, torch.tensor(value, dtype=dtype).item()}


def tiny_bert(seed: int = 0, **config: float) -> BertForQuestionAnswering:
    torch.manual_seed(seed)
    settings = dict(vocab_size=50, hidden_size=16, num_hidden_layers=3, num_attention_heads=2, intermediate_size=32)
    model = BertForQuestionAnswering(BertConfig(**settings, **config))
    model.set_attn_implementation("sdpa")
    return model


def test_every_dropout_module_is_replaced_and_prediction_is_unchanged():
    model = tiny_bert().eval()
    inputs = {"input_ids": torch.randint(0, 50, (3, 11)), "attention_mask": torch.ones(3, 11, dtype=torch.long)}
    inputs["attention_mask"][1, 7:] = 0
    before = model(**inputs).start_logits
    # BERT: one after the embeddings, and per layer one for attention probabilities, one after attention, one after the FFN
    assert use_fast_dropout(model) == 1 + 3 * 3
    assert not any(type(module) is nn.Dropout for module in model.modules())
    assert all(module.p == 0.1 for module in model.modules() if isinstance(module, FastDropout))
    model.set_attn_implementation(attention.register())
    assert torch.allclose(model(**inputs).start_logits, before, atol=1e-6)


def reference_attention(query, key, value, mask, p, seed):
    """Attention as written in the papers, with the mask concur's dropout draws for `seed`."""
    scores = query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    probabilities = torch.softmax(scores, dim=-1)
    torch.manual_seed(seed)
    kept = keep_mask(probabilities.shape, p)
    return (probabilities * kept / (1 - p) @ value).transpose(1, 2)


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_training_attention_on_the_cpu_matches_the_formula_in_values_and_gradients(p):
    module = nn.Module()  # what transformers passes: the attention layer (concur reads is_causal from it)
    torch.manual_seed(1)
    q, k, v = (torch.randn(2, 3, 6, 4, requires_grad=True) for _ in range(3))
    mask = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    mask[1, :, :, 4:] = False  # padding masks keys
    torch.manual_seed(7)
    ours, weights = attention.attention_forward(module, q, k, v, mask, dropout=p)
    ours.sum().backward()
    ours_grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    expected = reference_attention(q, k, v, mask, p, seed=7)
    expected.sum().backward()
    assert weights is None and ours.shape == (2, 6, 3, 4)
    assert torch.allclose(ours, expected, atol=1e-6)
    assert all(torch.allclose(a, t.grad, atol=1e-5) for a, t in zip(ours_grads, (q, k, v)))


def test_without_dropout_it_is_pytorchs_sdpa():
    module = nn.Module()
    q, k, v = (torch.randn(2, 3, 6, 4) for _ in range(3))
    mask = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    mask[0, :, :, 5:] = False
    ours, _ = attention.attention_forward(module, q, k, v, mask, dropout=0.0)
    expected = nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask).transpose(1, 2)
    assert torch.allclose(ours, expected, atol=1e-6)


def test_a_model_trains_the_same_way_with_either_attention_when_dropout_is_off():
    """With no attention dropout both paths are SDPA; with it, concur's differs from PyTorch's only in its masks."""
    losses = {}
    for name in ("sdpa", attention.register()):
        model = tiny_bert(attention_probs_dropout_prob=0.0, hidden_dropout_prob=0.0)
        model.set_attn_implementation(name)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        inputs = {"input_ids": torch.arange(30).view(3, 10) % 50, "start_positions": torch.tensor([1, 2, 3])}
        inputs["end_positions"] = inputs["start_positions"] + 1
        run = []
        for _ in range(3):
            loss = model(**inputs).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            run.append(loss.item())
        losses[name] = run
    assert losses["sdpa"] == pytest.approx(losses[attention.NAME], abs=1e-6)
    assert losses["sdpa"][-1] < losses["sdpa"][0]


def test_where_its_first_16_bits_tie_with_the_threshold_an_element_is_decided_by_16_more():
    """The mask compares a 32-bit number with p * 2^32, drawing the lower half only where the upper half ties."""
    n, p = 2_000_000, 0.1  # threshold 429,496,730 = 6,553 * 2^16 + 39,322: about 30 ties among 2M elements
    high, low = divmod(round(p * 2**32), 2**16)
    torch.manual_seed(4)
    mask = keep_mask((n,), p).numpy()
    torch.manual_seed(4)
    generator = np.random.SFC64(int(torch.randint(2**62, (1,)).item()))  # the mask's seed, as it draws it
    upper = generator.random_raw(n // 4).view(np.uint16)
    ties = np.flatnonzero(upper == high)
    lower = generator.random_raw((len(ties) + 3) // 4).view(np.uint16)[: len(ties)]
    assert 10 < len(ties) < 60
    untied = np.ones(n, dtype=bool)
    untied[ties] = False
    assert np.array_equal(mask[untied], upper[untied] > high)
    assert np.array_equal(mask[ties], lower >= low)
    assert 0 < mask[ties].sum() < len(ties)  # both outcomes occur among the ties
    assert not keep_mask((4, 4), 1.0).any()

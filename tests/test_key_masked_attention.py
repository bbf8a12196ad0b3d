"""The CPU attention QANet trains with: SDPA's values and gradients, and bf16 under autocast."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from concur.approaches.reader import key_masked_attention as attention
from concur.approaches.reader.key_masked_attention import key_masked_attention


def _inputs(dtype: torch.dtype) -> tuple[list[torch.Tensor], torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(3, 2, 5, 4, generator=generator, dtype=torch.float64).to(dtype).requires_grad_() for _ in range(3))
    keys = torch.tensor([[True] * 5, [True, True, True, False, False], [True, False, False, False, False]])
    grad = torch.randn(3, 2, 5, 4, generator=generator, dtype=torch.float64).to(dtype)
    return [q, k, v], keys, grad


def _run(attend, dtype: torch.dtype, autocast: bool = False) -> list[torch.Tensor]:
    (q, k, v), keys, grad = _inputs(dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        out = attend(q, k, v, keys)
    out.backward(grad)
    return [out, q.grad, k.grad, v.grad]


def _sdpa(q, k, v, keys):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=keys[:, None, None, :])


@pytest.mark.parametrize("rows_per_chunk", [1, 4, 6])  # of the 3 x 2 (batch x head) rows: six chunks, two (one short), one
def test_values_and_gradients_are_sdpas_in_float64(monkeypatch, rows_per_chunk):
    monkeypatch.setattr(attention, "SCORES_BYTES_PER_CHUNK", rows_per_chunk * 5 * 5 * 8)  # 5 x 5 float64 scores a row
    for ours, theirs in zip(_run(key_masked_attention, torch.float64), _run(_sdpa, torch.float64), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)


def test_prediction_keeps_nothing_and_gives_the_training_passs_values():
    (q, k, v), keys, _ = _inputs(torch.float32)
    for autocast in (False, True):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            trained = key_masked_attention(q, k, v, keys)
            with torch.inference_mode():
                predicted = key_masked_attention(q, k, v, keys)
        assert trained.grad_fn is not None and not predicted.requires_grad
        assert predicted.dtype == trained.dtype == (torch.bfloat16 if autocast else torch.float32)
        torch.testing.assert_close(predicted, trained.detach(), rtol=0, atol=0)


def test_masked_keys_get_no_weight_and_no_gradient():
    (q, k, v), keys, grad = _inputs(torch.float64)
    out = key_masked_attention(q, k, v, keys)
    moved = v.detach().clone()
    moved[1, :, 3:] += 100.0  # values behind the mask
    torch.testing.assert_close(key_masked_attention(q, k, moved, keys), out)
    out.backward(grad)
    assert k.grad[1, :, 3:].abs().sum() == 0 and v.grad[2, :, 1:].abs().sum() == 0
    assert k.grad[1, :, :3].abs().sum() > 0


def test_under_bf16_autocast_it_runs_in_bf16_within_its_rounding():
    ours = _run(key_masked_attention, torch.float32, autocast=True)
    exact = _run(_sdpa, torch.float64)
    assert ours[0].dtype == torch.bfloat16
    assert all(grad.dtype == torch.float32 for grad in ours[1:])  # gradients reach fp32 leaves as fp32
    for approximate, value in zip(ours, exact, strict=True):
        assert (approximate.double() - value).abs().max() <= 0.03 * value.abs().max()


def test_score_rows_are_padded_to_a_multiple_of_32_keys_only_where_that_adds_at_most_a_tenth():
    assert [attention.score_columns(n) for n in (189, 150, 400, 30, 32, 64)] == [192, 160, 416, 32, 32, 64]
    assert [attention.score_columns(n) for n in (133, 97, 5, 1)] == [133, 97, 5, 1]  # 160, 128, 32, 32 would add more


@pytest.mark.parametrize("rows_per_chunk", [1, 5, 8])
def test_with_padded_keys_values_and_gradients_are_still_sdpas(monkeypatch, rows_per_chunk):
    monkeypatch.setattr(attention, "SCORES_BYTES_PER_CHUNK", rows_per_chunk * 30 * 32 * 8)  # 30 x 32 float64 scores a row
    assert attention.score_columns(30) == 32  # two padding keys
    generator = torch.Generator().manual_seed(1)
    keys = torch.ones(4, 30, dtype=torch.bool)
    keys[1, 20:] = False
    keys[3, 1:] = False

    def run(attend):
        q, k, v = (torch.randn(4, 2, 30, 4, generator=generator.manual_seed(i), dtype=torch.float64).requires_grad_() for i in range(3))
        out = attend(q, k, v, keys)
        out.backward(torch.randn(out.shape, generator=generator.manual_seed(9), dtype=torch.float64))
        return [out, q.grad, k.grad, v.grad]

    for ours, theirs in zip(run(key_masked_attention), run(_sdpa), strict=True):
        assert ours.shape == (4, 2, 30, 4)
        torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)

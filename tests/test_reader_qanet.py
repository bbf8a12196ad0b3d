"""QANet (Yu et al. 2018): shapes, padding invariance, stochastic depth, that it learns, and its spec."""

from __future__ import annotations

import dataclasses

import pytest

torch = pytest.importorskip("torch")

from concur.approaches.reader.batch import collate  # noqa: E402
from concur.approaches.reader.models.qanet import EncoderStack, QANet, QANetApproach, depthwise_over_time, position_encoding  # noqa: E402
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
    spec = default_registry().approach("qanet")
    hp = build_hparams(spec.implementation, spec.hparams)
    small = dict(
        hidden_size=16,
        char_dim=4,
        char_filters=6,
        char_kernel=3,
        embedding_encoder_convs=2,
        model_encoder_blocks=2,
        model_encoder_convs=1,
        attention_heads=2,
    )
    return dataclasses.replace(hp, **{**small, **changes})


@pytest.fixture(scope="module")
def data():
    return story_data(16, 30)


def test_output_shapes(data):
    encoded, inputs = data
    torch.manual_seed(0)
    assert_scores_have_the_batchs_shape(QANet(small_hparams(), inputs), encoded)


def test_padding_does_not_change_the_scores(data):
    encoded, inputs = data
    torch.manual_seed(0)
    # question 2 has the shortest passage; question 1 the longest passage and question
    assert_padding_does_not_change_the_scores(QANet(small_hparams(), inputs), encoded, short=2, long=1, rtol=1e-5, atol=1e-5)


def test_a_few_steps_make_the_loss_fall(data):
    encoded, inputs = data
    torch.manual_seed(0)
    model = QANet(small_hparams(dropout=0.0, word_dropout=0.0, char_dropout=0.0, layer_survival=1.0), inputs)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    batch = collate(encoded, list(range(len(LAST_SENTENCE_STORIES))), False)
    losses = fit_losses(model, batch, optimizer, 30)
    assert losses[-1] < 0.3 * losses[0]


def test_under_bf16_autocast_the_scores_follow_fp32s_and_the_loss_falls(data):
    encoded, inputs = data
    torch.manual_seed(0)
    model = QANet(small_hparams(dropout=0.0, word_dropout=0.0, char_dropout=0.0, layer_survival=1.0), inputs)
    batch = collate(encoded, [1, 2], False)  # question 2's passage and question are padded
    with torch.no_grad():
        exact = model(batch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            rounded = model(batch)
    for ours, theirs in ((rounded.start, exact.start), (rounded.end, exact.end)):
        assert (ours.float() - theirs).abs().max() <= 0.05 * theirs.abs().max()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    batch = collate(encoded, list(range(len(LAST_SENTENCE_STORIES))), False)
    losses = fit_losses(model, batch, optimizer, 30, bf16=True)
    assert losses[-1] < 0.3 * losses[0]


def test_stochastic_depth_survival_decays_linearly_to_the_last_sublayer():
    stack = EncoderStack(blocks=2, dim=8, convs=2, kernel=3, heads=2, dropout=0.0, final_survival=0.9)
    # 2 blocks x (2 convolutions + attention + feed-forward) = 8 sub-layers: p_l = 1 - l / 8 * 0.1
    assert stack.survival == pytest.approx([1 - layer / 8 * 0.1 for layer in range(1, 9)])
    x, mask = torch.randn(3, 5, 8), torch.ones(3, 5, dtype=torch.bool)
    stack.eval()
    torch.testing.assert_close(stack(x, mask), stack(x, mask))
    stack.train()
    torch.manual_seed(0)
    outputs = [stack(x, mask) for _ in range(20)]
    assert any(not torch.allclose(outputs[0], other) for other in outputs[1:])


def test_a_surviving_sublayer_is_scaled_by_its_survival_rate_in_training():
    stack = EncoderStack(blocks=1, dim=8, convs=1, kernel=3, heads=2, dropout=0.0, final_survival=0.5).train()
    x, mask = torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.bool)
    torch.manual_seed(0)  # draws 0.50, 0.77, 0.09: the second sub-layer (survival 2/3) is skipped
    out = stack(x, mask)
    torch.manual_seed(0)  # without dropout, the survival draws are the only random numbers
    expected = x + position_encoding(5, 8, x.device)
    for f, survival in zip(stack.blocks[0].sublayers(mask), stack.survival):
        if torch.rand(()).item() < survival:
            expected = expected + f(expected) / survival
    torch.testing.assert_close(out, expected)
    assert stack.survival == pytest.approx([1 - layer / 3 * 0.5 for layer in range(1, 4)])


def test_position_encoding_is_sinusoidal():
    encoding = position_encoding(6, 8, torch.device("cpu"))
    assert encoding.shape == (6, 8)
    torch.testing.assert_close(encoding[0], torch.tensor([0.0, 1.0] * 4))
    torch.testing.assert_close(encoding[3, 0], torch.sin(torch.tensor(3.0)))
    torch.testing.assert_close(encoding[3, 1], torch.cos(torch.tensor(3.0)))
    assert position_encoding(4, 7, torch.device("cpu")).shape == (4, 7)


def test_spec_validates_and_names_the_paper_settings():
    spec = default_registry().approach("qanet")
    assert spec.implementation == "qanet"
    hp = build_hparams(spec.implementation, spec.hparams)
    assert hp.problem() is None
    assert (hp.optimizer, hp.learning_rate, hp.beta1, hp.beta2, hp.epsilon) == ("adam", 0.001, 0.8, 0.999, 1e-7)
    assert (hp.warmup_steps, hp.ema_decay, hp.weight_decay, hp.batch_size) == (1000, 0.9999, 3e-7, 32)
    assert (hp.hidden_size, hp.attention_heads, hp.model_encoder_blocks, hp.embedding_encoder_kernel) == (128, 8, 7, 7)
    assert QANetApproach.model_class is QANet
    bad = dataclasses.replace(hp, attention_heads=3)
    assert bad.problem() == ("attention_heads", "must divide hidden_size")


def test_the_depthwise_convolution_over_time_equals_the_conv1d_over_transposed_channels():
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(6, 6, 5, padding=2, groups=6, bias=False)
    x = torch.randn(2, 9, 6, requires_grad=True)
    ours = depthwise_over_time(conv, x)
    (ours * torch.arange(6.0)).sum().backward()
    grads = x.grad.clone(), conv.weight.grad.clone()
    x.grad, conv.weight.grad = None, None
    theirs = conv(x.transpose(1, 2)).transpose(1, 2)
    (theirs * torch.arange(6.0)).sum().backward()
    assert ours.shape == (2, 9, 6) and ours.is_contiguous()
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(grads, (x.grad, conv.weight.grad))


def test_under_bf16_autocast_on_the_cpu_the_depthwise_convolution_runs_in_fp32():
    """oneDNN's bf16 depthwise convolution is 2.5x slower than its fp32 one on the CPU; fp32 is also exact."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(6, 6, 5, padding=2, groups=6, bias=False)
    x = torch.randn(2, 9, 6)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under_autocast = depthwise_over_time(conv, x)
        from_bf16_input = depthwise_over_time(conv, x.bfloat16())
    assert under_autocast.dtype == torch.float32 and torch.equal(under_autocast, depthwise_over_time(conv, x))
    assert torch.equal(from_bf16_input, depthwise_over_time(conv, x.bfloat16().float()))

"""The readers' shared layers: masking, embeddings, encoders, attentions and span scoring, against hand or brute-force values."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from concur.approaches.dropout import dropout as bulk_dropout
from concur.approaches.reader.layers import (
    MASKED,
    AttentionFlow,
    BiRNN,
    CharCNN,
    Highway,
    SelfAttention,
    SequenceDropout,
    SpanLogits,
    TrilinearSimilarity,
    WordEmbedding,
    best_spans,
    distinct_rows,
    masked_softmax,
    per_distinct_token,
    per_distinct_word,
    reverse_within,
    span_grid,
    span_loss,
    split_by_length,
)
from concur.approaches.reader.models.mnemonic_reader import CharBiLSTM

torch.set_num_threads(1)


def lengths_mask(lengths: list[int], width: int) -> torch.Tensor:
    return torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)


def log_softmax_list(values: list[float]) -> list[float]:
    top = max(values)
    total = math.log(sum(math.exp(v - top) for v in values)) + top
    return [v - total for v in values]


# --- masked softmax -----------------------------------------------------------------------------


def test_masked_softmax_is_a_distribution_over_the_unmasked_positions():
    logits = torch.tensor([[1.0, 2.0, 50.0, 0.0], [3.0, -7.0, 9.0, 1.0]])
    mask = torch.tensor([[True, True, False, True], [True, False, False, False]])
    probabilities = masked_softmax(logits, mask)
    total = math.exp(1) + math.exp(2) + math.exp(0)
    expected = torch.tensor([[math.exp(1) / total, math.exp(2) / total, 0.0, 1 / total], [1.0, 0.0, 0.0, 0.0]])
    torch.testing.assert_close(probabilities, expected)
    assert probabilities[~mask].abs().max() == 0
    torch.testing.assert_close(probabilities.sum(dim=-1), torch.ones(2))
    log = masked_softmax(logits, mask, log=True)
    torch.testing.assert_close(log[mask].exp(), expected[mask])
    assert bool((log[~mask] < -1e29).all())


def test_masked_softmax_over_another_dimension_and_in_fp32():
    logits = torch.randn(2, 3, 5, dtype=torch.bfloat16)
    mask = lengths_mask([2, 5], 5).unsqueeze(1).expand(2, 3, 5).transpose(1, 2)  # (2, 5, 3): mask along dim 1
    probabilities = masked_softmax(logits.transpose(1, 2), mask, dim=1)
    assert probabilities.dtype == torch.float32
    torch.testing.assert_close(probabilities.sum(dim=1), torch.ones(2, 3))
    assert probabilities[0, 2:].abs().max() == 0


# --- word embeddings ----------------------------------------------------------------------------


def make_vectors(rows: int = 6, dim: int = 3) -> torch.Tensor:
    return torch.arange(1, rows * dim + 1, dtype=torch.float32).reshape(rows, dim)


def test_word_embedding_looks_up_rows_and_zeroes_padding():
    vectors = make_vectors()
    embedding = WordEmbedding(vectors, n_tuned=3)
    assert embedding.dim == 3
    out = embedding(torch.tensor([[0, 1, 2, 3, 5], [5, 4, 0, 0, 1]]))
    expected = vectors[torch.tensor([[0, 1, 2, 3, 5], [5, 4, 0, 0, 1]])]
    expected[0, 0] = expected[1, 2] = expected[1, 3] = 0
    torch.testing.assert_close(out, expected)
    assert vectors[0].abs().sum() > 0  # the caller's tensor is not changed


def test_only_the_first_n_tuned_rows_are_parameters_and_get_gradients():
    embedding = WordEmbedding(make_vectors(), n_tuned=3)
    assert [(name, tuple(p.shape)) for name, p in embedding.named_parameters()] == [("tuned", (3, 3))]
    assert not embedding.fixed.requires_grad and tuple(embedding.fixed.shape) == (3, 3)
    assert set(embedding.state_dict()) == {"tuned", "fixed"}
    ids = torch.tensor([[1, 2, 3, 5, 1]])
    weights = torch.arange(15, dtype=torch.float32).reshape(1, 5, 3)
    (embedding(ids) * weights).sum().backward()
    expected = torch.zeros(3, 3)
    expected[1] = weights[0, 0] + weights[0, 4]
    expected[2] = weights[0, 1]
    torch.testing.assert_close(embedding.tuned.grad, expected)
    fixed_before = embedding.fixed.clone()
    optimiser = torch.optim.SGD(embedding.parameters(), lr=0.1)
    optimiser.step()
    torch.testing.assert_close(embedding.fixed, fixed_before)


def test_the_padding_row_gets_no_gradient_so_it_stays_zero():
    embedding = WordEmbedding(make_vectors(), n_tuned=3)
    embedding(torch.tensor([[2, 0, 0]])).sum().backward()
    assert embedding.tuned.grad[0].abs().sum() == 0


def test_extend_appends_fixed_rows_that_forward_returns():
    vectors = make_vectors()
    embedding = WordEmbedding(vectors, n_tuned=2)
    new = torch.tensor([[-1.0, -2.0, -3.0], [0.5, 0.25, 0.125]], dtype=torch.float64)
    embedding.extend(new)
    assert tuple(embedding.fixed.shape) == (6, 3) and embedding.fixed.dtype == torch.float32
    assert "fixed" in dict(embedding.named_buffers()) and len(list(embedding.parameters())) == 1
    out = embedding(torch.tensor([[6, 7, 1, 4]]))
    torch.testing.assert_close(out[0, :2], new.float())
    torch.testing.assert_close(out[0, 2:], vectors[torch.tensor([1, 4])])


def test_all_rows_tuned_then_extended():
    vectors = make_vectors(4)
    embedding = WordEmbedding(vectors, n_tuned=4)
    assert embedding.fixed.shape[0] == 0
    torch.testing.assert_close(embedding(torch.tensor([[3, 1]])), vectors[torch.tensor([3, 1])].unsqueeze(0))
    embedding.extend(torch.ones(1, 3))
    torch.testing.assert_close(embedding(torch.tensor([[4, 3]])), torch.stack([torch.ones(3), vectors[3]]).unsqueeze(0))


# --- character CNN and highway ------------------------------------------------------------------


@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_char_cnn_shape_and_independence_from_padding(kernel):
    torch.manual_seed(0)
    cnn = CharCNN(n_chars=12, char_dim=4, filters=6, kernel=kernel)
    chars = torch.tensor([[[3, 4, 5, 0, 0, 0], [7, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]])
    (out,) = cnn(chars)
    assert out.shape == (1, 3, 6) and cnn.out_dim == 6
    assert out[0, 2].abs().sum() == 0  # a padding token
    wider = torch.nn.functional.pad(chars, (0, 5))  # the same words in a wider character grid
    torch.testing.assert_close(cnn(wider)[0], out)
    (alone,) = cnn(chars[:, :1])  # a word's vector does not depend on its neighbours
    torch.testing.assert_close(alone[0, 0], out[0, 0])


@pytest.mark.parametrize("kernel", [3, 4])
def test_char_cnn_keeps_the_word_width_as_same_padding_does_without_a_warning(kernel):
    torch.manual_seed(0)
    cnn = CharCNN(n_chars=12, char_dim=4, filters=6, kernel=kernel)
    chars = torch.randint(1, 12, (2, 3, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # PyTorch warns for an even kernel with padding="same"
        (pooled,) = cnn(chars)
    embedded = cnn.embedding(chars.reshape(6, 7)).transpose(1, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same = F.conv1d(embedded, cnn.conv.weight, cnn.conv.bias, padding="same")
    torch.testing.assert_close(pooled, F.relu(same).amax(dim=-1).reshape(2, 3, 6))


@pytest.mark.parametrize(
    "make",
    [lambda: CharCNN(n_chars=12, char_dim=4, filters=6, kernel=5), lambda: CharBiLSTM(n_chars=12, char_dim=4, hidden=3, dropout=0.0)],
    ids=["cnn", "bilstm"],
)
def test_character_encoders_read_each_distinct_word_once_with_the_same_values_and_gradients(make):
    torch.manual_seed(0)
    encoder = make()
    chars = torch.randint(1, 12, (2, 5, 7)) * (torch.arange(7) < 4)  # words of four characters
    chars[0, 2, 2:] = 0  # a shorter word
    chars[1, 3] = chars[0, 1]  # a repeated word
    chars[1, 4] = 0  # padding
    (out,) = encoder(chars)
    expected = torch.stack([encoder.encode(word.view(1, 7))[0] for word in chars.view(10, 7)]).view(2, 5, -1)  # every token on its own
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(out[1, 3], out[0, 1])
    assert out[1, 4].abs().sum() == 0
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    once = [p.grad.clone() for p in encoder.parameters()]
    encoder.zero_grad()
    (expected * weights).sum().backward()
    for ours, theirs in zip(once, (p.grad for p in encoder.parameters()), strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-5)


def test_distinct_rows_are_torch_uniques_rows_in_its_order_with_the_same_inverse():
    generator = torch.Generator().manual_seed(0)
    rows = torch.randint(0, 3, (400, 5), generator=generator) * torch.tensor([1, 1, 100, 300, 70000])  # ids past one byte
    rows[7] = rows[3]
    words, which = distinct_rows(rows)
    expected_words, expected_which = torch.unique(rows, dim=0, return_inverse=True)
    assert torch.equal(words, expected_words) and torch.equal(which, expected_which)
    assert words.dtype == rows.dtype and which.dtype == torch.int64
    assert torch.equal(words[which], rows) and which[7] == which[3]
    empty_words, empty_which = distinct_rows(rows[:0])
    assert empty_words.shape == (0, 5) and empty_which.shape == (0,)


def test_passage_and_question_words_are_encoded_once_together_short_ones_in_a_narrower_grid():
    calls = []

    def encode(words):
        calls.append(words.tolist())
        return words.sum(dim=1, keepdim=True).float()

    passage = torch.tensor([[[3, 4, 0], [5, 0, 0], [0, 0, 0]]])  # "ab", "c", padding
    question = torch.tensor([[[5, 0], [3, 4], [6, 6]]])  # a narrower grid: "c", "ab", "dd"
    c, q = per_distinct_word([passage, question], encode)
    # four distinct words of 0, 1, 2 and 2 characters: a grid of 1 x 1 and one of 3 x 2 (6 cells + 1) beat 4 x 3
    assert calls == [[[0]], [[5, 0], [3, 4], [6, 6]]]
    assert c.tolist() == [[[7.0], [5.0], [0.0]]] and q.tolist() == [[[5.0], [7.0], [12.0]]]


def test_tokens_are_encoded_once_per_distinct_word_id_and_spelling():
    calls = []

    def encode(ids, chars):
        calls.append((ids.tolist(), chars.tolist()))
        return (10 * ids + chars.sum(dim=1)).unsqueeze(1).float()

    passage_ids, passage = torch.tensor([[2, 3, 0]]), torch.tensor([[[3, 4, 0], [5, 0, 0], [0, 0, 0]]])  # "ab", "c", padding
    question_ids, question = torch.tensor([[3, 2, 1]]), torch.tensor([[[5, 0], [3, 4], [3, 4]]])  # "c", "ab", and "ab" as id 1
    c, q = per_distinct_token([passage_ids, question_ids], [passage, question], encode)
    # id 1 spelled "ab" is its own word; "ab" as id 2 and "c" as id 3 are each encoded once for both texts
    assert calls == [([0, 1, 2, 3], [[0, 0, 0], [3, 4, 0], [3, 4, 0], [5, 0, 0]])]
    assert c.tolist() == [[[27.0], [35.0], [0.0]]] and q.tolist() == [[[35.0], [27.0], [17.0]]]


def test_split_by_length_cuts_the_short_words_grid_where_the_cells_are_fewest():
    lengths = torch.tensor([3, 12, 2, 4, 3, 16, 5, 3])
    words = (torch.arange(16) < lengths.unsqueeze(1)) * torch.arange(1, 9).unsqueeze(1)  # word i: its length in copies of i + 1
    groups, rank = split_by_length(words)
    # sorted lengths 2 3 3 3 4 5 12 16: six words up to 5 characters in 6 x 5, two in 2 x 16 (62 cells, against 128)
    assert [group.shape for group in groups] == [(6, 5), (2, 16)]
    stacked = torch.cat([F.pad(group, (0, 16 - group.shape[1])) for group in groups])
    assert torch.equal(stacked[rank], words)
    single, rank = split_by_length(words[:1])
    assert [group.shape for group in single] == [(1, 3)] and rank.tolist() == [0]


def test_highway_carries_or_transforms_by_its_gate():
    x = torch.tensor([[[1.0, -2.0, 3.0]]])
    highway = Highway(3, layers=2)
    assert highway(x).shape == (1, 1, 3)
    with torch.no_grad():
        for transform, gate in zip(highway.transforms, highway.gates):
            transform.weight.copy_(torch.eye(3))
            transform.bias.zero_()
            gate.weight.zero_()
            gate.bias.fill_(-100.0)  # g ~ 0: y = x
    torch.testing.assert_close(highway(x), x)
    with torch.no_grad():
        for gate in highway.gates:
            gate.bias.fill_(100.0)  # g ~ 1: y = relu(W x) = relu(x)
    torch.testing.assert_close(highway(x), torch.tensor([[[1.0, 0.0, 3.0]]]))
    with torch.no_grad():
        highway.gates[0].bias.fill_(0.0)  # g = 1/2 in the first layer: 0.5 * relu(x) + 0.5 * x
        highway.gates[1].bias.fill_(-100.0)
    torch.testing.assert_close(highway(x), torch.tensor([[[1.0, -1.0, 3.0]]]))


def test_variational_dropout_shares_its_mask_over_time():
    torch.manual_seed(0)
    x = torch.ones(3, 7, 16)
    dropout = SequenceDropout(0.5, variational=True)
    out = dropout(x)
    assert set(out.unique().tolist()) <= {0.0, 2.0}
    assert bool((out == out[:, :1]).all())  # every time step has the first one's mask
    assert 0 < int((out == 0).sum()) < out.numel()
    dropout.eval()
    assert dropout(x) is x


def test_sequence_dropout_draws_the_bulk_mask_of_concur_dropout():
    x = torch.randn(3, 7, 16)
    torch.manual_seed(0)
    out = SequenceDropout(0.3)(x)
    torch.manual_seed(0)
    torch.testing.assert_close(out, bulk_dropout(x, 0.3, training=True))


# --- BiRNN --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("cell", "concat"), [("lstm", False), ("gru", False), ("lstm", True)])
def test_birnn_padding_does_not_change_the_real_positions(cell, concat):
    torch.manual_seed(0)
    rnn = BiRNN(input_dim=5, hidden=4, layers=2, dropout=0.3, cell=cell, concat_layers=concat).eval()
    assert rnn.out_dim == (16 if concat else 8)
    short, long = torch.randn(1, 3, 5), torch.randn(1, 6, 5)
    alone = rnn(short, torch.ones(1, 3, dtype=torch.bool))
    assert alone.shape == (1, 3, rnn.out_dim)
    padded = torch.cat([torch.nn.functional.pad(short, (0, 0, 0, 3), value=9.0), long])  # padding full of junk
    batch = rnn(padded, lengths_mask([3, 6], 6))
    assert batch.shape == (2, 6, rnn.out_dim)
    torch.testing.assert_close(batch[0, :3], alone[0], atol=1e-6, rtol=1e-5)
    assert batch[0, 3:].abs().sum() == 0
    torch.testing.assert_close(batch[1], rnn(long, torch.ones(1, 6, dtype=torch.bool))[0], atol=1e-6, rtol=1e-5)


def test_birnn_concat_layers_stacks_each_layers_output():
    torch.manual_seed(0)
    rnn = BiRNN(input_dim=5, hidden=4, layers=3, dropout=0.0, concat_layers=True).eval()
    x, mask = torch.randn(2, 4, 5), lengths_mask([4, 2], 4)
    out = rnn(x, mask)
    assert out.shape == (2, 4, 24)
    top = BiRNN(input_dim=5, hidden=4, layers=3, dropout=0.0)
    top.load_state_dict(rnn.state_dict())
    torch.testing.assert_close(out[..., 16:], top.eval()(x, mask))  # the last block is the top layer's output


def packed_birnn(rnns: list[torch.nn.Module], x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The reference: PyTorch's bidirectional RNNs over packed sequences, layer by layer."""
    lengths = mask.sum(dim=1).clamp(min=1)
    for rnn in rnns:
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        x, _ = pad_packed_sequence(rnn(packed)[0], batch_first=True, total_length=mask.shape[1])
    return x


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_birnn_equals_packed_bidirectional_rnns_with_the_same_seed(cell):
    torch.manual_seed(3)
    rnn = BiRNN(input_dim=5, hidden=4, layers=2, dropout=0.0, cell=cell)
    torch.manual_seed(3)  # the same draws: the weights of bidirectional=True
    module = {"lstm": torch.nn.LSTM, "gru": torch.nn.GRU}[cell]
    reference = [module(5 if i == 0 else 8, 4, batch_first=True, bidirectional=True) for i in range(2)]
    x, mask = torch.randn(4, 6, 5), lengths_mask([6, 2, 0, 5], 6)  # a row without tokens reads one step
    x_ref = x.clone().requires_grad_()
    x.requires_grad_()
    out, expected = rnn(x, mask), packed_birnn(reference, x_ref, mask)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=1e-5)
    weights = torch.randn_like(out)
    (out * weights).sum().backward()
    (expected * weights).sum().backward()
    torch.testing.assert_close(x.grad, x_ref.grad, atol=1e-6, rtol=1e-5)
    for ours, theirs in zip(rnn.parameters(), (p for module in reference for p in module.parameters()), strict=True):
        torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-5, rtol=1e-5)


def test_reverse_within_reverses_the_real_steps_only():
    x = torch.arange(8.0).view(2, 4, 1)
    reversed_x = reverse_within(x, torch.tensor([3, 4]))
    assert reversed_x.squeeze(-1).tolist() == [[2.0, 1.0, 0.0, 3.0], [7.0, 6.0, 5.0, 4.0]]
    torch.testing.assert_close(reverse_within(reversed_x, torch.tensor([3, 4])), x)


# --- attention ----------------------------------------------------------------------------------


def test_trilinear_similarity_equals_the_naive_formula():
    torch.manual_seed(0)
    dim = 3
    similarity = TrilinearSimilarity(dim)
    w = [0.5, -1.0, 2.0, 0.25, 1.5, -0.5, 1.0, -2.0, 0.75]  # w over [x; y; x * y]
    bias = 0.125
    with torch.no_grad():
        similarity.w_x.weight.copy_(torch.tensor([w[:3]]))
        similarity.w_x.bias.fill_(bias)
        similarity.w_y.weight.copy_(torch.tensor([w[3:6]]))
        similarity.w_xy.copy_(torch.tensor(w[6:]))
    x = [[[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]]]
    y = [[[2.0, -1.0, 1.0], [0.0, 1.0, 0.5], [-3.0, 0.25, 2.0]]]
    scores = similarity(torch.tensor(x), torch.tensor(y))
    assert scores.shape == (1, 2, 3)
    for i in range(2):
        for j in range(3):
            xi, yj = x[0][i], y[0][j]
            features = xi + yj + [a * b for a, b in zip(xi, yj)]
            expected = sum(weight * value for weight, value in zip(w, features)) + bias
            assert scores[0, i, j].item() == pytest.approx(expected, abs=1e-5)
    # one entry by hand: x0 = (1, 2, -1), y0 = (2, -1, 1):
    # 0.5 - 2 - 2 + 0.5 - 1.5 - 0.5 + 2 + 4 - 0.75 + 0.125 = 0.375
    assert scores[0, 0, 0].item() == pytest.approx(0.375)


@pytest.mark.parametrize("q2c", ["max", "dcn"])
def test_attention_flow_ignores_masked_positions(q2c):
    torch.manual_seed(0)
    flow = AttentionFlow(4, q2c=q2c)
    assert flow.out_dim == 16
    c, q = torch.randn(2, 5, 4), torch.randn(2, 3, 4)
    c_mask, q_mask = lengths_mask([5, 3], 5), lengths_mask([2, 3], 3)
    out = flow(c, q, c_mask, q_mask)
    assert out.shape == (2, 5, 16)
    torch.testing.assert_close(out[..., :4], c)
    junk_c, junk_q = c.clone(), q.clone()
    junk_q[0, 2] = 100.0  # a masked question position
    junk_c[1, 3:] = -50.0  # masked passage positions
    out2 = flow(junk_c, junk_q, c_mask, q_mask)
    torch.testing.assert_close(out2[0], out[0])
    torch.testing.assert_close(out2[1, :3], out[1, :3])


def test_attention_flow_over_a_one_word_question_copies_it():
    torch.manual_seed(0)
    flow = AttentionFlow(4)
    c, q = torch.randn(1, 5, 4), torch.randn(1, 3, 4)
    out = flow(c, q, torch.ones(1, 5, dtype=torch.bool), torch.tensor([[True, False, False]]))
    # all attention on question word 0: c2q = q0 at every passage position
    torch.testing.assert_close(out[0, :, 4:8], q[0, 0].expand(5, 4))
    torch.testing.assert_close(out[0, :, 8:12], c[0] * q[0, 0])


def test_attention_flow_rejects_an_unknown_q2c():
    with pytest.raises(ValueError, match="q2c"):
        AttentionFlow(4, q2c="mean")


def test_self_attention_excludes_the_diagonal_and_masked_positions():
    torch.manual_seed(0)
    attention = SelfAttention(4)
    x = torch.eye(4).unsqueeze(0)  # one-hot tokens: output[i, j] is the weight token i gives token j
    weights = attention(x, torch.tensor([[True, True, True, False]]))[0]
    assert weights.shape == (4, 4)
    for i in range(3):
        assert weights[i, i].item() == 0
        assert weights[i, 3].item() == 0
        assert weights[i].sum().item() == pytest.approx(1.0)
        assert all(weights[i, j].item() > 0 for j in range(3) if j != i)
    # with two real tokens each attends only to the other
    x = torch.randn(1, 3, 4)
    out = attention(x, torch.tensor([[True, True, False]]))
    torch.testing.assert_close(out[0, 0], x[0, 1])
    torch.testing.assert_close(out[0, 1], x[0, 0])


def test_self_attention_of_a_one_token_passage_does_not_see_padding():
    torch.manual_seed(0)
    attention = SelfAttention(4)
    x = torch.randn(1, 3, 4)
    alone = attention(x[:, :1], torch.tensor([[True]]))
    padded = attention(x, torch.tensor([[True, False, False]]))
    torch.testing.assert_close(padded[0, 0], alone[0, 0])


# --- span scores, decoding and loss -------------------------------------------------------------


def test_span_grid_and_best_spans_on_hand_made_probabilities():
    start = torch.tensor([[0.6, 0.1, 0.2, 0.1]]).log()
    end = torch.tensor([[0.05, 0.05, 0.1, 0.8]]).log()
    logits, full = SpanLogits(start=start, end=end), torch.ones(1, 4, dtype=torch.bool)
    # spans i..j with p(i) p(j): (0,3) .48 is best; within 2 tokens (2,3) .16; single tokens (3,3) .08
    for max_length, best in ((4, (0, 3)), (10, (0, 3)), (2, (2, 3)), (1, (3, 3))):
        first, last = best_spans(span_grid(logits, full, max_length))
        assert (first.item(), last.item()) == best, max_length
    grid = span_grid(logits, full, 2)
    assert grid.shape == (1, 4, 2)
    assert grid[0, 2, 1].item() == pytest.approx(math.log(0.2 * 0.8), abs=1e-5)
    assert grid[0, 1, 0].item() == pytest.approx(math.log(0.1 * 0.05), abs=1e-5)
    assert bool(grid[0, 3, 1] == MASKED)  # ends beyond the passage
    # three real tokens: renormalised start (.6 .1 .2)/.9 and end (.05 .05 .1)/.2: best (0,2) = .06/.18
    three = torch.tensor([[True, True, True, False]])
    grid = span_grid(logits, three, 4)
    first, last = best_spans(grid)
    assert (first.item(), last.item()) == (0, 2)
    assert grid[0, 0, 2].item() == pytest.approx(math.log(0.6 / 0.9 * 0.1 / 0.2), abs=1e-5)
    assert bool(grid[0, 1, 2] == MASKED)  # ends on padding
    assert bool(grid[0, 3, 0] == MASKED)  # starts on padding
    assert bool(grid[0, 2, 3] == MASKED)  # ends beyond the last real token


def brute_force_best(score: dict[tuple[int, int], float], length: int, max_length: int) -> tuple[int, int]:
    """The best span i..j over every i <= j < min(length, i + max_length), by looking at each one."""
    candidates = [(score[i, j], i, j) for i in range(length) for j in range(i, min(length, i + max_length))]
    _, i, j = max(candidates)
    return i, j


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("max_length", [1, 3, 5, 12])
def test_best_spans_match_brute_force(seed, max_length):
    generator = torch.Generator().manual_seed(seed)
    batch, width = 5, 9
    lengths = torch.randint(1, width + 1, (batch,), generator=generator).tolist()
    lengths[0] = width
    mask = lengths_mask(lengths, width)
    start = torch.randn(batch, width, generator=generator) * 3
    end = torch.randn(batch, width, generator=generator) * 3
    spans = torch.randn(batch, width, max_length, generator=generator) * 3
    first, last = best_spans(span_grid(SpanLogits(start=start, end=end), mask, max_length))
    first_x, last_x = best_spans(span_grid(SpanLogits(spans=spans), mask, max_length))
    for b, n in enumerate(lengths):
        log_start = log_softmax_list(start[b, :n].tolist())
        log_end = log_softmax_list(end[b, :n].tolist())
        pairs = {(i, j): log_start[i] + log_end[j] for i in range(n) for j in range(n)}
        assert (first[b].item(), last[b].item()) == brute_force_best(pairs, n, max_length)
        explicit = {(i, i + d): spans[b, i, d].item() for i in range(n) for d in range(max_length)}
        expected = brute_force_best(explicit, n, max_length)
        assert (first_x[b].item(), last_x[b].item()) == expected


@pytest.mark.parametrize("seed", range(3))
def test_span_grid_validity_matches_the_definition(seed):
    generator = torch.Generator().manual_seed(seed)
    lengths, width, max_length = [7, 4, 1], 7, 3
    mask = lengths_mask(lengths, width)
    start, end = torch.randn(3, width, generator=generator), torch.randn(3, width, generator=generator)
    grid = span_grid(SpanLogits(start=start, end=end), mask, max_length)
    for b, n in enumerate(lengths):
        for i in range(width):
            for d in range(max_length):
                assert bool(grid[b, i, d] != MASKED) == (i + d < n), (b, i, d)


def test_span_loss_of_start_and_end_logits_is_the_sum_of_two_nlls():
    start = [[0.5, -1.0, 2.0, 0.0, 1.0], [1.0, 0.25, -0.5, 9.0, 9.0]]
    end = [[-0.5, 0.0, 1.5, 3.0, -2.0], [0.0, 2.0, 1.0, -9.0, 9.0]]
    lengths, starts, ends = [5, 3], [1, 0], [3, 2]
    loss = span_loss(
        SpanLogits(start=torch.tensor(start), end=torch.tensor(end)), lengths_mask(lengths, 5), torch.tensor(starts), torch.tensor(ends), 4
    )
    expected = 0.0
    for b, n in enumerate(lengths):  # positions beyond the length do not count
        expected -= log_softmax_list(start[b][:n])[starts[b]] + log_softmax_list(end[b][:n])[ends[b]]
    assert loss.item() == pytest.approx(expected / 2, abs=1e-5)


def test_span_loss_of_explicit_spans_is_cross_entropy_over_the_valid_spans():
    generator = torch.Generator().manual_seed(0)
    spans = torch.randn(2, 5, 3, generator=generator)
    lengths, gold = [5, 3], [(1, 3), (0, 2)]
    loss = span_loss(SpanLogits(spans=spans), lengths_mask(lengths, 5), torch.tensor([1, 0]), torch.tensor([3, 2]), 3)
    expected = 0.0
    for b, n in enumerate(lengths):
        valid = {(i, i + d): spans[b, i, d].item() for i in range(n) for d in range(3) if i + d < n}
        assert len(valid) == (12 if n == 5 else 6)
        expected -= valid[gold[b]] - math.log(sum(math.exp(v) for v in valid.values()))
    assert loss.item() == pytest.approx(expected / 2, abs=1e-5)

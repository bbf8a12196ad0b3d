"""Layers several readers share, written once: embeddings, character CNN, highway, masked softmax,
bidirectional RNNs, attention flow, self-attention, DrQA's attentions, span scoring.

Everything works on padded batches with boolean masks (True on real tokens) and is
vectorised over tokens and spans; the only Python loops run over layers or span lengths.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.dropout import dropout as bulk_dropout
from concur.approaches.reader.gru import bidirectional_gru

# A logit that no real score reaches, but that stays finite in bf16/fp32 (so sums of two stay finite).
MASKED = -1e30

M = TypeVar("M", bound=nn.Module)


@dataclass
class SpanLogits:
    """What a reader returns: start and end logits over passage tokens, or scores of explicit spans.

    `spans[b, i, d]` scores the span from token i to token i + d (RaSoR); start/end models
    leave it None and the span scores are derived from `start` and `end`.
    """

    start: torch.Tensor | None = None  # (B, T)
    end: torch.Tensor | None = None
    spans: torch.Tensor | None = None  # (B, T, max_answer_length)


def typed_modules(modules: nn.ModuleList, kind: type[M]) -> list[M]:
    """The modules of `modules`, each a `kind` (TypeError otherwise): PyTorch types a ModuleList's items as plain Modules."""
    typed: list[M] = []
    for module in modules:
        if not isinstance(module, kind):
            raise TypeError(f"expected a ModuleList of {kind.__name__}, found a {type(module).__name__}")
        typed.append(module)
    return typed


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor, dim: int = -1, log: bool = False) -> torch.Tensor:
    """Softmax (in fp32) over the positions where `mask` is True; masked positions get (log-)probability ~0."""
    logits = logits.float().masked_fill(~mask, MASKED)
    return F.log_softmax(logits, dim=dim) if log else F.softmax(logits, dim=dim)


class WordEmbedding(nn.Module):
    """Word vectors whose first `n_tuned` rows train and the rest stay fixed (DrQA's partial fine-tuning).

    Row 0 is padding and stays zero. `extend` appends fixed rows for words first met at
    prediction time that the pretrained vectors cover.
    """

    fixed: torch.Tensor  # a buffer (`register_buffer`), replaced whole by `extend`

    def __init__(self, vectors: torch.Tensor, n_tuned: int) -> None:
        super().__init__()
        vectors = vectors.float().clone()
        vectors[0] = 0
        self.n_tuned = n_tuned
        self.tuned = nn.Parameter(vectors[:n_tuned])
        self.register_buffer("fixed", vectors[n_tuned:], persistent=True)

    @property
    def dim(self) -> int:
        return self.tuned.shape[1]

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        tuned = F.embedding(ids.clamp(max=self.n_tuned - 1), self.tuned, padding_idx=0)
        if self.fixed.shape[0] == 0:
            return tuned
        fixed = F.embedding((ids - self.n_tuned).clamp(min=0), self.fixed)
        return torch.where((ids < self.n_tuned).unsqueeze(-1), tuned, fixed)

    def extend(self, rows: torch.Tensor) -> None:
        self.fixed = torch.cat([self.fixed, rows.to(self.fixed)], dim=0)


def distinct_rows(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`torch.unique(rows, dim=0, return_inverse=True)` for a 2-D tensor of non-negative integers.

    On the CPU PyTorch compares rows one at a time, slow enough to show in a BiDAF++ training step;
    here NumPy sorts the rows as byte strings, each id big-endian so that byte order is the ids' order:
    the same distinct rows, in the same (lexicographic) order, in one vectorised sort.
    """
    if rows.device.type != "cpu":
        return torch.unique(rows, dim=0, return_inverse=True)
    ids = rows.numpy()
    big_endian = np.ascontiguousarray(ids, dtype=ids.dtype.newbyteorder(">"))
    keys = big_endian.view(np.dtype((np.void, big_endian.itemsize * ids.shape[1]))).reshape(-1)
    distinct, inverse = np.unique(keys, return_inverse=True)
    words = distinct.view(big_endian.dtype).reshape(-1, ids.shape[1]).astype(ids.dtype)
    return torch.from_numpy(words), torch.from_numpy(inverse.reshape(-1).astype(np.int64))


def per_distinct_word(texts: Sequence[torch.Tensor], encode: Callable[[torch.Tensor], torch.Tensor]) -> list[torch.Tensor]:
    """(B, T, d) word vectors of each (B, T, width) character-id tensor; `encode` ((N, width) -> (N, d)) runs once per distinct spelling.

    A batch repeats its words (a SQuAD batch of 60 has ~9,000 tokens and ~3,000 distinct spellings,
    and most question words are in the passage), and a character encoder's vector of a word depends
    on its characters only, not on the grid's width; the gradients of the repeats add up through the
    gather, as they would over separate copies. The distinct words are encoded in two groups, the
    shorter ones in a narrower grid (`by_length`): most words are far shorter than the widest.
    """
    words, which = _distinct_padded([chars.reshape(-1, chars.shape[-1]) for chars in texts])
    return _spread(by_length(encode)(words), which, texts)


def per_distinct_token(
    ids: Sequence[torch.Tensor], texts: Sequence[torch.Tensor], encode: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
) -> list[torch.Tensor]:
    """(B, T, d) vectors of each text from its (B, T) word ids and (B, T, width) character ids; `encode` ((N,) ids, (N, width)
    characters -> (N, d)) runs once per distinct (id, spelling) pair: what follows the embeddings of a word runs once per batch.
    """
    flat = [torch.cat([words.reshape(-1, 1), chars.reshape(-1, chars.shape[-1])], dim=1) for words, chars in zip(ids, texts, strict=True)]
    tokens, which = _distinct_padded(flat)
    return _spread(encode(tokens[:, 0], tokens[:, 1:]), which, texts)


def _distinct_padded(flat: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """`distinct_rows` of 2-D id tensors of different widths, each padded with zeros to the widest."""
    width = max(rows.shape[1] for rows in flat)
    return distinct_rows(torch.cat([F.pad(rows, (0, width - rows.shape[1])) for rows in flat]))


def _spread(vectors: torch.Tensor, which: torch.Tensor, texts: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    """The rows `which` of `vectors`, cut back into one (B, T, d) tensor per (B, T, ...) text."""
    parts = vectors[which].split([chars.shape[0] * chars.shape[1] for chars in texts])
    return [part.reshape(*chars.shape[:2], -1) for part, chars in zip(parts, texts, strict=True)]


def by_length(encode: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """`encode` ((N, width) character ids -> (N, d)) applied to the two groups of `split_by_length`, its rows back in order."""

    def grouped(words: torch.Tensor) -> torch.Tensor:
        groups, rank = split_by_length(words)
        return torch.cat([encode(group) for group in groups])[rank]

    return grouped


def split_by_length(words: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    """(N, width) character ids in two groups by length, each cut to its longest word, and each word's row in their concatenation.

    The split minimises the cells of the two grids (an encoder's cost grows with them): in a SQuAD
    batch most words have under half the characters of the longest. On a GPU the words stay one
    group, as choosing the split would wait for the device.
    """
    lengths = (words > 0).sum(dim=1)
    if words.device.type != "cpu" or not len(lengths):
        return [words], torch.arange(len(words), device=words.device)
    order = torch.argsort(lengths, stable=True)
    ordered = lengths[order]
    sizes = torch.arange(1, len(ordered) + 1)
    short = int(torch.argmin(sizes * ordered + (len(ordered) - sizes) * ordered[-1])) + 1  # words in the short group
    groups = [words[order[:short], : max(1, int(ordered[short - 1]))]]
    if short < len(ordered):
        groups.append(words[order[short:], : max(1, int(ordered[-1]))])
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    return groups, rank


class CharCNN(nn.Module):
    """Character embeddings, a 1-D convolution over each word, ReLU and max-pooling over its characters.

    The convolution keeps each word's width as `padding="same"` does: symmetric padding, and for
    an even kernel one more column on the right, added here because PyTorch warns on every
    forward pass of an even kernel with `"same"` (and a sampled setting may have one).
    """

    def __init__(self, n_chars: int, char_dim: int, filters: int, kernel: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.conv = nn.Conv1d(char_dim, filters, kernel, padding=(kernel - 1) // 2)
        self.extra_right = (kernel - 1) % 2
        self.out_dim = filters

    def forward(self, *texts: torch.Tensor) -> list[torch.Tensor]:
        """(B, T, out_dim) vectors of each (B, T, width) character-id tensor; each distinct word among them is convolved once."""
        return per_distinct_word(texts, self.encode)

    def encode(self, words: torch.Tensor) -> torch.Tensor:
        """(N, out_dim) vectors of N words of (N, width) character ids."""
        embedded = self.embedding(words).transpose(1, 2)
        if self.extra_right:
            embedded = F.pad(embedded, (0, self.extra_right))
        features = F.relu(self.conv(embedded))
        return features.masked_fill(~(words > 0).unsqueeze(1), 0).amax(dim=-1)


class Highway(nn.Module):
    """Highway layers (Srivastava et al. 2015): y = g * relu(W x) + (1 - g) * x."""

    def __init__(self, dim: int, layers: int) -> None:
        super().__init__()
        self.transforms = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.gates = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for transform, gate in zip(self.transforms, self.gates):
            g = torch.sigmoid(gate(x))
            x = g * F.relu(transform(x)) + (1 - g) * x
        return x


class SequenceDropout(nn.Module):
    """Dropout; `variational` shares one mask over all time steps of a sequence (Gal & Ghahramani 2016).

    A per-element mask comes in bulk on the CPU (`concur.approaches.dropout`), a quarter of PyTorch's cost.
    """

    def __init__(self, p: float, variational: bool = False) -> None:
        super().__init__()
        self.p, self.variational = p, variational

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training or self.p == 0:
            return x
        if not self.variational:
            return bulk_dropout(x, self.p, training=True)
        keep = x.new_empty(x.shape[0], 1, x.shape[2]).bernoulli_(1 - self.p) / (1 - self.p)
        return x * keep


def reverse_within(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row of `x` (B, T, ...) reversed over its first `lengths[b]` steps; the padding after them stays put.

    Its own inverse. A one-way RNN reads a row reversed this way from the row's last real step,
    as a packed sequence's backward direction does, and never reads the padding before a real step.
    """
    steps = torch.arange(x.shape[1], device=x.device)
    ends = lengths.unsqueeze(1)
    order = torch.where(steps < ends, ends - 1 - steps, steps)  # (B, T)
    return x.gather(1, order.view(*order.shape, *(1,) * (x.dim() - 2)).expand_as(x))


def bidirectional_layer(ahead_rnn: nn.Module, behind_rnn: nn.Module, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """[ahead_rnn over x; behind_rnn over each row reversed within its length] (B, T, 2H), 0 at padding.

    On the CPU a GRU layer is one fused operation (`bidirectional_gru`); otherwise each direction
    is a one-way RNN over the padded batch, the backward one reading `reverse_within`.
    """
    if isinstance(ahead_rnn, nn.GRU) and isinstance(behind_rnn, nn.GRU) and x.device.type == "cpu":
        return bidirectional_gru(ahead_rnn, behind_rnn, x, lengths)
    real = (torch.arange(x.shape[1], device=x.device) < lengths.unsqueeze(1)).unsqueeze(-1)
    ahead, behind = ahead_rnn(x)[0], behind_rnn(reverse_within(x, lengths))[0]
    return torch.cat([ahead, reverse_within(behind, lengths)], dim=-1).masked_fill(~real, 0)


class BiRNN(nn.Module):
    """Stacked bidirectional LSTMs or GRUs over padded batches, each direction a one-way RNN.

    PyTorch's packed-sequence RNNs take a step-by-step path on the CPU whose backward pass is slow
    (oneDNN's kernels read a padded batch whole), so the padded batch is read as it is: padding follows
    the real steps, so the forward direction's outputs at real steps never depend on it, and the
    backward direction reads each row reversed within its length (`reverse_within`). Outputs at padding are zero, as `pad_packed_sequence`
    leaves them; a row without tokens is read as one step long, as its packed form was.
    The directions are created forward first, so a seed gives the weights of `bidirectional=True`.
    On the CPU a GRU layer's two directions are one fused operation (`bidirectional_gru`: PyTorch
    has no oneDNN GRU there); their input projections follow autocast (bf16 under `--precision
    bf16`) while the recurrence stays fp32.

    Dropout is applied to each layer's input; `concat_layers` returns every layer's output
    side by side (DrQA), otherwise the top layer's.
    """

    def __init__(
        self,
        input_dim: int,
        hidden: int,
        layers: int,
        dropout: float,
        cell: str = "lstm",
        variational: bool = False,
        concat_layers: bool = False,
    ) -> None:
        super().__init__()
        rnn = {"lstm": nn.LSTM, "gru": nn.GRU}[cell]
        # layers[i] = (forward, backward): the parameter order of `bidirectional=True`
        self.layers = nn.ModuleList(
            nn.ModuleList(rnn(input_dim if i == 0 else 2 * hidden, hidden, batch_first=True) for _ in range(2)) for i in range(layers)
        )
        self.dropout = SequenceDropout(dropout, variational)
        self.concat_layers = concat_layers
        self.out_dim = 2 * hidden * (layers if concat_layers else 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        lengths = mask.sum(dim=1).clamp(min=1)
        outputs = []
        for forward_rnn, backward_rnn in typed_modules(self.layers, nn.ModuleList):
            x = bidirectional_layer(forward_rnn, backward_rnn, self.dropout(x), lengths)
            outputs.append(x)
        return torch.cat(outputs, dim=-1) if self.concat_layers else x


class TrilinearSimilarity(nn.Module):
    """S[i, j] = w . [x_i; y_j; x_i * y_j] (BiDAF), without building the (Tx, Ty, 3d) tensor."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.w_x = nn.Linear(dim, 1)
        self.w_y = nn.Linear(dim, 1, bias=False)
        self.w_xy = nn.Parameter(torch.empty(dim).uniform_(-(dim**-0.5), dim**-0.5))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.w_x(x) + self.w_y(y).transpose(1, 2) + (x * self.w_xy) @ y.transpose(1, 2)


class AttentionFlow(nn.Module):
    """BiDAF's bidirectional attention: G = [c; c2q; c * c2q; c * q2c].

    `q2c = "max"` is BiDAF's query-to-context vector (attention over the passage by each
    word's best match, tiled); `q2c = "dcn"` is QANet's (DCN) B = S_c S_q^T C.
    """

    def __init__(self, dim: int, q2c: str = "max") -> None:
        super().__init__()
        if q2c not in ("max", "dcn"):
            raise ValueError(f"q2c must be 'max' or 'dcn', got {q2c!r}")
        self.similarity = TrilinearSimilarity(dim)
        self.q2c = q2c
        self.out_dim = 4 * dim

    def forward(self, c: torch.Tensor, q: torch.Tensor, c_mask: torch.Tensor, q_mask: torch.Tensor) -> torch.Tensor:
        scores = self.similarity(c, q)  # (B, Tc, Tq)
        to_query = masked_softmax(scores, q_mask.unsqueeze(1), dim=2).to(q.dtype)
        c2q = to_query @ q
        if self.q2c == "max":
            best = scores.float().masked_fill(~q_mask.unsqueeze(1), MASKED).amax(dim=2)
            weights = masked_softmax(best, c_mask, dim=1).to(c.dtype)
            q2c = (weights.unsqueeze(1) @ c).expand_as(c)
        else:
            to_context = masked_softmax(scores, c_mask.unsqueeze(2), dim=1).to(c.dtype)
            q2c = to_query @ (to_context.transpose(1, 2) @ c)
        return torch.cat([c, c2q, c * c2q, c * q2c], dim=-1)


class SelfAttention(nn.Module):
    """Each passage token attends over the other tokens of its passage (trilinear scores, diagonal excluded)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.similarity = TrilinearSimilarity(dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = self.similarity(x, x)
        eye = torch.eye(x.shape[1], dtype=torch.bool, device=x.device)
        allowed = mask.unsqueeze(1) & ~eye
        allowed = allowed | (eye & ~allowed.any(dim=2, keepdim=True))  # a one-token passage attends to itself
        return masked_softmax(scores, allowed, dim=2).to(x.dtype) @ x


class SeqAttnMatch(nn.Module):
    """DrQA's aligned question embedding: attend from each x_i over y with scores relu(W x_i) . relu(W y_j)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.project = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor, y_mask: torch.Tensor) -> torch.Tensor:
        scores = F.relu(self.project(x)) @ F.relu(self.project(y)).transpose(1, 2)
        return masked_softmax(scores, y_mask.unsqueeze(1), dim=2).to(y.dtype) @ y


class LinearSeqAttn(nn.Module):
    """Self-attentive pooling of a sequence into one vector: softmax(w . x_j) weighted sum."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.score = nn.Linear(dim, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        weights = masked_softmax(self.score(x).squeeze(-1), mask, dim=1).to(x.dtype)
        return (weights.unsqueeze(1) @ x).squeeze(1)


class BilinearSeqAttn(nn.Module):
    """Scores x_i W y for every token i of x against one vector y (DrQA's start/end scorer)."""

    def __init__(self, x_dim: int, y_dim: int) -> None:
        super().__init__()
        self.project = nn.Linear(y_dim, x_dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (x @ self.project(y).unsqueeze(2)).squeeze(2)


def span_grid(logits: SpanLogits, mask: torch.Tensor, max_length: int) -> torch.Tensor:
    """Log-score of every span (B, T, max_length): `[b, i, d]` is tokens i..i+d; invalid spans are MASKED.

    Start/end models score a span by log p(start) + log p(end), as DrQA and BiDAF decode.
    """
    length = mask.shape[1]
    band = torch.arange(max_length, device=mask.device)
    ends = torch.arange(length, device=mask.device).unsqueeze(1) + band  # (T, L)
    valid = (
        mask.unsqueeze(2)
        & (ends < length)
        & mask.gather(1, ends.clamp(max=length - 1).flatten().expand(mask.shape[0], -1)).view(mask.shape[0], length, max_length)
    )
    if logits.spans is not None:
        scores = logits.spans.float()[:, :, :max_length]
    else:
        assert logits.start is not None and logits.end is not None
        start = masked_softmax(logits.start, mask, log=True)
        end = masked_softmax(logits.end, mask, log=True)
        end_at = end.gather(1, ends.clamp(max=length - 1).flatten().expand(mask.shape[0], -1)).view(mask.shape[0], length, max_length)
        scores = start.unsqueeze(2) + end_at
    return scores.masked_fill(~valid, MASKED)


def best_spans(grid: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """`(start, end)` token positions of each row's best span in a `span_grid`."""
    flat = grid.flatten(1).argmax(dim=1)
    start = flat // grid.shape[2]
    return start, start + flat % grid.shape[2]


def span_loss(logits: SpanLogits, mask: torch.Tensor, starts: torch.Tensor, ends: torch.Tensor, max_length: int) -> torch.Tensor:
    """Mean negative log-likelihood of the gold spans: NLL(start) + NLL(end), or NLL(span) for explicit spans."""
    if logits.spans is not None:
        grid = span_grid(logits, mask, max_length)
        target = starts * max_length + (ends - starts)
        return F.cross_entropy(grid.flatten(1), target)
    assert logits.start is not None and logits.end is not None
    start = masked_softmax(logits.start, mask, log=True)
    end = masked_softmax(logits.end, mask, log=True)
    return F.nll_loss(start, starts) + F.nll_loss(end, ends)

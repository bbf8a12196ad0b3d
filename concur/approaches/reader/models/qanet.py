"""QANet (Yu, Dohan, Luong, Zhao, Chen, Norouzi & Le 2018, "QANet: Combining Local Convolution with
Global Self-Attention for Reading Comprehension", ICLR), §2.

Fixed word vectors + a character CNN (max-pooled) -> two-layer highway -> a kernel-1 projection to d
-> an embedding encoder shared by passage and question -> context-query attention (trilinear
similarity, DCN query-to-context: [c; a; c * a; c * b]) projected to d -> three passes of one
model encoder (shared weights) giving M0, M1, M2 -> start from [M0; M1], end from [M0; M2].
An encoder block is: sinusoidal position encoding, depthwise-separable convolutions, multi-head
self-attention and a feed-forward layer, each as x + dropout(f(layer_norm(x))), with stochastic
depth: sub-layer l of a stack of L survives with probability 1 - l / L * (1 - p_L).

Deviations and choices:
- The character vector of a word comes from the shared `CharCNN` (convolution, ReLU, max-pooling,
  `char_filters` = 200 wide); the paper takes the maximum over the 200-d character embeddings of a
  word (its prose calls this a character-level CNN, and re-implementations convolve first). The
  character dropout (0.05) is applied to that vector, not to the character embeddings, as the
  shared CharCNN has no internal dropout.
- The word and character dropout masks are drawn once per distinct word (word id and spelling) of
  a batch, not once per occurrence, so that the embedding layer (character CNN, highway and the
  projection to d) runs once per distinct word (`per_distinct_token`), as BiDAF's does.
- Stochastic depth drops a whole sub-layer for the whole batch (Huang et al. 2016) and scales a
  surviving sub-layer by 1 / p_l during training, so inference uses every sub-layer unscaled; L
  counts the sub-layers of one stack (one pass of the model encoder), as common re-implementations do.
- The feed-forward layer is two linear layers of width d with a ReLU between them (the paper gives
  no inner size). The self-attention has no dropout on its weights (none stated).
- No Python loop over tokens; loops run over blocks, sub-layers and the three passes only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.dropout import dropout
from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.qanet import QANetHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.key_masked_attention import key_masked_attention
from concur.approaches.reader.layers import (
    AttentionFlow,
    CharCNN,
    Highway,
    SpanLogits,
    WordEmbedding,
    by_length,
    per_distinct_token,
    typed_modules,
)

# §2.2 (4)-(5): the model encoder runs three times with shared weights; the output layer reads M0, M1 and M2.
MODEL_ENCODER_PASSES = 3
# §2.2 (2): the sinusoidal position encoding of Vaswani et al. (2017), wavelengths up to 10000 * 2 pi.
POSITION_TIMESCALE = 10000.0


def position_encoding(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """(length, dim): sin on even channels, cos on odd channels, geometric wavelengths."""
    position = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    rates = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(POSITION_TIMESCALE) / dim))
    angles = position * rates
    encoding = torch.zeros(length, dim, device=device)
    encoding[:, 0::2] = torch.sin(angles)
    encoding[:, 1::2] = torch.cos(angles[:, : dim // 2])
    return encoding


def depthwise_over_time(conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
    """`conv` (depthwise, no bias) over the time axis of x (B, T, C), returned as (B, T, C), without transposing copies.

    x read as (B, C, 1, T) is a channels-last image, which oneDNN convolves as it is (no copies on either
    side, unlike `conv` over `x.transpose(1, 2)`); the values are the same. On the CPU it runs in fp32 even
    under bf16 autocast: oneDNN's bf16 depthwise convolution is slower than its fp32 one, and its input (a
    layer norm's output) is fp32 already.
    """
    padding = conv.padding
    if isinstance(padding, str):  # "same" or "valid": a Conv1d built here always has a numeric padding
        raise ValueError(f"depthwise_over_time needs a convolution with a numeric padding, not {padding!r}")
    image = x.transpose(1, 2).unsqueeze(2)
    weight = conv.weight.unsqueeze(2)
    if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
        with torch.autocast("cpu", enabled=False):
            out = F.conv2d(image.float(), weight, padding=(0, padding[0]), groups=conv.groups)
    else:
        out = F.conv2d(image, weight, padding=(0, padding[0]), groups=conv.groups)
    return out.squeeze(2).transpose(1, 2)


class EncoderBlock(nn.Module):
    """Position encoding, `convs` depthwise-separable convolutions, multi-head self-attention, feed-forward."""

    def __init__(self, dim: int, convs: int, kernel: int, heads: int) -> None:
        super().__init__()
        self.conv_norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(convs))
        self.depthwise = nn.ModuleList(nn.Conv1d(dim, dim, kernel, padding=kernel // 2, groups=dim, bias=False) for _ in range(convs))
        self.pointwise = nn.ModuleList(nn.Linear(dim, dim) for _ in range(convs))  # a kernel-1 convolution
        self.attention_norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.attention_out = nn.Linear(dim, dim)
        self.ffn_norm = nn.LayerNorm(dim)
        self.ffn = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.heads = heads
        self.n_sublayers = convs + 2

    def sublayers(self, mask: torch.Tensor) -> list[Callable[[torch.Tensor], torch.Tensor]]:
        """The block's residual functions f (applied as x + f(x)), in order."""
        pad = ~mask.unsqueeze(-1)
        depthwise = typed_modules(self.depthwise, nn.Conv1d)

        def conv(i: int) -> Callable[[torch.Tensor], torch.Tensor]:
            def f(x: torch.Tensor) -> torch.Tensor:
                # zero the padding so that a convolution reads the same values with or without it
                y = self.conv_norms[i](x).masked_fill(pad, 0)
                return F.relu(self.pointwise[i](depthwise_over_time(depthwise[i], y)))

            return f

        def attention(x: torch.Tensor) -> torch.Tensor:
            return self.attend(self.attention_norm(x), mask)

        def feed_forward(x: torch.Tensor) -> torch.Tensor:
            return self.ffn(self.ffn_norm(x))

        return [conv(i) for i in range(len(depthwise))] + [attention, feed_forward]

    def attend(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).view(batch, length, 3, self.heads, dim // self.heads).permute(2, 0, 3, 1, 4)
        keys = mask | ~mask.any(dim=1, keepdim=True)  # an empty text attends to its padding, not to nothing
        if x.device.type == "cpu" and torch.is_autocast_enabled("cpu"):
            out = key_masked_attention(q, k, v, keys)  # PyTorch's bf16 flash attention is slow on the CPU
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=keys[:, None, None, :])
        return self.attention_out(out.transpose(1, 2).reshape(batch, length, dim))


class EncoderStack(nn.Module):
    """Encoder blocks whose sub-layers are residual, dropped out and stochastically skipped."""

    def __init__(self, blocks: int, dim: int, convs: int, kernel: int, heads: int, dropout: float, final_survival: float) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(EncoderBlock(dim, convs, kernel, heads) for _ in range(blocks))
        total = sum(block.n_sublayers for block in typed_modules(self.blocks, EncoderBlock))
        self.survival = [1 - layer / total * (1 - final_survival) for layer in range(1, total + 1)]
        self.dropout_p = dropout

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        layer = 0
        for block in typed_modules(self.blocks, EncoderBlock):
            x = x + position_encoding(x.shape[1], x.shape[2], x.device).to(x.dtype)
            for f in block.sublayers(mask):
                survival = self.survival[layer]
                layer += 1
                scale = 1.0
                if self.training and survival < 1:
                    if torch.rand(()).item() >= survival:  # CPU draw: no device sync
                        continue
                    scale = 1 / survival  # folded into the dropout mask: one product, not two
                x = x + dropout(f(x), self.dropout_p, self.training, scale)
        return x


class QANet(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=True, features=False)  # what collate builds for it

    def __init__(self, hp: QANetHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        d = hp.hidden_size
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        self.char_cnn = CharCNN(inputs.n_chars, hp.char_dim, hp.char_filters, hp.char_kernel)
        self.word_dropout = nn.Dropout(hp.word_dropout)
        self.char_dropout = nn.Dropout(hp.char_dropout)
        embed_dim = self.word_embedding.dim + self.char_cnn.out_dim
        self.highway = Highway(embed_dim, hp.highway_layers)
        self.embedding_projection = nn.Linear(embed_dim, d)
        self.embedding_encoder = EncoderStack(
            blocks=hp.embedding_encoder_blocks,
            dim=d,
            convs=hp.embedding_encoder_convs,
            kernel=hp.embedding_encoder_kernel,
            heads=hp.attention_heads,
            dropout=hp.dropout,
            final_survival=hp.layer_survival,
        )
        self.attention = AttentionFlow(d, q2c="dcn")
        self.attention_projection = nn.Linear(self.attention.out_dim, d)
        self.model_encoder = EncoderStack(
            blocks=hp.model_encoder_blocks,
            dim=d,
            convs=hp.model_encoder_convs,
            kernel=hp.model_encoder_kernel,
            heads=hp.attention_heads,
            dropout=hp.dropout,
            final_survival=hp.layer_survival,
        )
        self.dropout = nn.Dropout(hp.dropout)
        self.start_scorer = nn.Linear(2 * d, 1)
        self.end_scorer = nn.Linear(2 * d, 1)

    def embed(self, words: torch.Tensor, characters: torch.Tensor) -> torch.Tensor:
        """(N, d) projected highway outputs of N words from their (N,) ids and (N, width) character ids."""
        spelled = by_length(self.char_cnn.encode)(characters)
        embedded = torch.cat([self.word_dropout(self.word_embedding(words)), self.char_dropout(spelled)], dim=-1)
        return self.embedding_projection(self.highway(embedded))

    def forward(self, batch: Batch) -> SpanLogits:
        mask = batch.c_mask
        c, q = per_distinct_token([batch.c_words, batch.q_words], [batch.c_chars, batch.q_chars], self.embed)
        c = self.embedding_encoder(c, mask)
        q = self.embedding_encoder(q, batch.q_mask)
        x = self.attention_projection(self.dropout(self.attention(c, q, mask, batch.q_mask)))
        passes = []
        for _ in range(MODEL_ENCODER_PASSES):
            x = self.model_encoder(x, mask)
            passes.append(x)
        m0, m1, m2 = passes
        start = self.start_scorer(torch.cat([m0, m1], dim=-1)).squeeze(-1)
        end = self.end_scorer(torch.cat([m0, m2], dim=-1)).squeeze(-1)
        return SpanLogits(start=start, end=end)


class QANetApproach(ReaderApproach):
    model_class = QANet

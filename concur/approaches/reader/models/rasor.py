"""RaSoR (Lee, Salant, Kwiatkowski, Parikh, Das & Berant 2016, "Learning Recurrent Span Representations
for Extractive Question Answering", arXiv:1611.01436).

Fixed word vectors p_i, q_j. Passage-independent question vector: a stacked BiLSTM over the
question, pooled by attention with scores w_q . FFNN(q'_j). Passage-aligned question vector:
for each passage word, attention over the question word vectors with scores FFNN(p_i) . FFNN(q_j).
A stacked BiLSTM over [p_i; q_align_i; q_indep] gives h_i; every span i..j of at most
`max_answer_length` words is represented explicitly as [h_i; h_j] and scored by w_a . FFNN([h_i; h_j]);
the loss is the cross-entropy over all spans (span_loss on SpanLogits.spans).

The span scorer's first layer is linear, so W [h_i; h_j] + b = (W_s h_i + b) + W_e h_j: both
projections are computed once per token and combined for all (start, length) pairs through an
`unfold` view of the end projections, as the official code does, giving (B, T, L, ffnn) directly
(one such tensor is kept for the backward pass: ~0.2 GB in fp32 at B = 40, T = 400, L = 30, ffnn = 100).

Deviations from the paper and why:
- The LSTMs are PyTorch's (cuDNN) standard LSTMs: the paper couples the input and forget gates
  (Greff et al. 2016), and the official code also drops recurrent states (0.1); cuDNN offers
  neither. Dropout (one `dropout` for all places, "0.1 throughout" in the paper) is applied with a
  single mask over time to every LSTM's input (Gal & Ghahramani, as the paper), to the inputs of the
  feed-forward networks, and separately to the span start and end representations (official code).
- Weights use PyTorch's default initialisation, not the official uniform(-5e-3, 5e-3).
- Out-of-vocabulary words: the paper maps each to one of 1M fixed random vectors; here the shared
  vocabulary gives training words without a pretrained vector a fixed random row and maps unseen
  words to one trainable UNK row.
- Span representations are as in the paper and official code; the FFNN over the passage and over the
  question in the aligned attention is one shared network (the official code's q_aln_ff_tie = True).
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.rasor import RasorHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import BiRNN, SequenceDropout, SpanLogits, WordEmbedding, masked_softmax


class FeedForward(nn.Module):
    """RaSoR's FFNN: dropout on the input, one linear layer, ReLU (the paper's ReLU hidden layers)."""

    def __init__(self, input_dim: int, output_dim: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.linear = nn.Linear(input_dim, output_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.linear(self.dropout(x)))


class RaSoR(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=False, features=False)  # what collate builds for it

    def __init__(self, hp: RasorHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.max_answer_length = hp.max_answer_length
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        dim = self.word_embedding.dim
        # passage-independent question representation
        self.question_rnn = BiRNN(dim, hp.hidden_size, hp.lstm_layers, hp.dropout, variational=True)
        self.indep_ff = FeedForward(self.question_rnn.out_dim, hp.ffnn_size, hp.dropout)
        self.indep_score = nn.Linear(hp.ffnn_size, 1, bias=False)  # w_q
        # passage-aligned question representation (one FFNN for both sides)
        self.align_ff = FeedForward(dim, hp.ffnn_size, hp.dropout)
        # passage-level BiLSTM over [p_i; q_align_i; q_indep]
        self.passage_rnn = BiRNN(2 * dim + self.question_rnn.out_dim, hp.hidden_size, hp.lstm_layers, hp.dropout, variational=True)
        # span scorer: w_a . relu(W_s h_start + W_e h_end + b)
        self.start_dropout = SequenceDropout(hp.dropout)
        self.end_dropout = SequenceDropout(hp.dropout)
        self.span_start = nn.Linear(self.passage_rnn.out_dim, hp.ffnn_size)
        self.span_end = nn.Linear(self.passage_rnn.out_dim, hp.ffnn_size, bias=False)
        self.span_score = nn.Linear(hp.ffnn_size, 1, bias=False)  # w_a (a bias would cancel in the softmax)

    def forward(self, batch: Batch) -> SpanLogits:
        p = self.word_embedding(batch.c_words)
        q = self.word_embedding(batch.q_words)

        q_hidden = self.question_rnn(q, batch.q_mask)
        indep_scores = self.indep_score(self.indep_ff(q_hidden)).squeeze(-1)
        indep_weights = masked_softmax(indep_scores, batch.q_mask, dim=1).to(q_hidden.dtype)
        q_indep = (indep_weights.unsqueeze(1) @ q_hidden).expand(-1, p.shape[1], -1)

        align_scores = self.align_ff(p) @ self.align_ff(q).transpose(1, 2)
        q_align = masked_softmax(align_scores, batch.q_mask.unsqueeze(1), dim=2).to(q.dtype) @ q

        h = self.passage_rnn(torch.cat([p, q_align, q_indep], dim=-1), batch.c_mask)
        return SpanLogits(spans=self.score_spans(self.span_start(self.start_dropout(h)), self.span_end(self.end_dropout(h))))

    def score_spans(self, start: torch.Tensor, end: torch.Tensor) -> torch.Tensor:
        """(B, T, L) scores of spans i..i+d from per-token start (B, T, F) and end (B, T, F) projections."""
        length = self.max_answer_length
        # ends[b, i, d] = end[b, i + d] (zeros past the passage: those spans are masked by span_grid)
        ends = F.pad(end, (0, 0, 0, length - 1)).unfold(1, length, 1).transpose(2, 3)  # (B, T, L, F), a view
        hidden = (start.unsqueeze(2) + ends).relu_()
        return self.span_score(hidden).squeeze(-1)


class RasorApproach(ReaderApproach):
    model_class = RaSoR

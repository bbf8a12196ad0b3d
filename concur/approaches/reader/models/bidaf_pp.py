"""BiDAF++ (Clark & Gardner 2018, "Simple and Effective Multi-Paragraph Reading Comprehension", ACL), §3.1.

Fixed word vectors + a character CNN (max-pooled) -> a bidirectional GRU shared by passage and
question -> BiDAF's bidirectional attention, a linear layer with ReLU -> a residual self-attention
block (bi-GRU, attention of the passage over itself with the diagonal excluded, [h; a; h * a]
through a linear layer with ReLU, added to the block's input) -> a bi-GRU and a linear layer give
the start scores; a second bi-GRU over [hidden; start bi-GRU output] and a linear layer give the end
scores. Variational dropout (one mask per sequence) on the inputs of every GRU and attention.

Deviations and choices:
- The paragraph-level model only: MRQA-format questions come with one passage, so the paper's
  shared-norm multi-paragraph objective does not apply.
- Query-to-context attention is `AttentionFlow(q2c="max")`: m_i = max_j s_ij, p = softmax(m),
  q_c = sum_i p_i h_i, as in the paper. Its fourth feature is h_i * q_c, as in BiDAF and in the
  official code (docqa BiAttention: `x * select_context`); the paper's text writes it q_c * c_i.
- The self-attention output is [h; a; h * a] ("as before", the paper; docqa ConcatWithProduct), not
  [a; h * a]. The official code's learned "no-alignment" bias in the self-attention softmax (not in
  the paper) is left out: the shared `SelfAttention` is a plain softmax with the diagonal excluded.
- Dropout goes where the paper puts it (inputs of the GRUs and of the attentions), not before the
  ReLU layers or the start/end scorers. The official code also drops the character embeddings
  before the CNN; the shared `CharCNN` has no internal dropout, so the character features are
  dropped only as part of the first GRU's input.
- Initialisation is PyTorch's default (the official code: truncated normal, stddev 0.05, for the GRUs).
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.bidaf_pp import BidafPPHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import AttentionFlow, BiRNN, CharCNN, SelfAttention, SequenceDropout, SpanLogits, WordEmbedding


class BidafPP(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=True, features=False)  # what collate builds for it

    def __init__(self, hp: BidafPPHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        self.char_cnn = CharCNN(inputs.n_chars, hp.char_dim, hp.char_filters, hp.char_kernel)
        self.dropout = SequenceDropout(hp.dropout, variational=True)

        def gru(input_dim: int) -> BiRNN:
            return BiRNN(input_dim, hp.hidden_size, 1, hp.dropout, cell="gru", variational=True)

        self.encoder = gru(self.word_embedding.dim + self.char_cnn.out_dim)
        self.attention = AttentionFlow(self.encoder.out_dim, q2c="max")
        self.attention_linear = nn.Linear(self.attention.out_dim, hp.linear_size)
        self.self_rnn = gru(hp.linear_size)
        self.self_attention = SelfAttention(self.self_rnn.out_dim)
        self.self_linear = nn.Linear(3 * self.self_rnn.out_dim, hp.linear_size)
        self.start_rnn = gru(hp.linear_size)
        self.end_rnn = gru(hp.linear_size + self.start_rnn.out_dim)
        self.start_scorer = nn.Linear(self.start_rnn.out_dim, 1)
        self.end_scorer = nn.Linear(self.end_rnn.out_dim, 1)

    def encode(self, words: torch.Tensor, characters: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.encoder(torch.cat([self.word_embedding(words), characters], dim=-1), mask)

    def forward(self, batch: Batch) -> SpanLogits:
        mask = batch.c_mask
        c_chars, q_chars = self.char_cnn(batch.c_chars, batch.q_chars)
        c = self.dropout(self.encode(batch.c_words, c_chars, mask))
        q = self.dropout(self.encode(batch.q_words, q_chars, batch.q_mask))
        x = F.relu(self.attention_linear(self.attention(c, q, mask, batch.q_mask)))
        h = self.dropout(self.self_rnn(x, mask))
        a = self.self_attention(h, mask)
        x = x + F.relu(self.self_linear(torch.cat([h, a, h * a], dim=-1)))
        start_hidden = self.start_rnn(x, mask)
        end_hidden = self.end_rnn(torch.cat([x, start_hidden], dim=-1), mask)
        return SpanLogits(start=self.start_scorer(start_hidden).squeeze(-1), end=self.end_scorer(end_hidden).squeeze(-1))


class BidafPPApproach(ReaderApproach):
    model_class = BidafPP

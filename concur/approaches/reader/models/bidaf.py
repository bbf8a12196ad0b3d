"""BiDAF (Seo, Kembhavi, Farhadi & Hajishirzi 2017, "Bidirectional Attention Flow for Machine Comprehension").

Character CNN + word vectors -> two-layer highway -> contextual BiLSTM -> attention flow
(context-to-query and query-to-context) -> two-layer modeling BiLSTM -> start from
[G; M], end from [G; M2] where M2 is one more BiLSTM over M.

Deviations: the paper shares one highway network over the concatenated character and word
embeddings, as here; dropout is applied to the inputs of every LSTM and of the output
layer (the paper: "dropout rate 0.2 to the CNN, all LSTM layers, and the linear
transformation before the softmax"). Word vectors are fixed (tune_top_k = 0 in the spec),
as the paper's GloVe. The dropout on a word's character vector is drawn once per distinct word
(word id and spelling) of a batch, not once per occurrence, so that the embedding and highway
layers run once per distinct word (`per_distinct_token`): a SQuAD batch of 60 has ~9,500 tokens
and only a few thousand distinct words, so the highway's products shrink by about a third.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.bidaf import BidafHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import AttentionFlow, BiRNN, CharCNN, Highway, SpanLogits, WordEmbedding, by_length, per_distinct_token


class BiDAF(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=True, features=False)  # what collate builds for it

    def __init__(self, hp: BidafHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        self.char_cnn = CharCNN(inputs.n_chars, hp.char_dim, hp.char_filters, hp.char_kernel)
        self.char_dropout = nn.Dropout(hp.dropout)
        embed_dim = self.word_embedding.dim + self.char_cnn.out_dim
        self.highway = Highway(embed_dim, hp.highway_layers)
        self.contextual = BiRNN(embed_dim, hp.hidden_size, 1, hp.dropout)
        self.attention = AttentionFlow(self.contextual.out_dim)
        self.modeling = BiRNN(self.attention.out_dim, hp.hidden_size, hp.modeling_layers, hp.dropout)
        self.end_rnn = BiRNN(self.modeling.out_dim, hp.hidden_size, 1, hp.dropout)
        output_dim = self.attention.out_dim + self.modeling.out_dim
        self.output_dropout = nn.Dropout(hp.dropout)
        self.start_scorer = nn.Linear(output_dim, 1)
        self.end_scorer = nn.Linear(output_dim, 1)

    def embed(self, words: torch.Tensor, characters: torch.Tensor) -> torch.Tensor:
        """(N, embed_dim) highway outputs of N words from their (N,) ids and (N, width) character ids."""
        spelled = by_length(self.char_cnn.encode)(characters)
        return self.highway(torch.cat([self.char_dropout(spelled), self.word_embedding(words)], dim=-1))

    def forward(self, batch: Batch) -> SpanLogits:
        c, q = per_distinct_token([batch.c_words, batch.q_words], [batch.c_chars, batch.q_chars], self.embed)
        c = self.contextual(c, batch.c_mask)
        q = self.contextual(q, batch.q_mask)
        g = self.attention(c, q, batch.c_mask, batch.q_mask)
        m = self.modeling(g, batch.c_mask)
        m2 = self.end_rnn(m, batch.c_mask)
        start = self.start_scorer(self.output_dropout(torch.cat([g, m], dim=-1))).squeeze(-1)
        end = self.end_scorer(self.output_dropout(torch.cat([g, m2], dim=-1))).squeeze(-1)
        return SpanLogits(start=start, end=end)


class BidafApproach(ReaderApproach):
    model_class = BiDAF

"""DrQA's Document Reader (Chen, Fisch, Weston & Bordes 2017, "Reading Wikipedia to Answer Open-Domain Questions").

Each paragraph token is the concatenation of its word vector, the aligned question embedding
(attention over the question's word vectors with scores relu(W p_i) . relu(W q_j)), the
exact-match features (original, lower-cased and, with a tagger, lemma form), term frequency
and, with a tagger, one-hot POS and NER tags. A multi-layer BiLSTM reads the paragraph and one
reads the question word vectors, each returning all its layers' outputs side by side; the
question is pooled with learned attention weights (softmax of w . q_j), and bilinear terms
p_i W_s q and p_i W_e q score the start and the end. Spans are decoded as the best
start/end pair at most `max_answer_length` tokens long (15 in the official code).

The -nofeat variant (linguistic_features = false) drops the POS, NER and lemma-match features
(no tagger) and keeps the word vectors, exact match on the original and lower-cased forms,
term frequency and the aligned question embedding.

Deviations from the paper and why:
- POS and NER are one-hot vectors over the tags seen in training, as DrQA's features (no learned
  tag embeddings); they come from a spaCy pipeline instead of Stanford CoreNLP, and a tag first
  seen at test time gets no bit (as DrQA's feature dictionary).
- Dropout follows the official code's placement (applied to word embeddings, to the input of every
  LSTM layer and to the concatenated LSTM outputs) with the paper's rate (one `dropout`, 0.3).
- Padding never reaches the LSTMs' outputs at real tokens (`BiRNN`), in training too (the official code
  packs sequences only at prediction time by default: rnn_padding = False while training).
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.docreader import DocReaderHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import BilinearSeqAttn, BiRNN, LinearSeqAttn, SeqAttnMatch, SpanLogits, WordEmbedding

# Tag ids 0 (padding) and 1 (a tag unseen in training) carry no one-hot bit (concur.approaches.reader.vocab).
FIRST_TAG = 2


class DocReader(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=False, features=True)  # what collate builds for it

    def __init__(self, hp: DocReaderHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        dim = self.word_embedding.dim
        self.linguistic = inputs.linguistic
        self.n_pos, self.n_ner = inputs.n_pos, inputs.n_ner
        tag_dim = max(0, self.n_pos - FIRST_TAG) + max(0, self.n_ner - FIRST_TAG) if self.linguistic else 0
        self.embedding_dropout = nn.Dropout(hp.dropout)
        self.aligned = SeqAttnMatch(dim)
        # concat_layers: every layer's output feeds the answer scorers (the paper; official concat_rnn_layers)
        self.paragraph_rnn = BiRNN(2 * dim + inputs.n_features + tag_dim, hp.hidden_size, hp.layers, hp.dropout, concat_layers=True)
        self.question_rnn = BiRNN(dim, hp.hidden_size, hp.layers, hp.dropout, concat_layers=True)
        self.output_dropout = nn.Dropout(hp.dropout)
        self.question_pool = LinearSeqAttn(self.question_rnn.out_dim)
        self.start_attention = BilinearSeqAttn(self.paragraph_rnn.out_dim, self.question_rnn.out_dim)
        self.end_attention = BilinearSeqAttn(self.paragraph_rnn.out_dim, self.question_rnn.out_dim)

    def tags(self, ids: torch.Tensor, n: int) -> torch.Tensor:
        """One-hot tags (B, T, n - FIRST_TAG); padding and unseen tags are all zeros."""
        return F.one_hot(ids, n)[..., FIRST_TAG:].float()

    def forward(self, batch: Batch) -> SpanLogits:
        p = self.embedding_dropout(self.word_embedding(batch.c_words))
        q = self.embedding_dropout(self.word_embedding(batch.q_words))
        features = [p, self.aligned(p, q, batch.q_mask), batch.c_features.to(p.dtype)]
        if self.linguistic:
            features += [self.tags(batch.c_pos, self.n_pos).to(p.dtype), self.tags(batch.c_ner, self.n_ner).to(p.dtype)]
        paragraph = self.output_dropout(self.paragraph_rnn(torch.cat(features, dim=-1), batch.c_mask))
        question = self.output_dropout(self.question_rnn(q, batch.q_mask))
        pooled = self.question_pool(question, batch.q_mask)
        return SpanLogits(start=self.start_attention(paragraph, pooled), end=self.end_attention(paragraph, pooled))


class DocReaderApproach(ReaderApproach):
    model_class = DocReader

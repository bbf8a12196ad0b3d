"""FusionNet (Huang, Zhu, Shen & Chen 2018, "FusionNet: Fusing via Fully-Aware Attention with Application to
Machine Comprehension", ICLR).

History of word: every word's GloVe vector g and contextual vector c (CoVe in the paper); passage words
also carry POS and NER embeddings (with linguistic features), the exact-match and normalised
term-frequency features, and the word-level fusion g^ (each passage word's attention over the question
words on GloVe, DrQA's aligned embedding). Reading: a two-layer BiLSTM over the passage and another over
the question give low-level and high-level concepts h^l, h^h; question understanding: a BiLSTM over
[h^Ql; h^Qh] gives U^Q. Fully-aware multi-level fusion: three attentions, each scored on the whole
history of word HoW = [g; c; h^l; h^h] with the symmetric form with nonlinearity
S(x, y) = ReLU(U x)^T D ReLU(U y) (own U, diagonal D per level), fuse the question's low, high and
understanding levels into the passage; a BiLSTM over [h^Cl; h^Ch; h^l~; h^h~; u~] gives V^C.
Fully-aware self-boosted fusion: the passage attends over itself on its extended history
[g; c; h^l; h^h; h^l~; h^h~; u~; v] (same form) and a final BiLSTM over [v; v~] gives U^C. Output: the
question summary u^Q (linear self-attention over U^Q) scores starts bilinearly against U^C; a GRU cell
updates the summary with the start-attended passage vector, which scores ends bilinearly.

Deviations from the paper:
- CoVe needs the pretrained CoVe MT-LSTM weights, which are not available offline. It is replaced by a
  trainable 2-layer BiLSTM (`cove_layers`, `cove_hidden_size` per direction: CoVe's 2 x 300) over the
  word vectors, shared by passage and question and trained jointly with the reader, with no
  pretraining. It has CoVe's shape but none of its machine-translation knowledge.
- Dropout (rate `dropout`) is applied to the input of every BiLSTM, attention and output layer, with an
  independent mask for each input (the paper, as recalled, shares masks where parameters are shared).
- The self-boosted fusion attends over every passage word, the word itself included (the paper's sum
  over all j, as recalled).
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.fusionnet import FusionNetHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import BilinearSeqAttn, BiRNN, LinearSeqAttn, SeqAttnMatch, SpanLogits, WordEmbedding, masked_softmax

# Huang et al. (2018) §3.1: the reading BiLSTMs give exactly two levels of concepts, low and high.
READING_LEVELS = 2
# Question understanding, passage fusion and the final passage BiLSTM are one BiLSTM each (§3.1).
FUSION_RNN_LAYERS = 1


class FullyAwareAttention(nn.Module):
    """Attention scored on histories of word: S(x_i, y_j) = ReLU(U x_i)^T D ReLU(U y_j), D diagonal."""

    def __init__(self, how_dim: int, size: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.project = nn.Linear(how_dim, size, bias=False)
        self.diagonal = nn.Parameter(torch.ones(size))

    def forward(self, x_how: torch.Tensor, y_how: torch.Tensor, y_values: torch.Tensor, y_mask: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.project(self.dropout(x_how)))
        y = F.relu(self.project(self.dropout(y_how)))
        scores = (x * self.diagonal) @ y.transpose(1, 2)
        return masked_softmax(scores, y_mask.unsqueeze(1), dim=2).to(y_values.dtype) @ y_values


class FusionNet(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=False, features=True)  # what collate builds for it

    def __init__(self, hp: FusionNetHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.linguistic = inputs.linguistic
        self.dropout = nn.Dropout(hp.dropout)
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        word_dim = self.word_embedding.dim
        self.contextual = BiRNN(word_dim, hp.cove_hidden_size, hp.cove_layers, hp.dropout)  # the CoVe stand-in
        self.word_fusion = SeqAttnMatch(word_dim)
        embed_dim = word_dim + self.contextual.out_dim  # [g; c]: the paired part of the history of word
        c_input = embed_dim + inputs.n_features + word_dim
        if self.linguistic:
            self.pos_embedding = nn.Embedding(inputs.n_pos, hp.pos_dim, padding_idx=0)
            self.ner_embedding = nn.Embedding(inputs.n_ner, hp.ner_dim, padding_idx=0)
            c_input += hp.pos_dim + hp.ner_dim
        self.c_reading = BiRNN(c_input, hp.hidden_size, READING_LEVELS, hp.dropout, concat_layers=True)
        self.q_reading = BiRNN(embed_dim, hp.hidden_size, READING_LEVELS, hp.dropout, concat_layers=True)
        level = 2 * hp.hidden_size
        self.q_understanding = BiRNN(READING_LEVELS * level, hp.hidden_size, FUSION_RNN_LAYERS, hp.dropout)
        how_dim = embed_dim + READING_LEVELS * level
        levels = READING_LEVELS + 1  # the question's low, high and understanding levels
        self.level_attentions = nn.ModuleList(FullyAwareAttention(how_dim, hp.attention_size, hp.dropout) for _ in range(levels))
        fused = levels * level
        self.c_fusion = BiRNN(READING_LEVELS * level + fused, hp.hidden_size, FUSION_RNN_LAYERS, hp.dropout)
        self.self_attention = FullyAwareAttention(how_dim + fused + level, hp.attention_size, hp.dropout)
        self.c_final = BiRNN(2 * level, hp.hidden_size, FUSION_RNN_LAYERS, hp.dropout)
        self.q_summary = LinearSeqAttn(level)
        self.start_scorer = BilinearSeqAttn(level, level)
        self.end_gru = nn.GRUCell(level, level)
        self.end_scorer = BilinearSeqAttn(level, level)

    def forward(self, batch: Batch) -> SpanLogits:
        c_mask, q_mask = batch.c_mask, batch.q_mask
        g_c, g_q = self.word_embedding(batch.c_words), self.word_embedding(batch.q_words)
        paired_c = torch.cat([g_c, self.contextual(g_c, c_mask)], dim=-1)
        paired_q = torch.cat([g_q, self.contextual(g_q, q_mask)], dim=-1)
        aligned = self.word_fusion(self.dropout(g_c), self.dropout(g_q), q_mask)
        c_parts = [paired_c, batch.c_features.to(g_c.dtype), aligned]
        if self.linguistic:
            c_parts += [self.pos_embedding(batch.c_pos), self.ner_embedding(batch.c_ner)]
        h_c = self.c_reading(torch.cat(c_parts, dim=-1), c_mask)  # [h^l; h^h]
        h_q = self.q_reading(paired_q, q_mask)
        u_q = self.q_understanding(h_q, q_mask)
        how_c = torch.cat([paired_c, h_c], dim=-1)
        how_q = torch.cat([paired_q, h_q], dim=-1)
        q_levels = [*h_q.chunk(READING_LEVELS, dim=-1), u_q]
        fused = torch.cat([attend(how_c, how_q, values, q_mask) for attend, values in zip(self.level_attentions, q_levels)], dim=-1)
        v_c = self.c_fusion(torch.cat([h_c, fused], dim=-1), c_mask)
        how_self = torch.cat([how_c, fused, v_c], dim=-1)
        boosted = self.self_attention(how_self, how_self, v_c, c_mask)
        u_c = self.c_final(torch.cat([v_c, boosted], dim=-1), c_mask)
        summary = self.q_summary(self.dropout(u_q), q_mask)
        passage = self.dropout(u_c)
        start = self.start_scorer(passage, self.dropout(summary))
        evidence = (masked_softmax(start, c_mask).to(u_c.dtype).unsqueeze(1) @ u_c).squeeze(1)
        summary = self.end_gru(self.dropout(evidence), self.dropout(summary))
        end = self.end_scorer(passage, self.dropout(summary))
        return SpanLogits(start=start, end=end)


class FusionNetApproach(ReaderApproach):
    model_class = FusionNet

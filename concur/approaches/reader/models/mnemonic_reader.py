"""Mnemonic Reader (Hu, Peng, Huang, Qiu, Wei & Zhou 2018, "Reinforced Mnemonic Reader for Machine Reading
Comprehension", IJCAI; arXiv:1705.02798), trained by maximum likelihood only, as the reference study.

Encoder: word vectors, a character BiLSTM (its two final states), with linguistic features POS and NER
embeddings, and the exact-match / term-frequency features, for passage and question alike, through one
shared BiLSTM. Iterative aligner, `hops` rounds, each: interactive alignment (every passage word attends
over the question, scores relu(W c_i) . relu(W q_j); c_bar = SFU(c, [q~; c*q~; c-q~])), self alignment
(every passage word attends over the other passage words, same score form; c_hat = SFU(c_bar, [c~;
c_bar*c~; c_bar-c~])) and an aggregation BiLSTM whose output feeds the next round. From round 2 on the
interactive scores add gamma times the re-attention softmax(B')^T softmax(E') built from the previous
round's self (B') and interactive (E') scores, and the self-alignment scores add gamma times A A^T,
where A is the current round's passage-to-question attention (the paper's re-attention). A semantic
fusion unit is SFU(x, f) = g * tanh(W_r [x; f]) + (1 - g) * x with g = sigmoid(W_g [x; f]).
Memory-based answer pointer, `pointer_hops` hops: the memory z starts as the question encoding at its
last word; each hop scores starts w . tanh(W [c_i; z; c_i * z]), updates z by an SFU with the
start-attended passage vector, scores ends the same way, and (except after the last hop) updates z
again with the end-attended vector. The last hop's start and end scores are the output.

Deviations and choices (the paper could not be re-read while writing this; its details are as recalled):
- no dynamic-critical reinforcement learning (the reference study trains this reader without it);
- the learning rate is not halved on a "bad iteration" (the shared loop has no development-set
  evaluation); the spec keeps the rate fixed;
- the similarity f(u, v) = relu(W u) . relu(W v) uses one W per attention (DrQA's form) and the
  self-alignment diagonal is masked out rather than given a zero score;
- re-attention of the interactive alignment starts at round 2 (no previous attention before it); the
  self-alignment one uses the current round's interactive attention from round 1 on (as recalled);
- the pointer memory starts from the question encoding at its last real word (the official
  re-implementation takes the last, possibly padded, position);
- POS and NER are learned embeddings (the paper's sizes are not recalled; the spec chooses them); the
  paper's out-of-vocabulary word vectors are trainable, here only the unknown row is (tune_top_k = 0);
- dropout is applied to the character embeddings, to the input of every BiLSTM and to the pointer's
  scoring input.
"""

from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from concur.approaches.reader.approach import ReaderApproach
from concur.approaches.reader.batch import Batch, BatchContents
from concur.approaches.reader.hparams.mnemonic_reader import MnemonicReaderHParams
from concur.approaches.reader.inputs import ReaderInputs
from concur.approaches.reader.layers import BiRNN, SpanLogits, WordEmbedding, masked_softmax, per_distinct_word, typed_modules


class CharBiLSTM(nn.Module):
    """Each word's characters through a BiLSTM; the word's vector is the two directions' final states.

    Each distinct spelling of a batch is read once (`per_distinct_word`), so a dropout mask on the
    character embeddings is shared by a word's repeats within a batch.
    """

    def __init__(self, n_chars: int, char_dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_chars, char_dim, padding_idx=0)
        self.rnn = BiRNN(char_dim, hidden, 1, dropout)  # dropout on the character embeddings
        self.hidden = hidden
        self.out_dim = 2 * hidden

    def forward(self, *texts: torch.Tensor) -> list[torch.Tensor]:
        """(B, T, out_dim) vectors of each (B, T, width) character-id tensor; each distinct word among them is read once."""
        return per_distinct_word(texts, self.encode)

    def encode(self, words: torch.Tensor) -> torch.Tensor:
        """(N, out_dim) vectors of N words of (N, width) character ids; a word without characters gets zeros."""
        lengths = (words > 0).sum(dim=1)
        real = lengths > 0
        words, lengths = words[real], lengths[real]
        out = self.embedding.weight.new_zeros(real.shape[0], self.out_dim)
        if words.shape[0]:
            words = words[:, : int(lengths.max())]  # no step past the longest word
            states = self.rnn(self.embedding(words), words > 0)
            # forward direction: its state after the last character; backward: after the first
            ahead = states[torch.arange(words.shape[0], device=words.device), lengths - 1, : self.hidden]
            out[real] = torch.cat([ahead, states[:, 0, self.hidden :]], dim=-1).to(out.dtype)
        return out


class SFU(nn.Module):
    """Semantic fusion unit: o = g * tanh(W_r [x; f]) + (1 - g) * x, g = sigmoid(W_g [x; f])."""

    def __init__(self, dim: int, fusion_dim: int) -> None:
        super().__init__()
        self.compose = nn.Linear(dim + fusion_dim, dim)
        self.gate = nn.Linear(dim + fusion_dim, dim)

    def forward(self, x: torch.Tensor, fusion: torch.Tensor) -> torch.Tensor:
        weight, bias = self._stacked()
        return self._fuse(x, F.linear(torch.cat([x, fusion], dim=-1), weight, bias))

    def fuse_alignment(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        """SFU(x, [a; x * a; x - a]) for an attended vector a, without building its (..., 4 dim) input.

        The input is linear in its blocks, W [x; a; x*a; x-a] = (W_x + W_s) x + (W_a - W_s) a + W_m (x*a),
        which saves the two wide concatenations and a quarter of the products (the aligner's SFUs
        run over every passage word).
        """
        weight, bias = self._stacked()
        w_x, w_a, w_m, w_s = weight.split(x.shape[-1], dim=1)
        return self._fuse(x, F.linear(x, w_x + w_s, bias) + F.linear(attended, w_a - w_s) + F.linear(x * attended, w_m))

    def _stacked(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The composition's and the gate's weights as one layer: both come out of a single product."""
        return torch.cat([self.compose.weight, self.gate.weight]), torch.cat([self.compose.bias, self.gate.bias])

    @staticmethod
    def _fuse(x: torch.Tensor, both: torch.Tensor) -> torch.Tensor:
        composed, gate = both.split(x.shape[-1], dim=-1)
        gate = torch.sigmoid(gate)
        return gate * torch.tanh(composed) + (1 - gate) * x


class AlignmentScores(nn.Module):
    """Unnormalised alignment scores relu(W x_i) . relu(W y_j), shape (B, Tx, Ty)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.project = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        projected = F.relu(self.project(x))
        other = projected if y is x else F.relu(self.project(y))  # self alignment projects once
        return projected @ other.transpose(1, 2)


class PointerScorer(nn.Module):
    """Scores every passage word against the memory z: w . tanh(W [c_i; z; c_i * z]).

    W is applied block by block, W_c c_i + W_z z + W_m (c_i * z), without the (..., 3 dim) input;
    each block gets its own dropout mask, as slices of one mask over the concatenation would be
    drawn. Outside training W_z z is computed once per question, not once per passage word.
    """

    def __init__(self, dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.hidden = nn.Linear(3 * dim, hidden)
        self.out = nn.Linear(hidden, 1, bias=False)

    def forward(self, c: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        w_c, w_z, w_m = self.hidden.weight.split(c.shape[-1], dim=1)
        tokens = z.unsqueeze(1).expand_as(c)
        memory = F.linear(self.dropout(tokens), w_z) if self.training else F.linear(z, w_z).unsqueeze(1)
        hidden = F.linear(self.dropout(c), w_c, self.hidden.bias) + memory + F.linear(self.dropout(c * tokens), w_m)
        return self.out(torch.tanh(hidden)).squeeze(-1)


class MnemonicReader(nn.Module):
    batch_contents: ClassVar[BatchContents] = BatchContents(chars=True, features=True)  # what collate builds for it

    def __init__(self, hp: MnemonicReaderHParams, inputs: ReaderInputs) -> None:
        super().__init__()
        self.linguistic = inputs.linguistic
        self.gamma = hp.reattention_gamma
        self.word_embedding = WordEmbedding(inputs.vectors, inputs.n_tuned)
        self.char_encoder = CharBiLSTM(inputs.n_chars, hp.char_dim, hp.char_hidden_size, hp.dropout)
        input_dim = self.word_embedding.dim + self.char_encoder.out_dim + inputs.n_features
        if self.linguistic:
            self.pos_embedding = nn.Embedding(inputs.n_pos, hp.pos_dim, padding_idx=0)
            self.ner_embedding = nn.Embedding(inputs.n_ner, hp.ner_dim, padding_idx=0)
            input_dim += hp.pos_dim + hp.ner_dim
        self.encoder = BiRNN(input_dim, hp.hidden_size, 1, hp.dropout)
        dim = self.encoder.out_dim
        self.interactive_scores = nn.ModuleList(AlignmentScores(dim) for _ in range(hp.hops))
        self.interactive_fusions = nn.ModuleList(SFU(dim, 3 * dim) for _ in range(hp.hops))
        self.self_scores = nn.ModuleList(AlignmentScores(dim) for _ in range(hp.hops))
        self.self_fusions = nn.ModuleList(SFU(dim, 3 * dim) for _ in range(hp.hops))
        self.aggregators = nn.ModuleList(BiRNN(dim, hp.hidden_size, 1, hp.dropout) for _ in range(hp.hops))
        self.start_scorers = nn.ModuleList(PointerScorer(dim, hp.hidden_size, hp.dropout) for _ in range(hp.pointer_hops))
        self.end_scorers = nn.ModuleList(PointerScorer(dim, hp.hidden_size, hp.dropout) for _ in range(hp.pointer_hops))
        self.start_memory = nn.ModuleList(SFU(dim, dim) for _ in range(hp.pointer_hops))
        # the last hop's end evidence would only update a memory nothing reads
        self.end_memory = nn.ModuleList(SFU(dim, dim) for _ in range(hp.pointer_hops - 1))

    def encode(self, words, characters, pos, ner, features, mask) -> torch.Tensor:
        parts = [self.word_embedding(words), characters]
        if self.linguistic:
            parts += [self.pos_embedding(pos), self.ner_embedding(ner)]
        parts.append(features.to(parts[0].dtype))
        return self.encoder(torch.cat(parts, dim=-1), mask)

    def forward(self, batch: Batch) -> SpanLogits:
        c_mask, q_mask = batch.c_mask, batch.q_mask
        c_chars, q_chars = self.char_encoder(batch.c_chars, batch.q_chars)
        c = self.encode(batch.c_words, c_chars, batch.c_pos, batch.c_ner, batch.c_features, c_mask)
        q = self.encode(batch.q_words, q_chars, batch.q_pos, batch.q_ner, batch.q_features, q_mask)
        length = c.shape[1]
        others = ~torch.eye(length, dtype=torch.bool, device=c.device)
        # a one-word passage has no other word: it may attend to itself
        others = others | (c_mask.sum(dim=1) <= 1).view(-1, 1, 1)
        pairs = c_mask.unsqueeze(1) & c_mask.unsqueeze(2) & others  # (B, Tc, Tc), symmetric
        to_question = q_mask.unsqueeze(1)
        previous_e = previous_b = None
        interactive_fusions, self_fusions = typed_modules(self.interactive_fusions, SFU), typed_modules(self.self_fusions, SFU)
        for t in range(len(self.aggregators)):
            e = self.interactive_scores[t](c, q)  # (B, Tc, Tq)
            if previous_e is not None and previous_b is not None and self.gamma > 0:
                # re-attention: passage word j -> passage word k (previous self alignment, normalised over k)
                # -> question word i (previous interactive alignment, normalised over the passage)
                through_self = masked_softmax(previous_b, pairs, dim=1)
                question_over_passage = masked_softmax(previous_e, c_mask.unsqueeze(2), dim=1)
                e = e + self.gamma * (through_self.transpose(1, 2) @ question_over_passage)
            attention = masked_softmax(e, to_question, dim=2)
            attended = attention.to(q.dtype) @ q
            c_bar = interactive_fusions[t].fuse_alignment(c, attended)
            b = self.self_scores[t](c_bar, c_bar)  # (B, Tc, Tc)
            if self.gamma > 0:
                # re-attention: two passage words are related when they attend to the same question words
                b = b + self.gamma * (attention @ attention.transpose(1, 2))
            attended = masked_softmax(b, pairs, dim=2).to(c_bar.dtype) @ c_bar
            c_hat = self_fusions[t].fuse_alignment(c_bar, attended)
            c = self.aggregators[t](c_hat, c_mask)
            previous_e, previous_b = e, b
        last = (q_mask.sum(dim=1) - 1).clamp(min=0)
        memory = q[torch.arange(q.shape[0], device=q.device), last]  # (B, 2h)
        start = end = c.new_zeros(c.shape[:2])
        for hop in range(len(self.start_scorers)):
            start = self.start_scorers[hop](c, memory)
            evidence = (masked_softmax(start, c_mask).to(c.dtype).unsqueeze(1) @ c).squeeze(1)
            memory = self.start_memory[hop](memory, evidence)
            end = self.end_scorers[hop](c, memory)
            if hop < len(self.end_memory):
                evidence = (masked_softmax(end, c_mask).to(c.dtype).unsqueeze(1) @ c).squeeze(1)
                memory = self.end_memory[hop](memory, evidence)
        return SpanLogits(start=start, end=end)


class MnemonicReaderApproach(ReaderApproach):
    model_class = MnemonicReader

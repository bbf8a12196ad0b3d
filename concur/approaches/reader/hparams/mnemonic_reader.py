"""Mnemonic Reader's architecture hyperparameters (Hu et al. 2018, without the reinforcement-learning stage)."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class MnemonicReaderHParams(ReaderHParams):
    hidden_size: int  # per direction of every BiLSTM, and the pointer's feed-forward width (the paper's 100)
    char_dim: int  # character embedding size (50)
    char_hidden_size: int  # per direction of the character BiLSTM (50)
    pos_dim: int  # POS tag embedding size (used only with linguistic features)
    ner_dim: int  # entity tag embedding size (used only with linguistic features)
    hops: int  # aligning rounds T of the iterative aligner (interactive + self alignment + aggregation)
    pointer_hops: int  # hops L of the memory-based answer pointer
    reattention_gamma: float  # weight of the re-attention term added to the alignment scores from round 2 on; 0 = none

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("char_dim", self.char_dim >= 1, "must be at least 1"),
            ("char_hidden_size", self.char_hidden_size >= 1, "must be at least 1"),
            ("pos_dim", self.pos_dim >= 1, "must be at least 1"),
            ("ner_dim", self.ner_dim >= 1, "must be at least 1"),
            ("hops", self.hops >= 1, "must be at least 1"),
            ("pointer_hops", self.pointer_hops >= 1, "must be at least 1"),
            ("reattention_gamma", self.reattention_gamma >= 0, "must not be negative (0 turns re-attention off)"),
        ]


KIND = ApproachKind(
    hparams=MnemonicReaderHParams, approach="concur.approaches.reader.models.mnemonic_reader:MnemonicReaderApproach", preload=READER_PRELOAD
)

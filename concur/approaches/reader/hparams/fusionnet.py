"""FusionNet's architecture hyperparameters (Huang et al. 2018)."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class FusionNetHParams(ReaderHParams):
    hidden_size: int  # per direction of every BiLSTM (the paper's 125; 250-d representations)
    attention_size: int  # k, the width of each fully-aware attention's ReLU(U x) (250)
    cove_hidden_size: int  # per direction of the trainable BiLSTM that stands in for CoVe (CoVe's 300: 600-d outputs)
    cove_layers: int  # layers of that BiLSTM (CoVe's MT-LSTM has 2)
    pos_dim: int  # POS tag embedding size (12), used only with linguistic features
    ner_dim: int  # entity tag embedding size (8), used only with linguistic features

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("attention_size", self.attention_size >= 1, "must be at least 1"),
            ("cove_hidden_size", self.cove_hidden_size >= 1, "must be at least 1"),
            ("cove_layers", self.cove_layers >= 1, "must be at least 1"),
            ("pos_dim", self.pos_dim >= 1, "must be at least 1"),
            ("ner_dim", self.ner_dim >= 1, "must be at least 1"),
        ]


KIND = ApproachKind(
    hparams=FusionNetHParams, approach="concur.approaches.reader.models.fusionnet:FusionNetApproach", preload=READER_PRELOAD
)

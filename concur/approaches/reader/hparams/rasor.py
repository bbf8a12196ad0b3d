"""RaSoR's architecture hyperparameters (Lee et al. 2016, "Learning Recurrent Span Representations")."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class RasorHParams(ReaderHParams):
    hidden_size: int  # per direction of every LSTM (the paper's best model: 50)
    lstm_layers: int  # stacked BiLSTM layers of the question and the passage (span) encoders (2)
    ffnn_size: int  # ReLU hidden layer of every feed-forward network (official code: 100)

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("lstm_layers", self.lstm_layers >= 1, "must be at least 1"),
            ("ffnn_size", self.ffnn_size >= 1, "must be at least 1"),
        ]


KIND = ApproachKind(hparams=RasorHParams, approach="concur.approaches.reader.models.rasor:RasorApproach", preload=READER_PRELOAD)

"""DrQA Document Reader's architecture hyperparameters (Chen et al. 2017, "Reading Wikipedia to Answer Open-Domain Questions")."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class DocReaderHParams(ReaderHParams):
    hidden_size: int  # per direction of every LSTM (h = 128)
    layers: int  # stacked BiLSTM layers of the paragraph and of the question encoder (3)

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("layers", self.layers >= 1, "must be at least 1"),
        ]


KIND = ApproachKind(
    hparams=DocReaderHParams, approach="concur.approaches.reader.models.docreader:DocReaderApproach", preload=READER_PRELOAD
)

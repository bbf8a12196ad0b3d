"""BiDAF's architecture hyperparameters (Seo et al. 2017)."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class BidafHParams(ReaderHParams):
    hidden_size: int  # per direction of every LSTM (the paper's d = 100)
    char_dim: int  # character embedding size (8)
    char_filters: int  # character CNN output channels (100)
    char_kernel: int  # character CNN width (5)
    highway_layers: int  # (2)
    modeling_layers: int  # BiLSTM layers of the modeling layer (2)

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("char_dim", self.char_dim >= 1, "must be at least 1"),
            ("char_filters", self.char_filters >= 1, "must be at least 1"),
            ("char_kernel", self.char_kernel >= 1, "must be at least 1"),
            ("highway_layers", self.highway_layers >= 0, "must not be negative"),
            ("modeling_layers", self.modeling_layers >= 1, "must be at least 1"),
        ]


KIND = ApproachKind(hparams=BidafHParams, approach="concur.approaches.reader.models.bidaf:BidafApproach", preload=READER_PRELOAD)

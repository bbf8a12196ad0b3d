"""BiDAF++'s architecture hyperparameters (Clark & Gardner 2018, the paragraph-level model)."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind


@dataclass(frozen=True)
class BidafPPHParams(ReaderHParams):
    hidden_size: int  # per direction of every bidirectional GRU (100)
    linear_size: int  # output size of the ReLU layers after the bi-attention and the self-attention (200)
    char_dim: int  # learned character embedding size (official code: 20)
    char_filters: int  # character CNN output channels (100)
    char_kernel: int  # character CNN width (5)

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("linear_size", self.linear_size >= 1, "must be at least 1"),
            ("char_dim", self.char_dim >= 1, "must be at least 1"),
            ("char_filters", self.char_filters >= 1, "must be at least 1"),
            ("char_kernel", self.char_kernel >= 1, "must be at least 1"),
        ]


KIND = ApproachKind(hparams=BidafPPHParams, approach="concur.approaches.reader.models.bidaf_pp:BidafPPApproach", preload=READER_PRELOAD)

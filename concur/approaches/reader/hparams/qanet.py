"""QANet's architecture hyperparameters (Yu et al. 2018)."""

from __future__ import annotations

from dataclasses import dataclass

from concur.approaches.reader.hparams.base import READER_PRELOAD, ReaderHParams, Rule
from concur.components import ApproachKind

ODD = "must be odd and positive (a same-length convolution)"


def _odd(kernel: int) -> bool:
    return kernel >= 1 and kernel % 2 == 1


@dataclass(frozen=True)
class QANetHParams(ReaderHParams):
    hidden_size: int  # d: width of every encoder block, also the number of convolution filters (128)
    char_dim: int  # trainable character embedding size (p2 = 200)
    char_filters: int  # character CNN output channels, the size of a word's character vector (200)
    char_kernel: int  # character CNN width
    highway_layers: int  # (2)
    embedding_encoder_blocks: int  # (1)
    embedding_encoder_convs: int  # convolutions per embedding encoder block (4)
    embedding_encoder_kernel: int  # (7)
    model_encoder_blocks: int  # blocks per model encoder pass (7)
    model_encoder_convs: int  # convolutions per model encoder block (2)
    model_encoder_kernel: int  # (5)
    attention_heads: int  # (8)
    word_dropout: float  # on the word vectors (0.1); `dropout` is the rate between layers
    char_dropout: float  # on the character vectors (0.05)
    layer_survival: float  # stochastic depth: survival probability of the last sub-layer of a stack (p_L = 0.9)

    def rules(self) -> list[Rule]:
        return super().rules() + [
            ("hidden_size", self.hidden_size >= 1, "must be at least 1"),
            ("char_dim", self.char_dim >= 1, "must be at least 1"),
            ("char_filters", self.char_filters >= 1, "must be at least 1"),
            ("char_kernel", self.char_kernel >= 1, "must be at least 1"),
            ("highway_layers", self.highway_layers >= 0, "must not be negative"),
            ("embedding_encoder_blocks", self.embedding_encoder_blocks >= 1, "must be at least 1"),
            ("embedding_encoder_convs", self.embedding_encoder_convs >= 0, "must not be negative"),
            ("embedding_encoder_kernel", _odd(self.embedding_encoder_kernel), ODD),
            ("model_encoder_blocks", self.model_encoder_blocks >= 1, "must be at least 1"),
            ("model_encoder_convs", self.model_encoder_convs >= 0, "must not be negative"),
            ("model_encoder_kernel", _odd(self.model_encoder_kernel), ODD),
            ("attention_heads", self.attention_heads >= 1, "must be at least 1"),
            ("attention_heads", self.hidden_size % max(1, self.attention_heads) == 0, "must divide hidden_size"),
            ("word_dropout", 0 <= self.word_dropout < 1, "must be in [0, 1)"),
            ("char_dropout", 0 <= self.char_dropout < 1, "must be in [0, 1)"),
            ("layer_survival", 0 < self.layer_survival <= 1, "must be in (0, 1] (1.0 turns stochastic depth off)"),
        ]


KIND = ApproachKind(hparams=QANetHParams, approach="concur.approaches.reader.models.qanet:QANetApproach", preload=READER_PRELOAD)

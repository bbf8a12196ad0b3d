"""Parts of the Trainer script's run (`trainer_script.py`) put into concur's hf-span run, in this process, to find
what separates the two systems' EM: each ablation of `speed_training.py` names the parts it takes
(`TRAINERS_PARTS`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from trainer_script import trainer_train_features

# transformers' LengthGroupedSampler: pools of at most 50 batches, fewer when that would leave under 4 pools.
TRAINER_POOL_BATCHES, TRAINER_MIN_POOLS = 50, 4


# The parts of the Trainer script's run each ablation puts into concur's (`take_trainers_parts`).
TRAINERS_PARTS: dict[str, tuple[str, ...]] = {
    "concur-stock-kernels": ("kernels",),
    "concur-trainer-decoding": ("decoding",),
    "concur-trainer-order": ("order",),
    "concur-trainer-data": ("order", "data"),
    "concur-padding-in-loss": ("order", "padding-in-loss"),
    "concur-as-trainer": ("order", "data", "padding-in-loss", "kernels"),
    "concur-trainer-replay": ("draws", "data", "padding-in-loss", "kernels", "trainer-predict"),
}


def take_trainers_parts(parts: tuple[str, ...], hparams: dict[str, Any], seed: int) -> None:
    """Patch concur's hf-span, in this process, to do what the Trainer script does in each of `parts`: "kernels"
    (transformers' SDPA attention, PyTorch's dropout), "order" (`trainer_order_batches`), "draws" (Trainer's own
    batches and random stream, `trainers_draws_batches`), "padding-in-loss" (`span_loss_over_padding`), "data"
    (`trainer_train_features`, built with `hparams`). ("decoding" and "trainer-predict" are `speed_training.run_concur`'s.)"""
    from concur.approaches import training
    from concur.approaches.hf_span import approach, loading, loss

    if "kernels" in parts:
        loading.register_attention = lambda: "sdpa"  # type: ignore[assignment]
        loading.use_fast_dropout = lambda model: 0  # type: ignore[assignment]
    if "draws" in parts:
        training.length_grouped_batches = trainers_draws_batches(seed)  # type: ignore[assignment]
    elif "order" in parts:
        training.length_grouped_batches = trainer_order_batches  # type: ignore[assignment]
    if "padding-in-loss" in parts:
        loss.span_loss = span_loss_over_padding  # type: ignore[assignment]
    if "data" in parts:
        approach.train_features = lambda split, tokenizer, hp, cache_dir: (trainer_train_features(split, tokenizer, hparams), False)  # type: ignore[assignment]


def span_loss_over_padding(start_logits: Any, end_logits: Any, attention_mask: Any, start_positions: Any, end_positions: Any) -> Any:
    """concur's span loss (`concur.approaches.hf_span.loss.span_loss`) with each softmax over every position of the
    padded batch, as `BertForQuestionAnswering` computes it: a window's padding takes a share of the probability."""
    import torch.nn.functional as F

    return (F.cross_entropy(start_logits.float(), start_positions) + F.cross_entropy(end_logits.float(), end_positions)) / 2


def trainer_order_batches(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
    """One epoch's batches in the order transformers' `LengthGroupedSampler` gives them (concur's
    `length_grouped_batches` contract): a random permutation cut into pools of up to 50 batches (fewer when
    that leaves under 4 pools), each pool sorted longest first, the longest window of all swapped to the
    front, then the pools one after another. concur cuts the same pools and shuffles the batches as well."""
    import numpy as np

    from concur.approaches.batches import length_sorted_pools

    pool = max(1, min(len(lengths) // (batch_size * TRAINER_MIN_POOLS), TRAINER_POOL_BATCHES)) * batch_size
    pools = length_sorted_pools(lengths, rng.permutation(len(lengths)), pool)
    longest = int(np.argmax([lengths[members[0]] for members in pools]))
    pools[0][0], pools[longest][0] = pools[longest][0], pools[0][0]
    return _cut(np.concatenate(pools), batch_size)


def trainers_draws_batches(seed: int) -> Callable[[Any, int, Any], list[Any]]:
    """concur's `length_grouped_batches` contract, drawing what the Trainer script draws. Called as the first batch
    is needed, it seeds torch's generator as `Trainer` does (`set_seed`), takes the one number a DataLoader draws
    as it starts an epoch (its workers' base seed), then orders the windows with transformers' own
    `get_length_grouped_indices` (a permutation from that generator): Trainer's batches, and the dropout masks that
    follow drawn from where Trainer's are. One epoch only: a second would reseed."""

    def batches(lengths: Any, batch_size: int, rng: Any) -> list[Any]:
        import numpy as np
        import torch
        from transformers.trainer_pt_utils import get_length_grouped_indices

        torch.manual_seed(seed)
        torch.empty((), dtype=torch.int64).random_()
        return _cut(np.asarray(get_length_grouped_indices([int(length) for length in lengths], batch_size)), batch_size)

    return batches


def _cut(order: Any, batch_size: int) -> list[Any]:
    """An epoch's window order cut into consecutive batches, as a DataLoader cuts its sampler's order."""
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]

"""AdamW with the fine-tuning conventions of BERT-style papers, its learning-rate schedule, and the plan
the shared training loop follows.

Weight decay is decoupled (AdamW) and never applied to biases or normalisation weights.
Layer-wise learning-rate decay follows ELECTRA's official fine-tuning code (`_get_layer_lrs`):
a parameter at depth d trains at `lr * decay**(L + 2 - d)`, where the embeddings (and their
projection) are at depth 0, encoder layer i (counted from 0) at depth i + 1, and the task
head at depth L + 2, so the head trains at the full rate and the top encoder layer at
`lr * decay**2`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from concur.approaches.hf_span.hparams import HFSpanHParams
from concur.approaches.training import Plan

_LAYER = re.compile(r"\.layers?\.(\d+)\.")


def layer_of(name: str, n_layers: int) -> int:
    """Depth of a parameter for layer-wise decay: 0 for embeddings, i + 1 for encoder layer i, L + 2 above."""
    if "embedding" in name:
        return 0
    match = _LAYER.search(name)
    return min(int(match.group(1)) + 1, n_layers) if match else n_layers + 2


def no_decay_names(model: Any) -> set[str]:
    """Parameters exempt from weight decay: biases and the weights of normalisation layers."""
    exempt = set()
    for module_name, module in model.named_modules():
        is_norm = "norm" in type(module).__name__.lower()
        for param_name, _ in module.named_parameters(recurse=False):
            if is_norm or param_name == "bias":
                exempt.add(f"{module_name}.{param_name}" if module_name else param_name)
    return exempt


def build_optimizer(model: Any, hparams: HFSpanHParams) -> Any:
    """AdamW over parameter groups that share a decay setting and a layer-wise rate, in PyTorch's fused kernel:
    one call updates every parameter (a few launches on CUDA; on the CPU it replaces the default Python loop
    over the parameters, a visible share of a bf16 MiniLM step)."""
    import torch

    n_layers = model.config.num_hidden_layers
    exempt = no_decay_names(model)
    groups: dict[tuple[int, bool], list[Any]] = {}
    for name, parameter in model.named_parameters():
        if not parameter.requires_grad:
            continue
        depth = layer_of(name, n_layers) if hparams.layerwise_lr_decay != 1.0 else n_layers + 2
        groups.setdefault((depth, name in exempt), []).append(parameter)
    param_groups = [
        {
            "params": params,
            "lr": hparams.learning_rate * hparams.layerwise_lr_decay ** (n_layers + 2 - depth),
            "weight_decay": 0.0 if exempt_group else hparams.weight_decay,
        }
        for (depth, exempt_group), params in sorted(groups.items())
    ]
    return torch.optim.AdamW(
        param_groups,
        lr=hparams.learning_rate,
        betas=(hparams.adam_beta1, hparams.adam_beta2),
        eps=hparams.adam_epsilon,
        fused=True,
    )


def warmup_steps(hparams: HFSpanHParams, total_steps: int) -> int:
    return math.ceil(hparams.warmup_ratio * total_steps)


def lr_factor(step: int, warmup: int, total_steps: int, schedule: str) -> float:
    """Multiplier of every group's rate at optimiser step `step` (from 0): linear warm-up from 0, then
    linear decay towards 0 or constant, as BERT's optimization.py and transformers' schedules."""
    if step < warmup:
        return step / warmup
    if schedule == "constant":
        return 1.0
    if schedule == "linear":
        return max(0.0, (total_steps - step) / max(1, total_steps - warmup))
    raise ValueError(f"unknown lr_schedule {schedule!r}; use 'linear' or 'constant'")


def build_scheduler(optimizer: Any, hparams: HFSpanHParams, total_steps: int) -> Any:
    """Per-step schedule: call `step()` after each optimiser step."""
    import torch

    warmup = warmup_steps(hparams, total_steps)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: lr_factor(step, warmup, total_steps, hparams.lr_schedule))


def training_plan(model: Any, hparams: HFSpanHParams, total_steps: int) -> Plan:
    """AdamW, its schedule and gradient clipping over `total_steps` steps; BERT-style fine-tuning keeps no weight average."""
    optimizer = build_optimizer(model, hparams)
    return Plan(
        batch_size=hparams.train_batch_size,
        steps=total_steps,
        optimizer=optimizer,
        scheduler=build_scheduler(optimizer, hparams, total_steps),
        max_grad_norm=hparams.max_grad_norm,
        ema_decay=0.0,
    )

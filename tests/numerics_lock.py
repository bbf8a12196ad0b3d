"""What each approach computes in fp32 on the CPU, recorded so that no change moves it silently.

A speed change may change numerics only on purpose: the speed issue asks that results never
change silently. Every approach that trains offline (hf-span's minilm-l6 and each reader that
needs no spaCy pipeline) trains on the same real SQuAD dev questions, seed 0, fp32 (concur's CPU
default, exactly reproducible), with its spec's other hyperparameters: `STEPS` optimiser steps
at `BATCH` examples (hf-span counts its budget in epochs over its windows, a few more than the
questions, so it takes a step more). The fingerprint is each step's training loss and its gradients'
global norm before clipping (a spec that does not clip gets a bound no norm reaches: the gradients
are multiplied by exactly 1). The losses of a model a few steps from its initialisation stay near
log(number of spans) whatever its weights; the gradient norms move with any change to the weights,
the dropout masks or the formulas.
`tests/test_numerics_lock.py` compares them with `numerics_lock.json` to `RELATIVE_TOLERANCE`:
far above what another thread count moves (nothing, on the machine that recorded them), far below
what a different dropout mask, initialisation or formula does. A change meant to move them
rewrites the file (`python -m tests.numerics_lock --write [--source-dir DATA]`) in the same
commit, with an EM parity run as its evidence.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
from pathlib import Path
from typing import Any

import torch

from concur.approaches.base import RunContext, build_approach
from concur.data.model import Split
from concur.data.mrqa import read_mrqa
from concur.data.transforms import downsample
from concur.registry.registry import default_registry
from concur.registry.specs import ApproachSpec
from tests.conftest import SHARED_DATA

LOCK_FILE = Path(__file__).parent / "data" / "numerics_lock.json"
SQUAD_DEV = "mrqa/dev/SQuAD.jsonl.gz"
QUESTIONS = 24  # training questions, sampled from SQuAD dev with seed 0
BATCH = 8  # examples (readers: questions; hf-span: windows) per optimiser step
STEPS = 3
RELATIVE_TOLERANCE = 1e-4
NO_CLIP = 1e30  # a clipping bound for specs without one: the norm is measured, the gradients are multiplied by 1


def locked_approaches() -> list[ApproachSpec]:
    """minilm-l6 and every non-pretrained reader that reads no linguistic features (those need spaCy)."""
    registry = default_registry()
    readers = [spec for spec in registry.approaches() if spec.family == "non-pretrained" and not spec.model.get("linguistic_features")]
    return [registry.approach("minilm-l6"), *readers]


def training_questions(data_dir: Path) -> Split:
    return downsample(read_mrqa(data_dir / SQUAD_DEV), questions=QUESTIONS, seed=0)


def fingerprint(spec: ApproachSpec, train: Split, cache_dir: Path) -> dict[str, list[float]]:
    """Each step's loss and gradient norm as `spec` trains on `train`: `STEPS` steps of `BATCH`, seed 0, fp32 on the CPU."""
    if "train_batch_size" in spec.hparams:  # hf-span: a budget in epochs over its windows (a few more than the questions)
        budget = {"train_batch_size": BATCH, "epochs": STEPS * BATCH / QUESTIONS, "max_grad_norm": spec.hparams["max_grad_norm"] or NO_CLIP}
    else:
        budget = {"batch_size": BATCH, "steps": STEPS, "grad_clip": spec.hparams["grad_clip"] or NO_CLIP}
    context = RunContext(device="cpu", seed=0, log=lambda line: None, cache_dir=cache_dir, precision="fp32")
    norms: list[float] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(*args: Any, **kwargs: Any) -> torch.Tensor:
        norm = clip(*args, **kwargs)
        norms.append(norm.item())
        return norm

    torch.nn.utils.clip_grad_norm_ = recording_clip  # the training loop looks it up at each step
    try:
        losses = build_approach(spec, {**spec.hparams, **budget}).train(train, context).losses
    finally:
        torch.nn.utils.clip_grad_norm_ = clip
    return {"losses": losses, "gradient_norms": norms}


def fingerprints(data_dir: Path) -> dict[str, dict[str, list[float]]]:
    train = training_questions(data_dir)
    with tempfile.TemporaryDirectory(prefix="numerics-lock-") as cache:
        return {spec.id: fingerprint(spec, train, Path(cache)) for spec in locked_approaches()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source-dir", type=Path, default=SHARED_DATA)
    parser.add_argument("--write", action="store_true", help=f"record the fingerprints in {LOCK_FILE}")
    args = parser.parse_args()
    if not (args.source_dir / SQUAD_DEV).is_file():
        raise SystemExit(f"{args.source_dir / SQUAD_DEV} not found; pass --source-dir")
    recorded = {
        "recorded_on": f"{platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads",
        "approaches": fingerprints(args.source_dir),
    }
    text = json.dumps(recorded, indent=2) + "\n"
    if args.write:
        LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
        LOCK_FILE.write_text(text)
        print(f"written: {LOCK_FILE}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()

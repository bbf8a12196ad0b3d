"""`concur score GOLD PRED`: the official SQuAD v1.1 / MRQA evaluation as a drop-in."""

from __future__ import annotations

from pathlib import Path

import typer

from concur.cli.common import err, print_json
from concur.data.readers import read_any
from concur.errors import DataFormatError
from concur.metrics import evaluate
from concur.userfiles import load_json

SHOWN_QIDS = 5


def score(
    gold: Path = typer.Argument(..., exists=True, dir_okay=False, help="SQuAD v1.1 JSON or MRQA JSON lines (.gz or plain)."),
    predictions: Path = typer.Argument(..., exists=True, dir_okay=False, help='Predictions JSON {"qid": "answer", ...}.'),
) -> None:
    """Print {"exact_match": .., "f1": ..} (percent) as the official scripts do.

    Questions without a prediction count as wrong; predictions for questions that are not
    in GOLD are ignored. Both are reported on stderr.
    """
    answers = read_any(gold).gold_answers()
    predicted = load_predictions(predictions)
    scores = evaluate(answers, predicted)
    if scores.missing:
        shown = ", ".join(scores.missing[:SHOWN_QIDS]) + (", ..." if len(scores.missing) > SHOWN_QIDS else "")
        err.print(f"{len(scores.missing)} of {scores.n_gold} questions have no prediction and count as wrong ({shown})")
    if scores.extra:
        shown = ", ".join(scores.extra[:SHOWN_QIDS]) + (", ..." if len(scores.extra) > SHOWN_QIDS else "")
        err.print(f"{len(scores.extra)} predictions are for questions not in {gold.name} and were ignored ({shown})")
    print_json(scores.official())


def load_predictions(path: Path) -> dict[str, str]:
    """A `{qid: answer}` JSON object; anything else is an error naming the file."""
    payload = load_json(path)
    if not isinstance(payload, dict):
        raise DataFormatError(path, 'predictions must be a JSON object {"qid": "answer text", ...}')
    for qid, answer in payload.items():
        if not isinstance(answer, str):
            raise DataFormatError(path, f"the prediction for {qid!r} must be a string, got {type(answer).__name__}")
    return payload

"""EM parity over seeds: each system's EM by seed, and each difference paired seed by seed with a 95% interval.

Run: `python -m bench.seed_parity RUNS.json [MORE.json ...] [--against trainer-fast] [--out parity.json]`.

Seed-to-seed spread on the 2-core machine (sd 0.2-1.0 EM over 8,414 training questions) is as large
as the 1.0 EM the speed issue allows, so parity is judged on differences paired by seed (same head
initialisation, dropout stream and question order where both systems draw them alike) and reported
with a t interval over the seeds, not as one seed's gap. `python -m bench.speed_training --new-seed-each-round`
prints these lines for one run; this script pools the JSON of several runs (seeds run on different
days), refusing runs of different settings, which must not be pooled.
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from bench.outputs import write_json
from concur.errors import closest

# What must agree between two runs whose seeds are pooled (config fields of `bench.speed_training`'s JSON).
SAME_SETTING = ("benchmark", "train_questions", "test_questions", "hparams", "precision", "device")
# A field that older results lack, and the value every one of them had: before --benchmark, all ran on squad-dev-carved.
FIELD_BEFORE_IT_WAS_RECORDED = {"benchmark": "squad-dev-carved"}
CONFIDENCE = 0.95
# What `bench.seed_parity` reads of each run, and the types it must have.
RUN_FIELDS: dict[str, type | tuple[type, ...]] = {"system": str, "seed": int, "em": (int, float), "f1": (int, float)}


def by_seed(runs: Iterable[Mapping[str, Any]], system: str, measure: str = "em") -> dict[int, float]:
    """One system's `measure` per seed, the median where a seed ran several times."""
    values: dict[int, list[float]] = {}
    for run in runs:
        if run["system"] == system:
            values.setdefault(int(run["seed"]), []).append(float(run[measure]))
    return {seed: statistics.median(values[seed]) for seed in sorted(values)}


def paired(mine: Mapping[int, float], theirs: Mapping[int, float]) -> dict[str, Any]:
    """mine[s] - theirs[s] over the seeds both ran: each difference, their mean, standard deviation and a 95% t
    interval for the mean difference (sd and interval None with fewer than two seeds)."""
    differences = {seed: mine[seed] - theirs[seed] for seed in sorted(mine.keys() & theirs.keys())}
    values = list(differences.values())
    result: dict[str, Any] = {"by_seed": differences, "mean": statistics.mean(values) if values else None, "sd": None, "interval": None}
    if len(values) >= 2:
        from scipy.stats import t

        sd = statistics.stdev(values)
        half = t.ppf((1 + CONFIDENCE) / 2, len(values) - 1) * sd / len(values) ** 0.5
        result.update(sd=sd, interval=[result["mean"] - half, result["mean"] + half])
    return result


def system_line(system: str, values: Mapping[int, float], measure: str = "EM") -> str:
    """`concur EM by seed: seed 0 50.0, seed 1 54.0; mean 52.00, sd 2.83`."""
    listed = ", ".join(f"seed {seed} {value:.1f}" for seed, value in values.items())
    spread = f", sd {statistics.stdev(values.values()):.2f}" if len(values) >= 2 else ""
    return f"{system} {measure} by seed: {listed}; mean {statistics.mean(values.values()):.2f}{spread}"


def difference_line(name: str, difference: Mapping[str, Any], measure: str = "EM") -> str:
    """`concur/trainer-fast EM difference by seed: seed 0 -1.0, seed 1 +2.0; mean +0.50, 95% interval -18.56 to +19.56`."""
    if difference["mean"] is None:
        return f"{name} {measure} difference by seed: no seed in common"
    listed = ", ".join(f"seed {seed} {value:+.1f}" for seed, value in difference["by_seed"].items())
    interval = difference["interval"]
    within = f", {CONFIDENCE:.0%} interval {interval[0]:+.2f} to {interval[1]:+.2f}" if interval else ""
    return f"{name} {measure} difference by seed: {listed}; mean {difference['mean']:+.2f}{within}"


def pooled_runs(paths: list[Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every run of every file, and each file's machine; one line naming the file and field where they cannot be pooled."""
    runs: list[dict[str, Any]] = []
    machines: list[dict[str, Any]] = []
    first: tuple[Path, dict[str, Any]] | None = None
    for path in paths:
        try:
            report = json.loads(path.read_text())
            config, file_runs = report["config"], report["runs"]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SystemExit(f"{path}: not a bench.speed_training result ({type(error).__name__}: {error})") from None
        if first is None:
            first = (path, config)
        for field in SAME_SETTING:
            mine, theirs = _setting(config, field), _setting(first[1], field)
            if mine != theirs:
                raise SystemExit(
                    f"{path}: its runs differ from {first[0]}'s in {field} ({mine!r} against {theirs!r}); pool only runs of one setting"
                )
        for index, run in enumerate(file_runs):
            if (problem := _run_problem(run)) is not None:
                raise SystemExit(f"{path}: run {index}: {problem}")
        runs.extend(file_runs)
        machines.append({"file": str(path), **report.get("machine", {})})
    return runs, machines


def _setting(config: Mapping[str, Any], field: str) -> Any:
    return config.get(field, FIELD_BEFORE_IT_WAS_RECORDED.get(field))


def _run_problem(run: Any) -> str | None:
    """Why one run of a results file cannot be read (a field missing or of the wrong type), or None."""
    if not isinstance(run, dict):
        return f"expected an object, got {run!r}"
    for field, kind in RUN_FIELDS.items():
        if not isinstance(run.get(field), kind):
            return f"field {field!r} is {run.get(field)!r}"
    return None


def summary(runs: list[dict[str, Any]], against: str) -> dict[str, Any]:
    """Each system's EM and F1 by seed, and every other system's differences from `against`."""
    systems = list(dict.fromkeys(run["system"] for run in runs))
    if against not in systems:
        hint = closest(against, systems)
        raise SystemExit(f"no runs of {against!r}{f' (did you mean {hint!r}?)' if hint else ''}; the runs hold {', '.join(systems)}")
    measures = {system: {measure: by_seed(runs, system, measure) for measure in ("em", "f1")} for system in systems}
    differences = {
        f"{system}/{against}": {measure: paired(measures[system][measure], measures[against][measure]) for measure in ("em", "f1")}
        for system in systems
        if system != against
    }
    return {"against": against, "by_system": measures, "differences": differences}


def lines(result: Mapping[str, Any]) -> list[str]:
    """The summary as text: EM by seed per system, then each EM and F1 difference."""
    text = [system_line(system, values["em"]) for system, values in result["by_system"].items()]
    for name, difference in result["differences"].items():
        text += [difference_line(name, difference["em"]), difference_line(name, difference["f1"], "F1")]
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="bench.speed_training JSON files (--out)")
    parser.add_argument("--against", default="trainer-fast", help="the system every other one is compared with")
    parser.add_argument("--out", type=Path, default=None, help="also write the summary as JSON here")
    args = parser.parse_args()
    runs, machines = pooled_runs(args.results)
    result = {**summary(runs, args.against), "machines": machines}
    print("\n".join(lines(result)))
    if args.out is not None:
        write_json(args.out, result)


if __name__ == "__main__":
    main()

"""docs/running.md's block on the longer CPU study: its EM table and Kendall matrix beside the paper's, pair by pair.

Run: `python -m bench.cpu_full_docs --source-dir DATA --runs-dir NEW_DIR [--study analysis/studies/cpu-full.toml]`.

1. Runs the study once, timed, where none of its jobs has a result in the runs dir (`bench.study_blocks`).
2. Computes its Kendall matrix with two-level bootstrap intervals, reliabilities and ceilings, and the paper's
   (Liu et al., `liu2023`) twice: over the paper's 20 approaches, and over the approaches both ran. Our benchmarks
   meet the paper's under the paper's ids; two stand in for one of the paper's (`PAPER_IDS`), the rest share ids.
3. Writes OUT_DIR/em.csv (EM per benchmark and approach, and each benchmark's reliability), OUT_DIR/pairs.csv
   (every pair: our τ, interval, ceiling and verdict, and the paper's two τ where it has the pair) and
   OUT_DIR/matrix.png (ours below the diagonal, the paper's above, over the benchmarks both have), then replaces
   the page's block between its markers, stamped with the study file's SHA-256 (checked by tests/test_quickstart.py).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.study_blocks import (
    Markers,
    StudyRun,
    WallRecord,
    add_run_options,
    block_span,
    kendall_matrix,
    number,
    replace_block,
    run_study,
    with_interval,
)
from concur.analysis.bootstrap import MatrixWithCI
from concur.analysis.concurrence import number_at
from concur.analysis.group_means import group_contrast, group_mean, group_pairs
from concur.analysis.matrix import BenchmarkMatrix
from concur.plots.heatmap import concurrence_heatmap
from concur.plots.style import save_figure
from concur.registry import Registry

MARKERS = Markers("cpu-full-results")
PAPER_RESULTS = "liu2023"
PAPER_APPROACHES = 20
# Our offline benchmarks that stand in for one of the paper's: the carved SQuAD dev set for SQuAD, QAMR's dev and test
# sets for QAMR. SQuADShifts has no counterpart in the paper.
PAPER_IDS = {"squad-dev-carved": "squad", "qamr-devtest": "qamr"}
KINDS = ("human", "bAbI 1k", "bAbI 10k", "FuzzySyntheticQA", "WikidataSyntheticQA")


@dataclass(frozen=True)
class Matrices:
    """Our matrix and the paper's, over all its approaches and over the approaches both ran (None under two)."""

    ours: BenchmarkMatrix
    paper: BenchmarkMatrix
    paper_shared: BenchmarkMatrix | None
    shared_approaches: list[str]

    def paper_id(self, bench: str) -> str | None:
        """The paper's id for one of our benchmarks, where the paper has it."""
        paper_id = PAPER_IDS.get(bench, bench)
        return paper_id if paper_id in self.paper.wide.columns else None


def kind_of(bench: str, registry: Registry) -> str | None:
    """The group a benchmark's pairs are averaged in: human-constructed, bAbI by training size, each generator family."""
    if bench.startswith("babi-"):
        return "bAbI 10k" if bench.endswith("-10k") else "bAbI 1k"
    if bench.startswith("fuzzy-"):
        return "FuzzySyntheticQA"
    if bench.startswith("wikidata-"):
        return "WikidataSyntheticQA"
    return "human" if registry.benchmark(bench).family == "human" else None


def compute(run: StudyRun, registry: Registry) -> Matrices:
    ours = kendall_matrix(run, registry, f"study:{run.study}")
    paper = kendall_matrix(run, registry, PAPER_RESULTS)
    shared = [approach for approach in ours.wide.index if approach in paper.wide.index]
    paper_shared = kendall_matrix(run, registry, PAPER_RESULTS, approaches=",".join(shared)) if len(shared) >= 2 else None
    return Matrices(ours, paper, paper_shared, shared)


def estimate_at(matrix: BenchmarkMatrix | None, first: str | None, second: str | None) -> float:
    if matrix is None or first is None or second is None:
        return float("nan")
    return number_at(matrix.estimate.values, first, second)


def pairs_frame(matrices: Matrices) -> pd.DataFrame:
    """Every pair of our benchmarks: our τ with its interval, ceiling and verdict, and the paper's τ where it has the pair."""
    ours = matrices.ours
    assert ours.with_ci is not None
    noise = ours.noise
    benches = [str(bench) for bench in ours.wide.columns]
    rows = []
    for first, second in group_pairs(benches, benches):
        paper_first, paper_second = matrices.paper_id(first), matrices.paper_id(second)
        inconclusive = noise.inconclusive.at[first, second] if noise is not None else None
        ceiling = number_at(noise.ceilings.ceiling, first, second) if noise is not None and noise.ceilings is not None else np.nan
        rows.append(
            {
                "first": first,
                "second": second,
                "tau": number_at(ours.estimate.values, first, second),
                "lower": number_at(ours.with_ci.lower, first, second),
                "upper": number_at(ours.with_ci.upper, first, second),
                "ceiling": ceiling,
                "inconclusive": inconclusive,
                "paper_first": paper_first,
                "paper_second": paper_second,
                "paper_tau": estimate_at(matrices.paper, paper_first, paper_second),
                "paper_tau_shared": estimate_at(matrices.paper_shared, paper_first, paper_second),
            }
        )
    return pd.DataFrame(rows)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(key): value for key, value in row.items()} for row in frame.to_dict("records")]


def em_frame(matrix: BenchmarkMatrix) -> pd.DataFrame:
    """EM with a row per benchmark and a column per approach, and each benchmark's reliability."""
    frame = matrix.wide.T.copy()
    frame.index.name = "benchmark"
    ceilings = matrix.noise.ceilings if matrix.noise is not None else None
    frame["reliability"] = [ceilings.reliability[str(bench)] if ceilings is not None else np.nan for bench in frame.index]
    return frame


def side_by_side(matrices: Matrices, pairs: pd.DataFrame) -> pd.DataFrame:
    """Over the benchmarks both have (under our ids): our τ below the diagonal, the paper's above."""
    benches = [str(bench) for bench in matrices.ours.wide.columns if matrices.paper_id(str(bench))]
    combined = pd.DataFrame(np.eye(len(benches)), index=benches, columns=benches)
    for row in records(pairs):
        if row["first"] in benches and row["second"] in benches:
            i, j = sorted((benches.index(row["first"]), benches.index(row["second"])))
            combined.iat[j, i], combined.iat[i, j] = row["tau"], row["paper_tau"]
    return combined


def members(benches: Sequence[str], registry: Registry) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for bench in benches:
        kind = kind_of(bench, registry)
        if kind is not None:
            grouped[kind].append(bench)
    return grouped


def group_rows(matrices: Matrices, registry: Registry) -> list[str]:
    """The group table: our mean τ per pair of kinds, beside the paper's on the same pairs and on all its own pairs."""
    ours_ci, paper_ci = matrices.ours.with_ci, matrices.paper.with_ci
    assert ours_ci is not None and paper_ci is not None
    ours = members([str(bench) for bench in matrices.ours.wide.columns], registry)
    paper_all = members([str(bench) for bench in matrices.paper.wide.columns], registry)
    shared = len(matrices.shared_approaches)
    lines = [
        f"| pairs of | ours: pairs with a τ | ours: mean τ [95%] | paper, same pairs: pairs | its {PAPER_APPROACHES} approaches "
        f"| the {shared} approaches both ran | paper, all its pairs of these kinds: pairs | mean τ |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, first in enumerate(KINDS):
        for second in KINDS[i:]:
            pairs = group_pairs(ours[first], ours[second])
            if not pairs:
                continue
            mean = group_mean(ours_ci, ours[first], ours[second])
            mapped = [[matrices.paper_id(bench) for bench in ours[kind]] for kind in (first, second)]
            in_paper = [[bench for bench in group if bench] for group in mapped]
            same = group_pairs(*in_paper)
            paper_same = _mean_or_dash(paper_ci, in_paper, same)
            shared_same = _mean_or_dash(matrices.paper_shared.with_ci if matrices.paper_shared else None, in_paper, same)
            own = group_pairs(paper_all[first], paper_all[second])
            paper_own = _mean_or_dash(paper_ci, [paper_all[first], paper_all[second]], own)
            label = first if first == second else f"{first} – {second}"
            lines.append(
                f"| {label} | {len(mean.pairs)} | {with_interval(mean.mean, mean.lower, mean.upper)} | {len(same)} | {paper_same} "
                f"| {shared_same} | {len(own)} | {paper_own} |"
            )
    return lines


def _mean_or_dash(ci: MatrixWithCI | None, groups: list[list[str]], pairs: tuple[tuple[str, str], ...]) -> str:
    return number(group_mean(ci, groups[0], groups[1]).mean) if ci is not None and pairs else "-"


def central_pattern(matrices: Matrices, registry: Registry) -> str:
    """The paper's central pattern in our runs: human-human pairs against human-bAbI pairs (1k and 10k), with the
    difference's interval from the same resamples, beside the paper's two means over all its pairs of those kinds."""
    ours_ci, paper_ci = matrices.ours.with_ci, matrices.paper.with_ci
    assert ours_ci is not None and paper_ci is not None
    ours = members([str(bench) for bench in matrices.ours.wide.columns], registry)
    paper = members([str(bench) for bench in matrices.paper.wide.columns], registry)
    babi, paper_babi = ours["bAbI 1k"] + ours["bAbI 10k"], paper["bAbI 1k"] + paper["bAbI 10k"]
    if not group_pairs(ours["human"], ours["human"]) or not babi:
        return "The study has no two human-constructed sets and a bAbI task: no central pattern to measure."
    contrast = group_contrast(ours_ci, (ours["human"], ours["human"]), (ours["human"], babi))
    paper_contrast = group_contrast(paper_ci, (paper["human"], paper["human"]), (paper["human"], paper_babi))
    verdict = "stands above the noise" if contrast.lower > 0 else "does not stand above the noise"
    within, between = contrast.higher, contrast.lower_group
    return (
        f"The paper's central pattern in these runs: mean τ {with_interval(within.mean, within.lower, within.upper)} over "
        f"the {len(within.pairs)} pairs of human-constructed sets against "
        f"{with_interval(between.mean, between.lower, between.upper)} over the {len(between.pairs)} human-bAbI pairs, "
        f"a difference of {with_interval(contrast.difference, contrast.lower, contrast.upper)}: it {verdict}. "
        f"In the paper, over all its pairs of those kinds: {paper_contrast.higher.mean:.2f} against "
        f"{paper_contrast.lower_group.mean:.2f}."
    )


def agreement(pairs: pd.DataFrame) -> str:
    """How far our cells agree with the paper's on the pairs both have."""
    both = pairs.dropna(subset=["tau", "paper_tau"])
    if len(both) < 3:
        return f"{len(both)} pairs have a τ in both matrices: too few to compare cell by cell."
    r = float(np.corrcoef(both["tau"], both["paper_tau"])[0, 1])
    covered = int(((both["lower"] <= both["paper_tau"]) & (both["paper_tau"] <= both["upper"])).sum())
    findings = both[both["inconclusive"] == False]  # noqa: E712 (None: not assessed)
    same_sign = int((np.sign(findings["tau"]) == np.sign(findings["paper_tau"])).sum())
    shared = both.dropna(subset=["paper_tau_shared"])  # over the approaches both ran
    shared_r = float(np.corrcoef(shared["tau"], shared["paper_tau_shared"])[0, 1]) if len(shared) >= 3 else float("nan")
    return (
        f"Cell by cell, over the {len(both)} pairs both matrices have: Pearson r between our τ and the paper's "
        f"{r:.2f} ({shared_r:.2f} against the paper's τ over the approaches both ran); the paper's τ lies inside our "
        f"95% interval in {covered} of {len(both)} pairs; {len(findings)} of our cells stand above the noise, and "
        f"{same_sign} of those have the paper's sign."
    )


def reference_rows(pairs: pd.DataFrame, reference: str) -> list[str]:
    """Our reference benchmark against every other: our τ, interval, ceiling and verdict, and the paper's τ."""
    lines = [
        f"| {reference} against | τ [95%] | ceiling | paper τ, {PAPER_APPROACHES} approaches | paper τ, approaches both ran |",
        "|---|---|---|---|---|",
    ]
    for row in records(pairs):
        if reference not in (row["first"], row["second"]):
            continue
        other = row["second"] if row["first"] == reference else row["first"]
        mark = " ‡" if row["inconclusive"] is True else ""
        lines.append(
            f"| {other} | {with_interval(row['tau'], row['lower'], row['upper'])}{mark} | {number(row['ceiling'])} "
            f"| {number(row['paper_tau'])} | {number(row['paper_tau_shared'])} |"
        )
    return lines


def em_rows(em: pd.DataFrame) -> list[str]:
    approaches = [column for column in em.columns if column != "reliability"]
    lines = ["| benchmark | " + " | ".join(approaches) + " | reliability |", "|---" * (len(approaches) + 2) + "|"]
    for bench, row in em.iterrows():
        lines.append(f"| {bench} | " + " | ".join(number(row[a], 1) for a in approaches) + f" | {number(row['reliability'])} |")
    return lines


def block(run: StudyRun, registry: Registry, wall: WallRecord, out_dir: Path, reference: str) -> str:
    """The page's block: the stamp, the run, the group table, the cell-level agreement, the reference row, the EM table."""
    matrices = compute(run, registry)
    pairs = pairs_frame(matrices)
    em = em_frame(matrices.ours)
    write_files(out_dir, pairs, em, side_by_side(matrices, pairs), matrices)
    findings = int((pairs["inconclusive"] == False).sum())  # noqa: E712 (None: not assessed)
    approaches = matrices.ours.wide.shape[0]
    files = ", ".join(f"`{(out_dir / name).as_posix()}`" for name in ("em.csv", "pairs.csv", "matrix.png"))
    lines = [
        MARKERS.first_line(run.study),
        f"Measured at commit {wall.commit or 'unknown'} on a {wall.machine}, CPU only: {wall.duration()} for data "
        f"preparation, {wall.jobs} jobs and the report (regenerate with `python -m bench.cpu_full_docs --source-dir DATA "
        f"--runs-dir NEW_DIR`; files: {files}). {findings} of its {len(pairs)} cells stand above the noise.",
        "",
        f"Mean Kendall τ over the pairs of each two kinds of benchmark: ours over our {approaches} approaches with 95% "
        "intervals over test questions and approaches, the paper's (Liu et al., `liu2023`) on the same pairs (the carved "
        "SQuAD as SQuAD, QAMR dev/test as QAMR) and on all its pairs of those kinds:",
        "",
        *group_rows(matrices, registry),
        "",
        central_pattern(matrices, registry),
        "",
        agreement(pairs),
        "",
        "The reference row (‡: inconclusive; ceiling: the τ the two test sets allow; `-`: not in the paper):",
        "",
        *reference_rows(pairs, reference),
        "",
        "EM of each approach on each benchmark's test subset, and the benchmark's reliability:",
        "",
        *em_rows(em),
        MARKERS.end,
    ]
    return "\n".join(lines)


def write_files(out_dir: Path, pairs: pd.DataFrame, em: pd.DataFrame, combined: pd.DataFrame, matrices: Matrices) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    em.round(4).to_csv(out_dir / "em.csv")
    pairs.round(4).to_csv(out_dir / "pairs.csv", index=False)
    title = f"Kendall τ: ours ({matrices.ours.wide.shape[0]} approaches) below the diagonal, the paper's ({PAPER_APPROACHES}) above"
    save_figure(concurrence_heatmap(combined, title=title), out_dir / "matrix", formats=("png",))
    for name in ("em.csv", "pairs.csv", "matrix.png"):
        print(f"written: {out_dir / name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(parser, "analysis/studies/cpu-full.toml")
    parser.add_argument("--page", type=Path, default=Path("docs/running.md"))
    parser.add_argument("--out-dir", type=Path, default=Path("bench/results/cpu-full"))
    args = parser.parse_args()
    block_span(args.page, MARKERS)  # before hours of jobs
    run, registry, study, wall = run_study(args)
    replace_block(args.page, MARKERS, block(run, registry, wall, args.out_dir, study.reference or ""))


if __name__ == "__main__":
    main()

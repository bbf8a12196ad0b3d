"""Render a report to one self-contained HTML page and write it atomically.

The page carries its images as data URIs and its style inline, so `index.html` alone opens
from a file:// URL, offline, and can be mailed or archived as one file; the figures' PDFs
and tables go beside it in `files/` for reuse. Every string from the user or the results
(ids, names, notes, errors) is escaped by the template engine (autoescape). The files are
staged first and `index.html` is replaced last in one rename, so a page that exists is a
finished one.
"""

from __future__ import annotations

import base64
import contextlib
import math
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

import jinja2
from matplotlib import colormaps
from matplotlib.colors import Normalize, to_hex

from concur.analysis.concurrence import METHOD_LABELS, MIN_APPROACHES, is_small_n, number_at
from concur.analysis.reliability import ALPHA_EQUAL, CONCLUSIVE_CEILING, TARGET_CEILING, verdict_at
from concur.analysis.render import INCONCLUSIVE_MARK, SMALL_N_MARK, ceiling_text, estimate_text, interval_text
from concur.analysis.results import Results
from concur.errors import ConcurError
from concur.fsutil import DIRECTORY_MODE, atomic_open, default_permissions, publish_directory
from concur.plots.heatmap import CONCURRENCE_LIMITS, text_color_on
from concur.plots.style import HEATMAP_CMAP
from concur.recipes.spec import load_recipe, recipe_paths
from concur.registry import Registry
from concur.report.content import Loader, MatrixSection, Report, ReportOptions, build_report, remedy_text
from concur.runner.planning.study import load_study
from concur.workspace import Workspace

INDEX = "index.html"
FILES_DIR = "files"
TEMPLATE = "report.html.j2"
EM_DECIMALS = 2  # as the published table gives EM
MISSING = "—"
IMAGE_MIME = "image/png"

_ENVIRONMENT = jinja2.Environment(
    loader=jinja2.PackageLoader("concur.report", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_COLORMAP = colormaps[HEATMAP_CMAP]
_NORMALIZE = Normalize(*CONCURRENCE_LIMITS)


@dataclass(frozen=True)
class MatrixCell:
    """One correlation as the page shows it, with what the tooltip and the tests read."""

    column: str
    value: float
    text: str
    interval: str
    n: int
    few: bool
    style: str
    title: str
    ceiling: str  # `≤0.85`, or empty where unknown
    ceiling_value: float  # NaN where unknown
    inconclusive: bool


def write_report(out_dir: Path, build: Callable[[Path], Report]) -> tuple[Path, Report]:
    """Run `build` (given the directory for its files), render, and publish into `out_dir`.

    Nothing in `out_dir` changes unless the whole report was built and rendered: the files
    directory is replaced in one rename, then `index.html` in another.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise ConcurError(f"--out {out_dir} is a file; the report needs a directory (it writes {INDEX} and {FILES_DIR}/ into it)")
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{FILES_DIR}-", dir=out_dir))
    try:
        staging.chmod(default_permissions(DIRECTORY_MODE))  # a report is for others to read, unlike mkdtemp's 0700
        report = build(staging)
        html = render_html(report, staging)
        publish_directory(staging, out_dir / FILES_DIR)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                out_dir.rmdir()  # a failed first report leaves no empty directory behind
        raise
    index = out_dir / INDEX
    with atomic_open(index, "wt") as handle:
        handle.write(html)
    return index, report


def publish_report(
    results: Results,
    options: ReportOptions,
    out_dir: Path,
    *,
    load: Loader,
    registry: Registry,
    workspace: Workspace,
    recipes: list[Path],
    study: Path | None,
) -> tuple[Path, Report]:
    """The report on `results`, built and written into `out_dir` (`write_report`): what `concur report` and
    `concur study run --report` do below the command line.

    The recipes (files or directories of them) and the study file are all parsed before any
    work, so a mistake in one stops the report before its bootstrap starts. The options'
    `results` become the sources `results` came from.
    """
    parsed = [load_recipe(path) for target in recipes for path in recipe_paths(target)]
    study_spec = load_study(study) if study is not None else None
    options = replace(options, results=results.sources)
    return write_report(
        out_dir,
        lambda files_dir: build_report(
            results, options, load=load, registry=registry, workspace=workspace, recipes=parsed, study=study_spec, files_dir=files_dir
        ),
    )


def render_html(report: Report, files_dir: Path) -> str:
    """The page; `files_dir` is where the report's files are now, linked as `files/...`."""
    template = _ENVIRONMENT.get_template(TEMPLATE)
    return template.render(
        report=report,
        provenance=report.provenance,
        table=report.table,
        min_approaches=MIN_APPROACHES,
        few_mark=SMALL_N_MARK,
        inconclusive_mark=INCONCLUSIVE_MARK,
        conclusive_ceiling=CONCLUSIVE_CEILING,
        alpha_equal=ALPHA_EQUAL,
        target_ceiling=TARGET_CEILING,
        remedy_text=remedy_text,
        em_interval=_em_interval,
        missing=MISSING,
        em=_em,
        difference=_difference,
        number=estimate_text,
        method_label=lambda method: METHOD_LABELS[method],
        matrix_rows=matrix_rows,
        image=_data_uri,
        link=lambda path: f"{FILES_DIR}/{quote(path.relative_to(files_dir).as_posix())}",
        is_few=lambda n: is_small_n(int(n)),
    )


def matrix_rows(section: MatrixSection) -> list[tuple[str, list[MatrixCell]]]:
    """Rows of a matrix as the page shows it: value (marked when n is small or noise could explain it), interval,
    ceiling, n where it varies, colour."""
    ci, noise = section.ci, section.noise
    counts = ci.estimate.counts
    small = ci.estimate.small_n()
    varies = counts.to_numpy().min() != counts.to_numpy().max()
    interval_name = f"{int(round(ci.settings.confidence * 100))}% {ci.settings.interval}"
    rows = []
    for row in ci.estimate.values.index:
        cells = []
        for column in ci.estimate.values.columns:
            value = number_at(ci.estimate.values, row, column)
            n = int(counts.loc[row, column])
            few = row != column and bool(small.loc[row, column])
            flagged = noise is not None and verdict_at(noise.inconclusive, row, column) is True
            ceiling_value = math.nan
            if noise is not None and noise.ceilings is not None and row != column:
                ceiling_value = number_at(noise.ceilings.ceiling, row, column)
            ceiling = ceiling_text(ceiling_value).strip()
            interval = interval_text(number_at(ci.lower, row, column), number_at(ci.upper, row, column)).strip()
            title = f"{section.label} between {row} and {column} over {n} approaches"
            title += f", {interval_name} interval {interval} over {ci.kind(row, column)}" if interval else ""
            title += f"; ceiling {ceiling.lstrip('≤')}" if ceiling else ""
            title += "; inconclusive: noise alone could explain it" if flagged else ""
            title += f"; fewer than {MIN_APPROACHES} approaches" if few else ""
            text = estimate_text(value, small_n=few, inconclusive=flagged) + (f" (n={n})" if varies else "")
            cells.append(MatrixCell(column, value, text, interval, n, few, _cell_style(value), title, ceiling, ceiling_value, flagged))
        rows.append((row, cells))
    return rows


def _em_interval(lower: float, upper: float) -> str:
    """An EM's interval as the EM table shows it under the value, or nothing."""
    return "" if lower is None or math.isnan(lower) else f"[{lower:.1f}, {upper:.1f}]"


def _cell_style(value: float) -> str:
    """The heatmap's colour for a correlation, with legible text on it."""
    if math.isnan(value):
        return ""
    background = _COLORMAP(_NORMALIZE(value))
    return f"background-color: {to_hex(background)}; color: {to_hex(text_color_on(background))}"


def _em(value: float) -> str:
    return MISSING if value is None or math.isnan(value) else f"{value:.{EM_DECIMALS}f}"


def _difference(value: float) -> str:
    return MISSING if value is None or math.isnan(value) else f"{value:+.{EM_DECIMALS}f}"


def _data_uri(path: Path) -> str:
    return f"data:{IMAGE_MIME};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"

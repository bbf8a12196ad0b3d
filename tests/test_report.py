"""`concur report`: the HTML page read in a real (headless) browser, and its content without one.

The toy store holds hand-chosen EMs for five approaches of the reference study, so every
number the page shows can be checked by hand: on squad and qamr the five approaches rank
alike but for one swapped pair (Kendall tau = (9 - 1) / 10 = 0.8; Pearson r = 900 / 1000 =
0.9), and only three approaches have babi-1 (one failed, one never ran), a pair too small
to read without the warning.
"""

from __future__ import annotations

import os
import shutil
import stat
from html.parser import HTMLParser
from pathlib import Path

import pytest
from scipy import stats

from concur.analysis.bootstrap import BootstrapSettings
from concur.analysis.reference import liu2023
from concur.analysis.results import load_results
from concur.data.prepare import prepare
from concur.data.sources import SourceLocator
from concur.fsutil import atomic_write_json
from concur.registry import default_registry
from concur.report.content import ReportOptions, build_report
from concur.report.page import FILES_DIR, INDEX, write_report
from concur.runner.planning.study import load_study, plan_study
from concur.runner.records.jobdir import JobDir
from concur.runner.records.result import JobResult
from concur.runner.records.store import Store
from concur.workspace import Workspace
from tests.conftest import REPO

APPROACHES = ["rasor", "bidaf", "docreader", "bert-base", "roberta-base"]
BENCHES = ["squad", "qamr", "babi-1"]
SHOWN_BENCHES = ["qamr", "squad", "babi-1"]
SHOWN_APPROACHES = ["bert-base", "roberta-base", "bidaf", "docreader", "rasor"]  # family order, then name order
EM = {  # (approach, benchmark) -> EM of hyperparameter setting 0
    **dict(zip([(a, "squad") for a in APPROACHES], [10.0, 20.0, 30.0, 40.0, 50.0])),
    **dict(zip([(a, "qamr") for a in APPROACHES], [15.0, 25.0, 45.0, 35.0, 55.0])),
    **dict(zip([(a, "babi-1") for a in APPROACHES[:3]], [60.0, 50.0, 70.0])),
}
WORSE_SETTING = ("rasor", "squad", 8.0)  # a second setting that the `best` policy must not pick
FAILED = ("bert-base", "babi-1")
HOSTILE_ERROR = "RuntimeError: bad <script>alert('x')</script> & more"
GPU, CPU = "NVIDIA H100 80GB HBM3", "cpu (2 threads, x86_64)"
VERSIONS = {"concur": "0.1.0", "python": "3.11.2", "torch": "2.13.0", "transformers": "4.57.1"}
KENDALL_SQUAD_QAMR, PEARSON_SQUAD_QAMR, KENDALL_SQUAD_BABI = 0.8, 0.9, 1 / 3
FAST = BootstrapSettings(n_resamples=200)
RESAMPLES = str(FAST.n_resamples)


def _result(approach: str, bench: str, hparam_id: int, em: float | None) -> dict:
    job = {
        "key": f"{approach}-{bench}-{hparam_id}",
        "approach": approach,
        "benchmark": bench,
        "hparam_id": hparam_id,
        "seed": 0,
        "hparams": {"learning_rate": 3e-5 * (hparam_id + 1), "epochs": 2},
        "implementation": "hf-span",
        "model": {},
        "data_hash": "0" * 16,
        "result_version": 1,
    }
    result = {
        "job": job,
        "device": GPU if approach.startswith(("bert", "roberta")) else CPU,
        "versions": VERSIONS,
        "accounting": {"device_seconds": 1800.0},
    }
    if em is None:
        return {**result, "status": "failed", "error": HOSTILE_ERROR}
    return {**result, "status": "ok", "scores": {"exact_match": em, "f1": em + 5.0, "n_questions": 100}}


@pytest.fixture
def toy_runs(tmp_path) -> Workspace:
    """A runs directory whose job directories and index hold the toy results (no training)."""
    workspace = Workspace(tmp_path / "runs")
    results = [_result(approach, bench, 0, em) for (approach, bench), em in EM.items()]
    results += [_result(WORSE_SETTING[0], WORSE_SETTING[1], 1, WORSE_SETTING[2]), _result(*FAILED, 0, None)]
    for result in results:
        job_dir = JobDir(workspace.jobs_dir / result["job"]["key"])
        job_dir.path.mkdir(parents=True)
        atomic_write_json(job_dir.path / "job.json", result["job"])
        job_dir.write_result(JobResult.from_json(result))
    Store(workspace.db_path).sync(workspace.jobs_dir)
    return workspace


class Tables(HTMLParser):
    """Every <table id=...> of a page as rows of (attributes, text) cells, and the page's text and <img> sources."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[tuple[dict, str]]]] = {}
        self.images: list[str] = []
        self.warnings: list[str] = []
        self._table: str | None = None
        self._cell: tuple[dict, list[str]] | None = None
        self._warning: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "table" and "id" in attributes:
            self._table = attributes["id"]
            self.tables[self._table] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = (attributes, [])
        elif tag == "img":
            self.images.append(attributes["src"])
        elif tag == "li" and attributes.get("class") == "warning":
            self._warning = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._cell is not None and self._table:
            self.tables[self._table][-1].append((self._cell[0], "".join(self._cell[1]).strip()))
            self._cell = None
        elif tag == "li" and self._warning is not None:
            self.warnings.append("".join(self._warning))
            self._warning = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[1].append(data)
        if self._warning is not None:
            self._warning.append(data)


def parse(path: Path) -> Tables:
    parser = Tables()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def cell(tables: Tables, table: str, row: str, column: str) -> tuple[dict, str]:
    for cells in tables.tables[table]:
        if cells and cells[0][1] == row:
            return next((attributes, text) for attributes, text in cells[1:] if attributes.get("data-bench") == column)
    raise KeyError(row)


def test_report_content_from_a_store_without_a_browser(tmp_path, toy_runs):
    registry = default_registry([REPO / "bench" / "checks"])
    locator = SourceLocator((), toy_runs.cache_dir)

    def load(requests):
        return load_results(requests, store_path=toy_runs.db_path, locator=locator)

    options = ReportOptions(results=("store",), bootstrap=FAST)
    study = load_study(REPO / "analysis" / "studies" / "tiny-grid.toml")
    out = tmp_path / "report"
    index, report = write_report(
        out,
        lambda files: build_report(
            load(["store"]), options, load=load, registry=registry, workspace=toy_runs, recipes=[], study=study, files_dir=files
        ),
    )
    assert index == out / INDEX and sorted(path.name for path in out.iterdir()) == [FILES_DIR, INDEX]  # no staging left behind
    page = parse(index)
    html = index.read_text(encoding="utf-8")

    em_rows = page.tables["em-table"]
    assert [text for _, text in em_rows[0]] == ["approach", *SHOWN_BENCHES]
    assert [row[0][1] for row in em_rows[1:]] == SHOWN_APPROACHES  # family order
    assert cell(page, "em-table", "rasor", "squad")[1] == "10.00"  # the best setting, not the worse one (8.0)
    missing = [
        (row[0][1], attributes["data-bench"])
        for row in em_rows[1:]
        for attributes, _ in row[1:]
        if "missing" in attributes.get("class", "")
    ]
    assert sorted(missing) == [("bert-base", "babi-1"), ("roberta-base", "babi-1")]

    for method, squad_qamr in (("kendall", KENDALL_SQUAD_QAMR), ("pearson", PEARSON_SQUAD_QAMR)):
        matrix = page.tables[f"{method}-matrix"]
        assert [row[0][1] for row in matrix[1:]] == SHOWN_BENCHES
        attributes, text = cell(page, f"{method}-matrix", "squad", "qamr")
        assert float(attributes["data-value"]) == pytest.approx(squad_qamr) and attributes["data-n"] == "5"
        assert text.startswith(f"{squad_qamr:.2f}‡ (n=5)[-1.00, 1.00]")  # its interval over 5 approaches spans 0: inconclusive
        assert attributes["class"] == " inconclusive" and attributes["data-inconclusive"] == "true"
    attributes, text = cell(page, "kendall-matrix", "squad", "babi-1")
    assert float(attributes["data-value"]) == pytest.approx(KENDALL_SQUAD_BABI) and attributes["data-n"] == "3"
    assert attributes["class"] == "few inconclusive" and text.startswith("0.33†‡ (n=3)")
    assert any("2 of 3 pair(s) rest on fewer than 5 approaches" in warning and "squad×babi-1 (n=3)" in warning for warning in page.warnings)

    # the paper's pattern as a table: τ within the human-constructed family and between it and the synthetic one
    kendall = report.matrices[0].ci.estimate.values
    families = report.families.set_index(["first", "second"])
    assert [(row[0][1], row[1][1], row[2][1]) for row in page.tables["families"][1:]] == [
        ("human", "human", "1"),
        ("human", "synthetic", "2"),
    ]
    assert families.at[("human", "human"), "mean"] == pytest.approx(KENDALL_SQUAD_QAMR)
    between = (kendall.at["squad", "babi-1"] + kendall.at["qamr", "babi-1"]) / 2
    assert families.at[("human", "synthetic"), "mean"] == pytest.approx(between)
    assert families.at[("human", "synthetic"), "above"] == pytest.approx(KENDALL_SQUAD_QAMR - between)

    published = liu2023()
    agreement = {row[0][1]: row for row in page.tables["agreement-table"][1:]}
    assert list(agreement) == SHOWN_BENCHES
    for bench in BENCHES:
        theirs = published[published["benchmark"] == bench].set_index("approach")["em"]
        common = [a for a in APPROACHES if (a, bench) in EM]
        expected = stats.kendalltau([EM[(a, bench)] for a in common], [theirs[a] for a in common]).statistic
        assert agreement[bench][0][0]["data-n"] == str(len(common))
        assert float(agreement[bench][0][0]["data-kendall"]) == pytest.approx(expected, nan_ok=True)  # babi-1: all published at 100
    assert any("published table on babi-1 rests on 3 common approaches" in warning for warning in page.warnings)
    differences = page.tables["difference-table"]
    rasor_squad = cell(page, "difference-table", "rasor", "squad")[0]["data-value"]
    assert float(rasor_squad) == pytest.approx(10.0 - published.set_index(["approach", "benchmark"]).loc[("rasor", "squad"), "em"])
    assert len(differences) == 1 + len(APPROACHES)

    assert [text for _, text in page.tables["failures"][1]] == ["bert-base", "babi-1", "0", "0", HOSTILE_ERROR]
    assert "<script>alert" not in html and "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; more" in html
    devices = {row[0][1]: (row[1][1], row[2][1]) for row in page.tables["devices"][1:]}
    assert devices == {CPU: ("10", "5.00"), GPU: ("5", "2.50")}  # half an hour each; the failed job on the GPU too
    assert page.tables["versions"][1][0][1] == "concur 0.1.0, python 3.11.2, torch 2.13.0, transformers 4.57.1"
    assert "14 done" in html and "1 failed" in html and report.provenance.jobs == {"done": 14, "failed": 1}
    assert [text for _, text in page.tables["sources"][1]][:3] == ["store", "results store", str(len(EM))]
    assert "18: 18 not prepared" in html and [row[0][1] for row in page.tables["study-jobs"][1:]] == [
        "tiny-rasor",
        "tiny-bidaf",
        "tiny-docreader",
    ]
    assert len(page.images) == 2 and all(source.startswith("data:image/png;base64,") for source in page.images)  # the two heatmaps
    assert "http://" not in html and "https://" not in html  # nothing to fetch


def test_a_failed_build_leaves_the_previous_report_whole(tmp_path):
    out = tmp_path / "report"
    (out / FILES_DIR).mkdir(parents=True)
    (out / INDEX).write_text("the previous report")
    (out / FILES_DIR / "kendall.png").write_bytes(b"previous")

    def build(files: Path):
        (files / "half-drawn.png").write_bytes(b"partial")
        raise RuntimeError("killed while drawing")

    with pytest.raises(RuntimeError, match="killed while drawing"):
        write_report(out, build)
    assert (out / INDEX).read_text() == "the previous report" and (out / FILES_DIR / "kendall.png").read_bytes() == b"previous"
    assert sorted(path.name for path in out.iterdir()) == [FILES_DIR, INDEX]  # the staging directory is gone


def test_the_page_is_readable_by_others_as_a_plain_file_would_be(concur, tmp_path, toy_runs):
    previous = os.umask(0o022)
    try:
        made = concur(
            "--runs-dir", str(toy_runs.root), "report", "--results", "store", "--resamples", RESAMPLES, "--out", str(tmp_path / "r")
        )
    finally:
        os.umask(previous)
    assert made.returncode == 0, made.stderr
    assert stat.S_IMODE((tmp_path / "r" / INDEX).stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "r" / FILES_DIR).stat().st_mode) == 0o755


def test_study_results_are_described_from_the_studys_own_jobs(tmp_path, tiny_registry):
    """`--results study:FILE`: the jobs of its plan, their devices and versions, and its grid."""
    registry = default_registry([tiny_registry])
    workspace = Workspace(tmp_path / "runs")
    locator = SourceLocator((tmp_path / "data-root",), workspace.cache_dir)
    prepare(registry.benchmark("tiny-babi"), locator, workspace.data_dir)
    study_file = tmp_path / "mini.toml"
    study_file.write_text('name = "mini"\napproaches = ["tiny-bert"]\nbenches = ["tiny-babi"]\nhparams = 1\nseeds = [0, 1]\n')
    study = load_study(study_file)
    for planned, em in zip(plan_study(registry, study, workspace).jobs, (40.0, 60.0)):
        result = _result("tiny-bert", "tiny-babi", 0, em)
        JobDir(workspace.jobs_dir / planned.job.key).write_result(JobResult.from_json({**result, "job": planned.job.definition()}))
    source = f"study:{study_file}"

    def load(requests):
        return load_results(requests, store_path=workspace.db_path, locator=locator, registry=registry)

    options = ReportOptions(results=(source,), bootstrap=FAST)
    index, report = write_report(
        tmp_path / "report",
        lambda files: build_report(
            load([source]), options, load=load, registry=registry, workspace=workspace, recipes=[], study=None, files_dir=files
        ),
    )
    page = parse(index)
    assert cell(page, "em-table", "tiny-bert", "tiny-babi")[1] == "50.00"  # the mean of its two seeds
    assert [text for _, text in page.tables["sources"][1]][:3] == [source, "study results", "1"]
    assert [text for _, text in page.tables["approaches"][1]][3:6] == ["0", "0, 1", "2"]  # setting, seeds, runs
    assert report.provenance.jobs == {"done": 2} and {row[0][1]: row[1][1] for row in page.tables["devices"][1:]} == {CPU: "2"}
    assert report.provenance.study is not None and report.provenance.study.states == {"done": 2}
    assert "2: 2 done" in index.read_text(encoding="utf-8")


def test_bad_inputs_give_the_same_one_line_errors_as_matrix(concur, tmp_path):
    for bad in (
        ["--results", "liu2032"],
        ["--results", "liu2023", "--benches", "squad,qamrr"],
        ["--results", "liu2023", "--approaches", "bert-*x"],
    ):
        matrix = concur("matrix", *bad)
        report = concur("report", *bad, "--out", str(tmp_path / "out"))
        assert report.returncode == matrix.returncode == 2
        assert report.stderr == matrix.stderr and len(report.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    (tmp_path / "file").write_text("")
    clash = concur("report", "--results", "liu2023", "--benches", "squad,qamr", "--out", str(tmp_path / "file"))
    assert clash.returncode == 2 and "is a file; the report needs a directory" in clash.stderr


def test_reference_replaces_each_recipes_own(concur, tmp_path):
    out = tmp_path / "report"
    made = concur(
        "report", "--results", "liu2023", "--benches", "human", "--reference", "mrqa-nq",
        "--recipes", str(REPO / "analysis" / "table1.toml"), "--resamples", RESAMPLES, "--out", str(out),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    page = parse(out / INDEX)
    kendall = page.tables["recipe-table1-kendall"]
    assert [row[0][1] for row in kendall[1:]] == ["MRQA NaturalQuestions"]  # the table's rows: the reference alone
    published = liu2023()
    nq, qamr = (published[published["benchmark"] == bench].set_index("approach")["em"] for bench in ("mrqa-nq", "qamr"))
    qamr_column = [text for _, text in kendall[0]].index("QAMR")
    assert kendall[1][qamr_column][1] == f"{stats.kendalltau(nq, qamr[nq.index]).statistic:.2f}"


# --- in a real browser -------------------------------------------------------------------

BROWSERS = ("chromium", "chromium-browser", "google-chrome")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through its own chromedriver (nothing is downloaded)."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[test]')")
    binary = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    driver_path = shutil.which("chromedriver")
    if binary is None or driver_path is None:
        pytest.skip(f"no Chromium and chromedriver on PATH (found {binary}, {driver_path}); CI installs them with .ci/browser-up")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver_path), options=options)
    yield driver
    driver.quit()


def open_page(browser, index: Path) -> None:
    """Load the page from a file:// URL and check what any page must satisfy: no console errors, every image decoded."""
    from selenium.webdriver.common.by import By

    browser.get(index.resolve().as_uri())
    assert browser.execute_script("return document.readyState") == "complete"
    severe = [entry for entry in browser.get_log("browser") if entry["level"] == "SEVERE"]
    assert severe == []
    images = browser.find_elements(By.TAG_NAME, "img")
    assert images and all(
        browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", image) > 0 for image in images
    )


def rows(browser, table: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [
        row.get_attribute("data-approach") or row.get_attribute("data-bench")
        for row in browser.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr")
    ]


def columns(browser, table: str) -> list[str]:
    from selenium.webdriver.common.by import By

    return [header.get_attribute("data-bench") for header in browser.find_elements(By.CSS_SELECTOR, f"#{table} thead th[data-bench]")]


def matrix_cell(browser, table: str, row: str, column: str):
    from selenium.webdriver.common.by import By

    return browser.find_element(By.CSS_SELECTOR, f'#{table} tr[data-bench="{row}"] td[data-bench="{column}"]')


@pytest.mark.slow
def test_published_report_in_a_real_browser(concur, tmp_path, browser):
    from selenium.webdriver.common.by import By

    benches = ["squad", "mrqa-newsqa", "mrqa-nq", "qamr", "babi-1"]
    out = tmp_path / "published"
    made = concur(
        "report", "--results", "liu2023", "--benches", ",".join(benches), "--recipes", str(REPO / "analysis"), "--resamples", RESAMPLES,
        "--out", str(out),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    open_page(browser, out / INDEX)
    published = liu2023()
    approaches = rows(browser, "em-table")
    assert sorted(approaches) == sorted(published["approach"].unique()) and len(approaches) == 20
    assert columns(browser, "em-table") == benches
    bert_squad = browser.find_element(By.CSS_SELECTOR, '#em-table tr[data-approach="bert-base"] td[data-bench="squad"]')
    assert float(bert_squad.text) == published.set_index(["approach", "benchmark"]).loc[("bert-base", "squad"), "em"]
    squad, qamr = (published[published["benchmark"] == bench].set_index("approach")["em"] for bench in ("squad", "qamr"))
    for table in ("kendall-matrix", "pearson-matrix"):
        assert rows(browser, table) == benches and columns(browser, table) == benches
    expected = stats.kendalltau(squad[approaches], qamr[approaches]).statistic
    assert float(matrix_cell(browser, "kendall-matrix", "squad", "qamr").get_attribute("data-value")) == pytest.approx(expected)
    assert "Nothing in this report was run with concur: liu2023 is a published table." in browser.find_element(By.ID, "run").text
    assert "these results are the published table itself" in browser.find_element(By.ID, "agreement-unavailable").text
    warnings = browser.find_element(By.ID, "warnings").text
    assert "No per-question outcomes for squad, " in warnings and "resample approaches only" in warnings  # a published table
    assert "rests on fewer than" not in warnings
    drawn = browser.find_elements(By.CSS_SELECTOR, "figure.recipe")
    skipped = browser.find_elements(By.CSS_SELECTOR, "#skipped li")
    assert drawn and skipped  # e.g. figure 2 is drawn from squad and the human benchmarks; the downsampling curves are not
    assert any(item.get_attribute("data-kind") == "downsampling" and "needs at least" in item.text for item in skipped)


@pytest.mark.slow
def test_store_report_in_a_real_browser(concur, tmp_path, toy_runs, browser):
    from selenium.webdriver.common.by import By

    out = tmp_path / "mine"
    made = concur(
        "--runs-dir", str(toy_runs.root), "report", "--results", "store", "--recipes", str(REPO / "analysis"), "--resamples", RESAMPLES,
        "--out", str(out),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "warning: Concurrence matrices: 2 of 3 pair(s) rest on fewer than 5 approaches" in made.stderr
    open_page(browser, out / INDEX)
    assert rows(browser, "em-table") == SHOWN_APPROACHES
    assert columns(browser, "em-table") == SHOWN_BENCHES
    assert len(browser.find_elements(By.CSS_SELECTOR, "#em-table td.missing")) == 2
    for table in ("kendall-matrix", "pearson-matrix"):
        assert rows(browser, table) == SHOWN_BENCHES
    kendall = matrix_cell(browser, "kendall-matrix", "squad", "qamr")
    assert float(kendall.get_attribute("data-value")) == pytest.approx(KENDALL_SQUAD_QAMR) and kendall.text.startswith("0.80")
    pearson = matrix_cell(browser, "pearson-matrix", "qamr", "squad")
    assert float(pearson.get_attribute("data-value")) == pytest.approx(PEARSON_SQUAD_QAMR)
    small = matrix_cell(browser, "kendall-matrix", "babi-1", "squad")
    assert "few" in small.get_attribute("class") and small.text.startswith("0.33†")
    warnings = browser.find_element(By.ID, "warnings")
    assert warnings.is_displayed() and "rest on fewer than 5 approaches" in warnings.text
    assert "squad×babi-1 (n=3)" in warnings.text
    assert HOSTILE_ERROR in browser.find_element(By.ID, "failures").text  # shown as text, never run as markup

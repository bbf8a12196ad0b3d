"""Carved human benchmarks: train and test cut from one real source, no passage on both sides.

The carved specs record their carve (unit, seed, test fraction) and the sizes it makes; these
tests prepare each from the real files in ../shared/data and hold the recorded sizes to it.
`concur benches` says for every benchmark whether its data is at hand offline.
"""

import gzip
import json
import textwrap

import pytest

from concur.data.prepare import SPLITS, prepare
from concur.data.sources import SourceLocator
from concur.errors import SpecError
from concur.registry import default_registry
from concur.registry.specs import SplitSizes
from tests.conftest import SHARED_DATA, shared_file, user_benchmark, write_babi_like

# id: (source file under ../shared/data, its questions, its carve units: distinct passages or articles)
CARVED = {
    "squad-dev-carved": ("mrqa/dev/SQuAD.jsonl.gz", 10_507, 2_067),
    "squadshifts-new-wiki-carved": ("squadshifts/new_wiki_v1.0.json.gz", 7_938, 48),
    "squadshifts-reddit-carved": ("squadshifts/reddit_v1.0.json.gz", 9_803, 2_033),  # 2,035 passages, two texts twice
    "squadshifts-amazon-carved": ("squadshifts/amazon_reviews_v1.0.json.gz", 9_885, 413),
}


@pytest.mark.parametrize("bench_id", sorted(CARVED))
def test_carved_benchmark_prepares_to_its_recorded_sizes(tmp_path, bench_id):
    relative, questions, units = CARVED[bench_id]
    shared_file(relative)
    spec = default_registry().benchmark(bench_id)
    assert (spec.family, spec.carve.test_fraction, spec.carve.seed) == ("human", 0.2, 0)
    assert set(spec.carve.sizes) == set(SPLITS)
    locator = SourceLocator((SHARED_DATA,), tmp_path / "cache")
    first, _ = prepare(spec, locator, tmp_path / "a")
    second, _ = prepare(spec, locator, tmp_path / "b")
    assert first.manifest["sources"][spec.carve.source]["verified"]
    loaded = {split: first.load(split) for split in SPLITS}
    for split in SPLITS:
        entry = first.manifest["splits"][split]
        articles = loaded[split].n_articles if spec.carve.by == "article" else None
        assert SplitSizes(entry["questions"], entry["contexts"], articles) == spec.carve.sizes[split]
        assert not entry["dropped"]
        assert (first.directory / entry["file"]).read_bytes() == (second.directory / entry["file"]).read_bytes()
    train, test = loaded["train"], loaded["test"]
    assert train.n_questions + test.n_questions == questions
    assert not {passage.context for passage in train.passages} & {passage.context for passage in test.passages}
    assert not {q.qid for _, q in train.questions()} & {q.qid for _, q in test.questions()}
    if spec.carve.by == "article":
        assert not {p.article for p in train.passages} & {p.article for p in test.passages}
        assert test.n_articles == round(0.2 * units)
    else:
        assert len({passage.context for passage in test.passages}) == round(0.2 * units)


def test_nyt_carved_is_registered_by_article_without_sizes():
    spec = default_registry().benchmark("squadshifts-nyt-carved")
    (source,) = spec.sources.values()
    assert (spec.family, spec.carve.by, spec.carve.sizes) == ("human", "article", {})
    assert (source.reader, source.path, source.md5) == ("squad", "squadshifts/nyt_v1.0.json", None)
    assert source.url == "https://raw.githubusercontent.com/modestyachts/squadshifts-website/master/datasets/nyt_v1.0.json"


def test_a_carve_that_misses_its_recorded_sizes_names_the_field(tmp_path):
    shared_file("squadshifts/new_wiki_v1.0.json.gz")
    spec = user_benchmark(
        tmp_path, "reseeded", 'id = "reseeded"\nextends = "squadshifts-new-wiki-carved"\nfamily = "human"\n[carve]\nseed = 1\n'
    )
    with pytest.raises(SpecError) as caught:
        prepare(spec, SourceLocator((SHARED_DATA,), tmp_path / "cache"), tmp_path / "data")
    assert caught.value.field == "carve.sizes.train.questions" and caught.value.path.name == "reseeded.toml"
    assert "records 6,241, but carving" in str(caught.value) and "new_wiki_v1.0.json.gz made " in str(caught.value)
    assert not (tmp_path / "data" / "reseeded").exists()


def test_reddit_has_no_articles_to_carve_by(tmp_path):
    shared_file("squadshifts/reddit_v1.0.json.gz")
    spec = user_benchmark(
        tmp_path,
        "reddit-by-article",
        """
        id = "reddit-by-article"
        family = "human"
        [sources.shift]
        reader = "squad"
        path = "squadshifts/reddit_v1.0.json"
        [carve]
        source = "shift"
        by = "article"
        test_fraction = 0.2
        seed = 0
        """,
    )
    with pytest.raises(SpecError, match=r"field 'carve': carving 1 articles with test_fraction 0.2 leaves one side empty \(source "):
        prepare(spec, SourceLocator((SHARED_DATA,), tmp_path / "cache"), tmp_path / "data")


CARVE_SPEC = """
id = "x"
family = "human"
[sources.all]
reader = "squad"
path = "a.json"
[carve]
source = "all"
by = "{by}"
test_fraction = {fraction}
seed = 0
"""


TRAIN, TEST = "train = {questions = 8, contexts = 4}", "test = {questions = 2, contexts = 1}"


@pytest.mark.parametrize(
    ("by", "fraction", "sizes", "field", "problem"),
    [
        ("context", 0.2, f"{TRAIN[:-1]}, articles = 2}}\n{TEST}", "carve.sizes.train.articles", "only for a carve by article"),
        ("article", 0.2, f"{TRAIN}\n{TEST[:-1]}, articles = 1}}", "carve.sizes.train.articles", "is required"),
        ("context", 0.2, TRAIN, "carve.sizes.test", "is required"),
        ("context", 0.2, f"{TRAIN}\n{TEST.replace('questions = 2', 'questions = 0')}", "carve.sizes.test.questions", "must be positive"),
        ("context", 0.2, f"{TRAIN.replace('contexts', 'passages')}\n{TEST}", "carve.sizes.train.passages", "not a known field"),
        ("context", 0.2, TRAIN.replace("train", "dev"), "carve.sizes.dev", "not a known field"),
        ("context", 1.0, "", "carve.test_fraction", "must be between 0 and 1"),
    ],
)
def test_bad_carve_sizes_are_spec_errors(tmp_path, by, fraction, sizes, field, problem):
    text = CARVE_SPEC.format(by=by, fraction=fraction) + (f"[carve.sizes]\n{sizes}\n" if sizes else "")
    with pytest.raises(SpecError, match=problem) as caught:
        user_benchmark(tmp_path, "x", text)
    assert caught.value.field == field


def test_benches_shows_offline_availability(concur, tmp_path, monkeypatch):
    root, runs = tmp_path / "root", tmp_path / "runs"
    (root / "squadshifts").mkdir(parents=True)
    with gzip.open(root / "squadshifts" / "new_wiki_v1.0.json.gz", "wt") as handle:  # found as its gzip copy
        json.dump({"version": "1.0", "data": []}, handle)
    (root / "qamr" / "filtered").mkdir(parents=True)  # QAMR's dev and test, without its sentences file
    for name in ("dev.tsv", "test.tsv"):
        (root / "qamr" / "filtered" / name).write_text("")
    (root / "wikitext" / "wikitext-2").mkdir(parents=True)
    (root / "wikitext" / "wikitext-2" / "test.txt").write_text(" = Title = \n")
    cached = runs / "cache" / "sources" / "squadshifts" / "amazon_reviews_v1.0.json"
    cached.parent.mkdir(parents=True)
    cached.write_text("{}")
    registry = tmp_path / "registry" / "benchmarks"
    registry.mkdir(parents=True)
    (root / "tiny").mkdir()
    write_babi_like(root / "tiny" / "stories.txt", stories=20, seed=0)
    (registry / "tiny-carved.toml").write_text(
        textwrap.dedent(
            """\
            id = "tiny-carved"
            family = "synthetic"
            [sources.all]
            reader = "babi"
            path = "tiny/stories.txt"
            [carve]
            source = "all"
            by = "article"
            test_fraction = 0.25
            seed = 0
            """
        )
    )
    common = ("--registry", str(tmp_path / "registry"), "--runs-dir", str(runs))
    prepared = concur(*common, "data", "prepare", "tiny-carved", "--source-dir", str(root))
    assert prepared.returncode == 0, prepared.stderr
    expected = {
        "tiny-carved": "prepared",
        "squadshifts-new-wiki-carved": "sources found",  # under the data root
        "squadshifts-amazon-carved": "sources found",  # in the cache
        "squadshifts-reddit-carved": "missing: squadshifts/reddit_v1.0.json",
        "squadshifts-nyt-carved": "missing: squadshifts/nyt_v1.0.json",
        "squadshifts-new-wiki": "missing: squad/train-v1.1.json",  # its test file is here, its train file is not
        "squad-dev-carved": "missing: mrqa/dev/SQuAD.jsonl.gz",
        "qamr-devtest": "missing: qamr/wiki-sentences.tsv",
        "fuzzy-uniform": "generated",
        "fuzzy-3gram": "generated",
        "wikidata-synthetic": "missing: wikidata/codex/triples/codex-m/train.txt",
    }
    records = json.loads(concur(*common, "benches", "--format", "json", "--source-dir", str(root)).stdout)
    offline = {record["id"]: record["offline"] for record in records}
    assert {bench_id: offline[bench_id] for bench_id in expected} == expected
    monkeypatch.setenv("CONCUR_DATA_ROOT", str(root))  # the same lookup without --source-dir
    monkeypatch.setenv("COLUMNS", "400")  # one line per row
    table = concur(*common, "benches", "--family", "human").stdout
    rows = {line.split("│")[1].strip(): line.split("│")[4].strip() for line in table.splitlines() if line.count("│") == 6}
    assert {bench_id: rows[bench_id] for bench_id in expected if bench_id in rows} == {
        bench_id: value for bench_id, value in expected.items() if bench_id.startswith(("squad", "qamr"))
    }
    assert "┃ offline " in table

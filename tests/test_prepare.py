"""Materialising benchmarks: real bAbI and MRQA data, transforms, manifests, atomicity."""

import gzip
import json

import pytest

from concur.data import prepare as prepare_module
from concur.data.prepare import prepare, prepared
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, DataFormatError
from concur.fsutil import md5_file, read_json
from concur.registry import default_registry
from tests.conftest import SHARED_DATA, shared_file, user_benchmark
from tests.test_data_formats import SQUAD_FIXTURE


def _locator(tmp_path, *roots):
    return SourceLocator(tuple(roots), tmp_path / "cache")


def test_prepare_real_babi_once(tmp_path):
    shared_file("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt.gz")
    spec = default_registry().benchmark("babi-1")
    data_dir = tmp_path / "data"
    bench, did_work = prepare(spec, _locator(tmp_path, SHARED_DATA), data_dir)
    assert did_work
    manifest = bench.manifest
    assert manifest["spec_hash"] == spec.spec_hash
    assert {split: (entry["questions"], entry["contexts"]) for split, entry in manifest["splits"].items()} == {
        "train": (1000, 1000),
        "test": (1000, 1000),
    }
    source = manifest["sources"]["train"]
    assert (source["origin"], source["verified"], source["md5"]) == ("local", True, "b3d2196a7dd5d8c65b2ddc17a34d76bd")
    assert sorted(path.name for path in bench.directory.iterdir()) == ["manifest.json", "test.jsonl.gz", "train.jsonl.gz", "verified.json"]
    assert manifest["splits"]["test"]["md5"] == md5_file(bench.directory / "test.jsonl.gz", decompress=True)
    assert bench.load("test").n_questions == 1000
    again, did_work = prepare(spec, _locator(tmp_path, SHARED_DATA), data_dir)
    assert not did_work and again.manifest == manifest
    assert sorted(path.name for path in data_dir.iterdir()) == ["babi-1"]


def _squad_fixture_root(tmp_path):
    root = tmp_path / "root" / "mini"
    root.mkdir(parents=True)
    document = {"version": "1.1", "data": []}
    for copy in range(3):
        article = json.loads(json.dumps(SQUAD_FIXTURE["data"][0]))
        for qa in article["paragraphs"][0]["qas"]:
            qa["id"] += str(copy)
        document["data"].append(article)
    with gzip.open(root / "train.json.gz", "wt") as handle:  # a gzip copy of train.json, found as train.json
        json.dump(document, handle)
    (root / "dev.json").write_text(json.dumps(SQUAD_FIXTURE))
    return tmp_path / "root", md5_file(root / "train.json.gz", decompress=True), md5_file(root / "dev.json")


def test_downsampled_extends_and_rebuilds_on_spec_change(tmp_path):
    root, train_md5, dev_md5 = _squad_fixture_root(tmp_path)
    base = f"""
        id = "mini"
        family = "human"
        [sources.train]
        reader = "squad"
        path = "mini/train.json"
        md5 = "{train_md5}"
        [sources.test]
        reader = "squad"
        path = "mini/dev.json"
        md5 = "{dev_md5}"
    """
    user_benchmark(tmp_path, "mini", base)
    child = 'id = "mini-5"\nextends = "mini"\nfamily = "downsampled"\n[train.downsample]\nquestions = 5\nseed = {seed}\n'
    spec = user_benchmark(tmp_path, "mini-5", child.format(seed=0))
    bench, _ = prepare(spec, _locator(tmp_path, root), tmp_path / "data")
    assert bench.manifest["splits"]["train"]["questions"] == 5
    assert bench.manifest["splits"]["test"]["questions"] == 3
    assert bench.manifest["sources"]["train"]["path"].endswith("mini/train.json.gz")
    reseeded = user_benchmark(tmp_path, "mini-5", child.format(seed=1))
    assert prepared(tmp_path / "data", reseeded) is None  # a changed spec is not up to date
    rebuilt, did_work = prepare(reseeded, _locator(tmp_path, root), tmp_path / "data")
    assert did_work and rebuilt.data_hash != bench.data_hash


def test_wrong_local_md5_is_an_error_and_writes_nothing(tmp_path):
    root, train_md5, _ = _squad_fixture_root(tmp_path)
    spec = user_benchmark(
        tmp_path,
        "bad",
        f"""
        id = "bad"
        family = "human"
        [sources.train]
        reader = "squad"
        path = "mini/train.json"
        md5 = "{"0" * 32}"
        [sources.test]
        reader = "squad"
        path = "mini/dev.json"
    """,
    )
    with pytest.raises(ConcurError, match=rf"train.json.gz: md5 of the decompressed content of file is {train_md5}"):
        prepare(spec, _locator(tmp_path, root), tmp_path / "data")
    assert not (tmp_path / "data").exists()


def test_empty_split_is_an_error(tmp_path):
    root = tmp_path / "root"
    (root / "babi").mkdir(parents=True)
    (root / "babi" / "train.txt").write_text("1 Mary went home.\n2 Where is Mary?\tgarden\t1\n")
    (root / "babi" / "test.txt").write_text("1 Mary went home.\n2 Where is Mary?\thome\t1\n")
    spec = user_benchmark(
        tmp_path,
        "tiny-babi",
        """
        id = "tiny-babi"
        family = "synthetic"
        [sources.train]
        reader = "babi"
        path = "babi/train.txt"
        [sources.test]
        reader = "babi"
        path = "babi/test.txt"
    """,
    )
    with pytest.raises(DataFormatError, match=r"train.txt: benchmark 'tiny-babi': the train split has no usable questions"):
        prepare(spec, _locator(tmp_path, root), tmp_path / "data")


def test_failure_while_writing_leaves_no_benchmark_directory(tmp_path, monkeypatch):
    shared_file("babi/tasks_1-20_v1-2/en/qa1_single-supporting-fact_train.txt.gz")
    spec = default_registry().benchmark("babi-1")
    real_write = prepare_module.write_mrqa
    calls = []

    def write_then_fail(split, path):
        calls.append(path.name)
        real_write(split, path)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(prepare_module, "write_mrqa", write_then_fail)
    with pytest.raises(OSError, match="No space left"):
        prepare(spec, _locator(tmp_path, SHARED_DATA), tmp_path / "data")
    assert list((tmp_path / "data").iterdir()) == []
    assert prepared(tmp_path / "data", spec) is None


def test_manifest_is_json_with_creation_time(tmp_path):
    shared_file("babi/tasks_1-20_v1-2/en/qa4_two-arg-relations_train.txt.gz")
    bench, _ = prepare(default_registry().benchmark("babi-4"), _locator(tmp_path, SHARED_DATA), tmp_path / "data")
    manifest = read_json(bench.directory / "manifest.json")
    assert manifest["benchmark"] == "babi-4" and manifest["family"] == "synthetic"
    assert manifest["created"].endswith("+00:00") and len(manifest["data_hash"]) == 64

"""Leaderboards as tidy tables: hand-made payloads with known rows, the id and name-matching rules, the real files."""

import gzip
import json
import re

import pandas as pd
import pytest

from concur.analysis.leaderboards import (
    AMBIGUOUS_KIND,
    LEADERBOARDS,
    MATCHED,
    NO_ENTRY,
    NO_ENTRY_ON_DATE,
    SHARED,
    UNSCORED,
    SystemName,
    leaderboard_files,
    load_leaderboard,
    match_squad,
    mrqa_results,
    parse_system_name,
    slug,
    squad_entries,
    squadshifts_humans,
    squadshifts_results,
    unique_ids,
)
from concur.data.sources import SourceLocator
from concur.errors import ConcurError, DataFormatError, UnknownNameError
from tests.conftest import SHARED_DATA, shared_file


def _mrqa_entry(description, scores, created=1_500_000_000, user="someone"):
    return {"submission": {"description": description, "created": created, "user_name": user}, "scores": scores}


def _squad_entry(description, em, created, f1=None):
    return {
        "submission": {"description": description, "created": created},
        "scores": {"exact_match": em, "f1": f1 if f1 is not None else em},
    }


def _locator(tmp_path, root=SHARED_DATA):
    return SourceLocator((root,), tmp_path / "cache")


# --- MRQA ----------------------------------------------------------------------------------


def test_mrqa_payload_gives_exact_tidy_rows():
    payload = {
        "leaderboard": [
            _mrqa_entry(
                "\t D-NET  (Baidu)", {"BioASQ_em": 60.5, "BioASQ_f1": 71.25, "DuoRC.ParaphraseRC_em": 50.0, "DuoRC.ParaphraseRC_f1": 61.0}
            ),
            _mrqa_entry(
                "BERT+Adv (Team 42)", {"BioASQ_em": 55.0, "BioASQ_f1": 66.0, "DuoRC.ParaphraseRC_em": None, "DuoRC.ParaphraseRC_f1": None}
            ),
            _mrqa_entry("broken run", {"BioASQ_em": None, "BioASQ_f1": None, "DuoRC.ParaphraseRC_em": None, "DuoRC.ParaphraseRC_f1": None}),
        ]
    }
    results = mrqa_results(payload, "test", origin="ood-test-results.json")
    rows = results.frame[["approach", "benchmark", "em", "f1", "approach_name", "benchmark_name"]].values.tolist()
    assert rows == [
        ["d-net-baidu", "mrqa19-test-bioasq", 60.5, 71.25, "D-NET (Baidu)", "BioASQ"],
        ["d-net-baidu", "mrqa19-test-duorc-paraphraserc", 50.0, 61.0, "D-NET (Baidu)", "DuoRC.ParaphraseRC"],
        ["bert-plus-adv-team-42", "mrqa19-test-bioasq", 55.0, 66.0, "BERT+Adv (Team 42)", "BioASQ"],
    ]
    assert results.frame["hparam_id"].isna().all() and results.frame["seed"].isna().all()
    assert set(results.frame["approach_family"]) == {"leaderboard system"} and set(results.frame["benchmark_family"]) == {"human"}
    assert results.notes == (
        "MRQA 2019 out-of-domain test: 2 of 3 systems scored on 2 datasets (BioASQ, DuoRC.ParaphraseRC); "
        "1 left out (no scores): broken run",
    )


def test_mrqa_split_names_the_benchmarks():
    payload = {"leaderboard": [_mrqa_entry("A (x)", {"SQuAD_em": 80.0, "SQuAD_f1": 88.0})]}
    assert mrqa_results(payload, "indomain").frame["benchmark"].tolist() == ["mrqa19-indomain-squad"]
    assert mrqa_results(payload, "dev").frame["benchmark"].tolist() == ["mrqa19-dev-squad"]
    with pytest.raises(UnknownNameError, match="MRQA split"):
        mrqa_results(payload, "train")


def test_case_twins_get_ids_by_submission_time_in_any_order():
    later = _mrqa_entry("Bert-Multi-Finetune (BLCU)", {"DROP_em": 30.0, "DROP_f1": 40.0}, created=1565082513, user="ZHO")
    earlier = _mrqa_entry("bert-multi-finetune (BLCU)", {"DROP_em": 31.0, "DROP_f1": 41.0}, created=1564986145, user="ZHO")
    for entries in ([later, earlier], [earlier, later]):
        frame = mrqa_results({"leaderboard": entries}, "dev").frame.set_index("approach_name")
        assert frame.loc["bert-multi-finetune (BLCU)", "approach"] == "bert-multi-finetune-blcu"
        assert frame.loc["Bert-Multi-Finetune (BLCU)", "approach"] == "bert-multi-finetune-blcu-2"


def test_slugs_and_unique_ids():
    assert (
        slug("\t Hierarchical attention over BERT features (Alexandria University)")
        == "hierarchical-attention-over-bert-features-alexandria-university"
    )
    assert slug("{SQuADbasedonmulti} (BLCU)") == "squadbasedonmulti-blcu"
    assert slug("EAZI+ (ensemble)") != slug("{EAZI} (ensemble)")
    assert slug("BiDAF++ (single model)") == "bidaf-plus-plus-single-model"
    # "a b" and "a-b" share slug "a-b"; the first by order keeps it, and "-2" is skipped because a real name owns it.
    assert unique_ids(["a-b", "a b", "A-B 2"], ["x", "y", "z"]) == ["a-b", "a-b-3", "a-b-2"]
    assert all("," not in value for value in unique_ids(["Foo, Inc. (single)"], [0]))


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"submission": {"description": "Sys (Lab)"}}, r"entry 1 \('Sys \(Lab\)'\): missing key 'scores'"),
        (
            _mrqa_entry("Sys (Lab)", {"DROP_em": "n/a", "DROP_f1": 40.0}),
            r"entry 1 \('Sys \(Lab\)'\), DROP_em: score must be a number, got 'n/a'",
        ),
        (
            _mrqa_entry("Sys (Lab)", {"DROP_em": True, "DROP_f1": 40.0}),
            r"entry 1 \('Sys \(Lab\)'\), DROP_em: score must be a number, got True",
        ),
        (_mrqa_entry("Sys (Lab)", {"DROP_em": 30.0}), r"entry 1 \('Sys \(Lab\)'\): missing key DROP_f1"),
        # Entries must score the same datasets: the first entry lacking one is named.
        (_mrqa_entry("Sys (Lab)", {"RACE_em": 30.0, "RACE_f1": 40.0}), r"entry 0 \('Good \(Lab\)'\): missing key RACE_em"),
        ({"scores": {}}, r"entry 1: missing key 'submission'"),
    ],
)
def test_malformed_mrqa_payload_names_file_and_entry(entry, problem):
    good = _mrqa_entry("Good (Lab)", {"DROP_em": 30.0, "DROP_f1": 40.0})
    with pytest.raises(DataFormatError, match=r"^results/ood-dev-results\.json: leaderboard " + problem):
        mrqa_results({"leaderboard": [good, entry]}, "dev", origin="results/ood-dev-results.json")


def test_payload_without_leaderboard_and_out_of_range_scores():
    with pytest.raises(DataFormatError, match="f.json: the file: missing key 'leaderboard'"):
        mrqa_results({"rows": []}, "dev", origin="f.json")
    with pytest.raises(DataFormatError, match="f.json: column 'em' must be a number from 0 to 100"):
        mrqa_results({"leaderboard": [_mrqa_entry("A", {"DROP_em": 130.0, "DROP_f1": 40.0})]}, "dev", origin="f.json")


# --- names and matching ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "trailing", "expected"),
    [
        ("MARS (single model) (YUANFUDAO research NLP)", True, SystemName("mars", "single", None, "yuanfudao research nlp")),
        ("\tjNet (ensemble) (USTC) https://arxiv.org/abs/1703.04617", True, SystemName("jnet", "ensemble", None, "ustc")),
        ("MARS (single model, June 21 2018)", False, SystemName("mars", "single", "june 21 2018", None)),
        ("{EAZI}  (Ensemble Model)", False, SystemName("eazi", "ensemble", None, None)),
        ("ST_bl(Single)", False, SystemName("st_bl", "single", None, None)),
        ("SLQA+ (single model) Alibaba iDST NLP", True, SystemName("slqa+", "single", None, "alibaba idst nlp")),
        (
            "FastQAExt (German Research Center for AI) https://arxiv.org/abs/1703.04816",
            True,
            SystemName("fastqaext", None, None, "german research center for ai"),
        ),
        ("InfoWord (base)", False, SystemName("infoword base", None, None, None)),
        ("Match-LSTM w/ Bi-Ans-Ptr Boundary (Single)", False, SystemName("match-lstm with bi-ans-ptr boundary", "single", None, None)),
        (
            "Match-LSTM with Bi-Ans-Ptr (Boundary) (SMU) www.smu.edu",
            True,
            SystemName("match-lstm with bi-ans-ptr boundary", None, None, "smu"),
        ),
    ],
)
def test_parse_system_name(text, trailing, expected):
    assert parse_system_name(text, trailing_institution=trailing) == expected


def _entries(*rows):
    return squad_entries({"leaderboard": [_squad_entry(*row) for row in rows]})


def test_match_squad_rules():
    june_21_2018, may_9_2018, sept_1_2018 = 1529575305, 1525859070, 1535804455
    entries = _entries(
        ("MARS (single model) (YUANFUDAO)", 83.18, sept_1_2018),
        ("MARS (single model) (YUANFUDAO)", 83.12, june_21_2018),
        ("MARS (single model) (YUANFUDAO)", 82.59, may_9_2018),
        ("MARS (single model) (YUANFUDAO)", None, sept_1_2018 + 10),  # never scored: not a candidate
        ("CSG BERT (single model) (MST/EOI) www.tia.today", 82.9, 1557358388),
        ("CSG BERT (single model) (Jerry AGI) www.tia.today", 83.9, 1555850839),
        ("UQA V1 (ensemble) (Anon)", 47.3, 1550841694),
        ("UQA V1 (single model) (Anon)", 44.2, 1550263426),
        ("Dynamic Chunk Reader (IBM)  https://arxiv.org/abs/1610.09996", 62.5, 1475111729),
        ("SSAE (single model) (Tsinghua)", None, 1499397181),
        ("Jenga (single model) (FAIR)", 74.4, 1517913634),
        ("", 99.0, 1517913634),  # nameless: cannot be matched
    )
    assert len(entries) == 11
    models = [
        ("MARS (single model)", ""),
        ("MARS (Single, May 9 2018)", ""),
        ("MARS (single model, Jan 23)", ""),
        ("CSG BERT (single model)", "Jerry AGI"),
        ("CSG BERT (single model, May 8 2019)", ""),
        ("UQA V1", ""),
        ("Dynamic Chunk Reader (Single)", ""),
        ("SSAE (Single)", ""),
        ("Jenga (Single)", ""),
        ("Jenga (single model)", "FAIR"),
        ("QANet (single model)", ""),
    ]
    found = {m.model: (m.reason, m.entry.em if m.entry else None, m.candidates) for m in match_squad(models, entries)}
    assert found == {
        "MARS (single model)": (MATCHED, 83.18, 3),  # the latest scored resubmission
        "MARS (Single, May 9 2018)": (MATCHED, 82.59, 3),  # the one submitted on the named date
        "MARS (single model, Jan 23)": (NO_ENTRY_ON_DATE, None, 3),
        "CSG BERT (single model)": (MATCHED, 83.9, 2),  # the institution decides
        "CSG BERT (single model, May 8 2019)": (MATCHED, 82.9, 2),
        "UQA V1": (AMBIGUOUS_KIND, None, 2),
        "Dynamic Chunk Reader (Single)": (MATCHED, 62.5, 1),  # the SQuAD name gives no kind: compatible
        "SSAE (Single)": (UNSCORED, None, 0),
        "Jenga (Single)": (SHARED, None, 1),
        "Jenga (single model)": (SHARED, None, 1),
        "QANet (single model)": (NO_ENTRY, None, 0),
    }


def test_kind_must_agree_when_both_names_give_it():
    entries = _entries(("Reader (ensemble) (Lab)", 80.0, 2), ("Reader (single model) (Lab)", 75.0, 1))
    (single,), (ensemble,) = match_squad([("Reader (single)", "")], entries), match_squad([("Reader (Ensemble)", "")], entries)
    assert (single.entry.em, ensemble.entry.em) == (75.0, 80.0)


# --- SQuADShifts -----------------------------------------------------------------------------


def _shift_model(shift, name, em, f1, institution=""):
    return {"name": name, "institution": institution, f"{shift}_em": em, f"{shift}_f1": f1, "paper_link": ""}


SHIFTS = {
    "amazon": {
        "models": [
            _shift_model("amazon", "Alpha (single model)", "60.125", "70.5"),
            _shift_model("amazon", "Beta", "50.0", "61.0", "Lab B"),
        ],
        "humans": [_shift_model("amazon", "Human 1", "79.866", "92.590", "UC Berkeley")],
    },
    "reddit": {"models": [_shift_model("reddit", "Alpha (single model)", "55.5", "66.0")], "humans": []},
}
SQUAD = {
    "leaderboard": [
        _squad_entry("Alpha (single) (Lab A) https://a.example", 80.25, 1_500_000_000, f1=88.5),
        _squad_entry("Alpha (single model) (Lab A)", 70.0, 1_400_000_000),
        _squad_entry("Gamma (ensemble) (Lab C)", 81.0, 1_500_000_000),
    ]
}


def test_squadshifts_payload_gives_exact_rows_and_notes():
    results = squadshifts_results(SHIFTS, SQUAD, shifts_origin="results.json", squad_origin="out-v1.1.json")
    rows = results.frame[["approach", "benchmark", "em", "f1", "approach_name", "benchmark_name"]].values.tolist()
    assert rows == [
        ["alpha-single-model", "squadshifts-reddit", 55.5, 66.0, "Alpha (single model)", "SQuADShifts Reddit"],
        ["alpha-single-model", "squadshifts-amazon", 60.125, 70.5, "Alpha (single model)", "SQuADShifts Amazon Reviews"],
        ["beta", "squadshifts-amazon", 50.0, 61.0, "Beta", "SQuADShifts Amazon Reviews"],
        ["alpha-single-model", "squad-test", 80.25, 88.5, "Alpha (single model)", "SQuAD v1.1 (hidden test)"],
    ]
    assert results.notes == (
        "SQuADShifts: 2 models (1 on reddit, 2 on amazon); human annotators are not in the table (see squadshifts_humans)",
        "SQuADShifts: 1 of 2 models matched a SQuAD v1.1 leaderboard entry (squad-test); 1 left out; "
        "1 of the matches chose among resubmissions under one name",
        "SQuADShifts: left out, no SQuAD entry with this name (1): Beta",
    )
    humans = squadshifts_humans(SHIFTS)
    assert humans.values.tolist() == [["squadshifts-amazon", "Human 1", 79.866, 92.59]]


def test_malformed_squadshifts_payloads():
    bad_score = {"amazon": {"models": [_shift_model("amazon", "Alpha", "sixty", "70")], "humans": []}}
    with pytest.raises(
        DataFormatError, match=r"results.json: set 'amazon', models entry 0 \('Alpha'\), amazon_em: score must be a number, got 'sixty'"
    ):
        squadshifts_results(bad_score, SQUAD, shifts_origin="results.json")
    with pytest.raises(DataFormatError, match="results.json: unknown SQuADShifts set 'imdb'"):
        squadshifts_results({"imdb": {"models": []}}, SQUAD, shifts_origin="results.json")
    missing = {"leaderboard": [{"submission": {"description": "Alpha (single)"}, "scores": {"f1": 80.0}}]}
    with pytest.raises(DataFormatError, match=r"out.json: leaderboard entry 0 \('Alpha \(single\)'\): missing key 'exact_match'"):
        squadshifts_results(SHIFTS, missing, squad_origin="out.json")


# --- files -----------------------------------------------------------------------------------


def test_spec_declares_pinned_files():
    files = leaderboard_files()
    assert set(files) == {"mrqa2019-in-domain-dev", "mrqa2019-ood-dev", "mrqa2019-ood-test", "squadshifts", "squad-v1.1"}
    for spec in files.values():
        assert re.fullmatch(r"[0-9a-f]{32}", spec.source.md5)
        assert re.match(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", spec.source.url)
        assert spec.source.url.endswith(spec.source.path.rsplit("/", 1)[-1]) and spec.citation


def test_unknown_leaderboard(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown leaderboard 'squadshift'; did you mean 'squadshifts'"):
        load_leaderboard("squadshift", _locator(tmp_path))


def test_md5_mismatch_names_the_local_copy(tmp_path):
    path = tmp_path / "root" / "mrqa" / "shared_task_repo" / "results" / "ood-dev-results.json.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(json.dumps({"leaderboard": []}).encode()))
    with pytest.raises(
        ConcurError, match=r"ood-dev-results\.json\.gz: md5 of the decompressed content of file is [0-9a-f]{32}, but .* declares a17461f2"
    ):
        load_leaderboard("mrqa2019-ood-dev", _locator(tmp_path, tmp_path / "root"))


# --- the real files --------------------------------------------------------------------------


def test_real_mrqa_leaderboards(tmp_path):
    shared_file("mrqa/shared_task_repo/results/ood-test-results.json.gz")
    locator = _locator(tmp_path)
    counts, ids = {}, {}
    for name in LEADERBOARDS[:3]:
        results = load_leaderboard(name, locator)
        frame = results.frame
        systems = int(re.search(r"of (\d+) systems", results.notes[1]).group(1))
        counts[name] = (systems, frame["approach"].nunique(), frame["benchmark"].nunique(), len(frame))
        ids[name] = dict(zip(frame["approach_name"], frame["approach"]))
        assert "md5 verified" in results.notes[0]
    assert counts == {
        "mrqa2019-in-domain-dev": (18, 14, 6, 84),
        "mrqa2019-ood-dev": (18, 14, 6, 84),
        "mrqa2019-ood-test": (18, 15, 12, 180),
    }
    # The same submission has the same id in every file, and the two case twins differ.
    merged = pd.DataFrame(ids)
    assert all(merged.loc[name].dropna().nunique() == 1 for name in merged.index)
    assert merged.loc["Bert-Multi-Finetune (BLCU)"].dropna().unique().tolist() == ["bert-multi-finetune-blcu-2"]
    assert merged.loc["bert-multi-finetune (BLCU)"].dropna().unique().tolist() == ["bert-multi-finetune-blcu"]
    frame = load_leaderboard("mrqa2019-ood-test", locator).frame.set_index(["approach", "benchmark"])
    assert frame.loc[("d-net-baidu", "mrqa19-test-duorc-paraphraserc"), "benchmark_name"] == "DuoRC.ParaphraseRC"
    assert "hierarchical-attention-over-bert-features-alexandria-university" in frame.index.get_level_values(0)


def test_real_squadshifts_leaderboard(tmp_path):
    shared_file("squadshifts/results.json.gz")
    shared_file("squad/explorer/out-v1.1.json.gz")
    results = load_leaderboard("squadshifts", _locator(tmp_path))
    frame = results.frame
    assert frame.groupby("benchmark").size().to_dict() == {
        "squadshifts-amazon": 113,
        "squadshifts-new-wiki": 105,
        "squadshifts-nyt": 105,
        "squadshifts-reddit": 97,
        "squad-test": 85,
    }
    assert frame["approach"].nunique() == 113
    assert results.notes[3] == (
        "SQuADShifts: 85 of 113 models matched a SQuAD v1.1 leaderboard entry (squad-test); 28 left out; "
        "10 of the matches chose among resubmissions under one name"
    )
    squad = frame[frame["benchmark"] == "squad-test"].set_index("approach_name")["em"]
    assert squad["MARS (single model, June 21 2018)"] == pytest.approx(83.12178747508653)
    assert squad["XLNet (single model)"] == pytest.approx(89.89824819049618)
    assert "UnsupervisedQA V1" not in squad.index

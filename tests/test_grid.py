"""Study grids: selection by id, family and glob, and hyperparameter samples that a study always draws alike."""

from __future__ import annotations

import pytest

from concur.errors import ConcurError, UnknownNameError
from concur.registry import default_registry
from concur.runner.planning.grid import GridRequest, expand_grid, select_benchmarks
from concur.runner.planning.hparams import hparam_settings
from tests.conftest import toml_value


def test_setting_zero_is_the_published_one_and_samples_stay_in_the_space():
    spec = default_registry().approach("bert-base")
    settings = hparam_settings(spec, 6, study_seed=0)
    assert [s.id for s in settings] == [0, 1, 2, 3, 4, 5]
    assert settings[0].values == spec.hparams
    for setting in settings[1:]:
        values = setting.values
        assert 2e-5 <= values["learning_rate"] <= 5e-5
        assert values["train_batch_size"] in (16, 32) and values["epochs"] in (2, 3, 4)
        assert 0.0 <= values["warmup_ratio"] <= 0.2
        assert {k: v for k, v in values.items() if k not in spec.space} == {k: v for k, v in spec.hparams.items() if k not in spec.space}
    assert len({s.values["learning_rate"] for s in settings[1:]}) == 5


def test_a_study_always_samples_the_same_settings_and_another_study_others():
    spec = default_registry().approach("bidaf")
    six = hparam_settings(spec, 6, study_seed=7)
    assert hparam_settings(spec, 6, study_seed=7) == six
    assert hparam_settings(spec, 3, study_seed=7) == six[:3]  # setting k does not depend on how many are drawn
    other = hparam_settings(spec, 6, study_seed=8)
    assert other[0] == six[0] and all(a.values != b.values for a, b in zip(other[1:], six[1:]))
    bidaf_pp = hparam_settings(default_registry().approach("bidaf-pp"), 2, study_seed=7)[1].values
    assert bidaf_pp["learning_rate"] != six[1].values["learning_rate"]  # each approach draws from its own stream


def test_grid_of_globs_families_hparams_and_seeds():
    request = GridRequest("bert-*", "squad,family:downsampled", hparams=2, seeds=(0, 1), hparam_seed=0)
    points = expand_grid(default_registry(), request)
    assert len(points) == 3 * 6 * 2 * 2  # bert-base/-large/-large-wwm x squad + 5 downsampled x 2 settings x 2 seeds
    assert {p.approach.id for p in points} == {"bert-base", "bert-large", "bert-large-wwm"}
    assert [p.bench.id for p in points[::12]] == ["squad", "squad-1k", "squad-10k", "squad-20k", "squad-40k", "squad-60k"]
    assert points[0].describe() == "bert-base on squad (hparams 0, seed 0)"
    assert [(p.setting.id, p.seed) for p in points[:4]] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_typos_name_the_closest_spec_and_nothing_expands():
    registry = default_registry()
    with pytest.raises(UnknownNameError, match="unknown benchmark 'sqaud'; did you mean 'squad'"):
        expand_grid(registry, GridRequest("bidaf", "sqaud"))
    with pytest.raises(UnknownNameError, match="unknown benchmark family 'synthtic'; did you mean 'synthetic'"):
        select_benchmarks(registry, "family:synthtic")
    with pytest.raises(ConcurError, match="pattern 'roberta-xl\\*' matches no approach"):
        expand_grid(registry, GridRequest("roberta-xl*", "squad"))
    with pytest.raises(ConcurError, match="at least 1"):
        expand_grid(registry, GridRequest("bidaf", "squad", hparams=0))


def test_a_space_that_draws_invalid_values_is_refused_with_the_file(tmp_path):
    bidaf = default_registry().approach("bidaf")
    (tmp_path / "approaches").mkdir()
    body = "\n".join(f"{key} = {toml_value(value)}" for key, value in bidaf.hparams.items())
    path = tmp_path / "approaches" / "leaky-bidaf.toml"
    path.write_text(
        'id = "leaky-bidaf"\nfamily = "non-pretrained"\nimplementation = "bidaf"\n'
        '[model]\nword_vectors = "glove.6B.100d"\noffline_vectors = "random"\nword_dim = 8\nlinguistic_features = false\n'
        f"[hparams]\n{body}\n[space]\ndropout = {{ uniform = [1.0, 2.0] }}\n"
    )
    registry = default_registry([tmp_path])
    assert len(expand_grid(registry, GridRequest("leaky-bidaf", "squad", hparams=1))) == 1  # setting 0 is fine
    with pytest.raises(
        ConcurError, match=r"leaky-bidaf.*leaky-bidaf.toml.*setting 1 drawn from \[space\]: dropout must be in \[0, 1\), got 1\.\d+"
    ):
        expand_grid(registry, GridRequest("leaky-bidaf", "squad", hparams=2))


def test_drawing_settings_needs_a_space(tmp_path, tiny_registry):
    registry = default_registry([tiny_registry])
    assert len(expand_grid(registry, GridRequest("tiny-bert", "tiny-babi"))) == 1
    with pytest.raises(ConcurError, match="approach 'tiny-bert' declares no \\[space\\] to draw settings from .*tiny-bert.toml"):
        expand_grid(registry, GridRequest("tiny-bert", "tiny-babi", hparams=2))

"""A non-editable install ships the registry's specs as package data."""

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def test_wheel_install_carries_specs_and_reference_data(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path / "dist"), str(REPO)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = (tmp_path / "dist").glob("concur-*.whl")
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)], capture_output=True, text=True
    )
    assert install.returncode == 0, install.stderr
    probe = (
        "import json, concur; from concur.registry import default_registry; from concur.registry.registry import builtin_registry_dir;"
        "r = default_registry(); print(json.dumps([concur.__file__, str(builtin_registry_dir()),"
        " len(r.benchmarks()), len(r.approaches()), str(r.approach('bert-base').file)]));"
        "from concur.analysis.reference import liu2023; from concur.analysis.leaderboards import leaderboard_files;"
        "print(len(liu2023()), sorted(leaderboard_files()))"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    module_file, spec_dir, benches, approaches, bert_file = json.loads(first)
    # the published reference and the leaderboard declarations are package data too
    assert second.startswith("880 ") and "'mrqa2019-ood-test'" in second and "'squadshifts'" in second
    assert module_file.startswith(str(target))
    assert spec_dir == str(target / "concur" / "_specs")
    assert bert_file == str(target / "concur" / "_specs" / "approaches" / "bert-base.toml")
    # every spec of the checkout is in the wheel
    assert (benches, approaches) == (len(list((REPO / "benchmarks").glob("*.toml"))), len(list((REPO / "approaches").glob("*.toml"))))

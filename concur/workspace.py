"""Where a study keeps its outputs (`runs/`, git-ignored).

```
runs/
  concur.sqlite        the index of results, rebuilt from job directories at any time
  jobs/<key>/          one directory per job: job.json, log, predictions.json.gz, result.json
  data/<benchmark>/    materialised benchmarks: train.jsonl.gz, test.jsonl.gz, manifest.json
  cache/               downloaded and extracted source files
  damaged/<time>/      damaged files moved aside, never deleted
```
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

RUNS_ENV = "CONCUR_RUNS"
DATA_ROOT_ENV = "CONCUR_DATA_ROOT"
DAMAGED_DIR = "damaged"  # runs/damaged/<time>/: damaged files moved aside (by `concur store rebuild`, --retry-failed)


@dataclass(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def resolve(cls, runs_dir: Path | str | None = None) -> Workspace:
        """`runs_dir` if given, else `$CONCUR_RUNS`, else `./runs`."""
        return cls(Path(runs_dir or os.environ.get(RUNS_ENV) or "runs").resolve())

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def jobs_dir(self) -> Path:
        return self.root / "jobs"

    @property
    def cache_dir(self) -> Path:
        return self.root / "cache"

    @property
    def db_path(self) -> Path:
        return self.root / "concur.sqlite"

    def damaged_aside(self) -> Path:
        """A directory of its own under runs/damaged/, named by the time, for the damaged files moved aside now
        (created by the first file moved there)."""
        return self.root / DAMAGED_DIR / (time.strftime("%Y%m%d-%H%M%S-") + f"{time.time_ns() % 10**9:09d}")


def data_roots(source_dirs: list[Path] | tuple[Path, ...] = ()) -> list[Path]:
    """Directories holding local copies of source files: `--source-dir`, then `$CONCUR_DATA_ROOT`."""
    roots = [Path(directory) for directory in source_dirs]
    roots += [Path(part) for part in os.environ.get(DATA_ROOT_ENV, "").split(os.pathsep) if part]
    return roots

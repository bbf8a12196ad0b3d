"""Where a bench command's result file goes: one JSON document, its folder made, its path printed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_json(path: Path, payload: Any) -> None:
    """Write `payload` as indented JSON to `path` and say so (`written: PATH`, the line the docs' commands end with)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"written: {path}")

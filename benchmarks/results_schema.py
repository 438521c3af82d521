"""The one schema of a benchmark result file, and the one place that writes one.

A result lives at ``benchmarks/results/<area>/<device>/<what>-<date>.<ext>``:

- ``area``: what is measured (``peers``, ``corpus``, ``search``, ``panel``, ``cluster``,
  ``timing``, ``compile``, ``tune``, ``agent``, ``verification``, ``device``);
- ``device``: where (``h100``, ``cpu`` for the 2-core development machine, ``h100-host-cpu``);
- ``what``: lower-case words joined by ``-``, saying what the run measured, never when;
- ``date``: ``YYYY-MM-DD``, or ``YYYY-MM-DDThhmmssZ`` where one day holds several runs.

A ``.json`` result is an object whose ``"run"`` key holds the block below; every other key is
the script's own data. Logs, stores and other raw files sit beside it under the same naming.

    "run": {"kind": "peers_tune",            # which README renderer draws it (readme.py)
            "device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cuda": "13.0",
            "date": "2026-11-26",            # the date in the file name
            "command": "python benchmarks/peers/peers.py --methods --tune 64"}

``driver`` and ``cuda`` are null on a machine without a GPU. ``command`` regenerates the
data (from the repository root, on ``device``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from workbench.core.write_policy import write_file  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
RUN_KEYS = ("kind", "device", "driver", "cuda", "date", "command")
#: Words a name may hold: lower case, digits, joined by "-" (no session numbers, no spaces).
_WORDS = r"[a-z0-9]+(?:-[a-z0-9]+)*"
DATE = r"\d{4}-\d{2}-\d{2}(?:T\d{6}Z)?"
NAME = re.compile(rf"(?P<what>{_WORDS})-(?P<date>{DATE})\.(?P<ext>[a-z0-9]+)")
#: Files under results/ that predate the schema and are kept where they are, because other
#: work reads them at that path today (moved under the schema later).
LEGACY = frozenset({"lab_latency.json"})


def result_path(area: str, device: str, what: str, date: str, ext: str = "json") -> Path:
    """Where a result of ``what`` measured on ``device`` on ``date`` goes."""
    path = RESULTS / area / device / f"{what}-{date}.{ext}"
    problems = path_problems(path)
    if problems:
        raise ValueError(f"{path}: {'; '.join(problems)}")
    return path


def run_block(kind: str, command: str, *, device: str, driver: str | None, cuda: str | None,
              date: str) -> dict[str, Any]:
    """The ``"run"`` block of a result file, in schema order."""
    return {"kind": kind, "device": device, "driver": driver, "cuda": cuda, "date": date,
            "command": command}


def path_problems(path: Path) -> list[str]:
    """What is wrong with a result file's location (empty when it follows the schema)."""
    rel = path.resolve().relative_to(RESULTS)
    if rel.as_posix() in LEGACY:
        return []
    parts = rel.parts
    if len(parts) != 3:
        return [f"expected <area>/<device>/<file>, got {rel.as_posix()}"]
    area, device, name = parts
    out = [f"folder {p!r} is not lower-case words joined by '-'"
           for p in (area, device) if not re.fullmatch(_WORDS, p)]
    if not NAME.fullmatch(name):
        out.append(f"file name {name!r} is not <what>-<YYYY-MM-DD>.<ext>")
    return out


def doc_problems(path: Path, doc: Any) -> list[str]:
    """What is wrong with a JSON result's contents (empty when it follows the schema)."""
    if path.resolve().relative_to(RESULTS).as_posix() in LEGACY:
        return []
    if not isinstance(doc, dict) or not isinstance(doc.get("run"), dict):
        return ['no top-level "run" object']
    run = doc["run"]
    out = [f'"run" lacks {k!r}' for k in RUN_KEYS if k not in run]
    out += [f'"run" has unknown key {k!r}' for k in run if k not in RUN_KEYS]
    for key in ("kind", "device", "date", "command"):
        if key in run and not (isinstance(run[key], str) and run[key]):
            out.append(f'"run".{key} must be a non-empty string')
    for key in ("driver", "cuda"):
        if run.get(key) is not None and not isinstance(run[key], str):
            out.append(f'"run".{key} must be a string or null')
    m = NAME.fullmatch(path.name)
    if m and run.get("date") != m["date"]:
        out.append(f'"run".date {run.get("date")!r} differs from the name\'s {m["date"]!r}')
    return out


def load_result(path: Path) -> dict[str, Any]:
    """A JSON result, checked against the schema (ValueError naming every problem)."""
    doc = json.loads(path.read_text())
    problems = path_problems(path) + doc_problems(path, doc)
    if problems:
        raise ValueError(f"{path}: {'; '.join(problems)}")
    return doc


def write_result(path: Path, run: dict[str, Any], data: dict[str, Any], *,
                 overwrite: bool = False) -> Path:
    """Write ``data`` with ``run`` as its first key, after checking both against the schema."""
    doc = {"run": run, **{k: v for k, v in data.items() if k != "run"}}
    problems = path_problems(path) + doc_problems(path, doc)
    if problems:
        raise ValueError(f"{path}: {'; '.join(problems)}")
    return write_file(RESULTS, path, json.dumps(doc, indent=2) + "\n", overwrite=overwrite,
                      make_folders=True)


def result_files() -> list[Path]:
    """Every file under results/, sorted by path."""
    return sorted(p for p in RESULTS.rglob("*") if p.is_file())

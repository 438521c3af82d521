"""newest_recording picks by each recording's date read from its head, as a whole parse
would: the same file over dates, name ties, truncated, non-JSON and odd headers."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from workbench.api import newest_recording
from workbench.engine.recording import recording_date

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_kernels" / "silu_and_mul" / "recordings" / "h100_sxm-2026-11-22.json"


def _parsed_date(path: Path) -> str:
    """The reference: the date a whole parse of the file gives ("" when it is not JSON)."""
    try:
        with path.open(encoding="utf-8") as fh:
            return str(json.load(fh).get("date", ""))
    except (OSError, ValueError):
        return ""


def _reference_newest(folder: Path) -> Path:
    files = sorted((folder / "recordings").glob("*.json"))
    return max(files, key=lambda p: (_parsed_date(p), p.name))


def _recording(date: object, **before: object) -> str:
    head = {"format": 1, "kernel": "k", **before, "device": {"name": "x", "date": "9999"}}
    trials = ",\n".join(json.dumps({"config": {"B": b}, "date": "9999"}) for b in range(50))
    return json.dumps({**head, "date": date}, indent=1)[:-2] + f',\n "trials": [\n{trials}\n ]\n}}\n'


HEADS: dict[str, str] = {
    "a-newest.json": _recording("2026-12-01"),
    "b-older.json": _recording("2026-11-01"),
    "c-same-date.json": _recording("2026-12-01"),
    "d-truncated.json": _recording("2027-01-01")[:-40],
    "e-not-json.json": "this is not a recording}",
    "f-late-date.json": _recording("2027-02-01", pad="x" * 70_000),
    "g-no-date.json": json.dumps({"format": 1, "kernel": "k"}),
    "h-number-date.json": _recording(20270301),
    "i-compact.json": json.dumps({"kernel": "k", "date": "2027-04-01", "trials": []},
                                 separators=(",", ":")),
    "j-latin1.json": _recording("2027-05-01", kernel="caf\u00e9"),
    "k-broken-middle.json": _recording("2027-06-01").replace('"trials": [', '"trials": [}', 1),
}


@pytest.mark.parametrize("name", sorted(HEADS))
def test_a_recordings_date_is_what_a_whole_parse_gives(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    data = HEADS[name].encode("latin-1" if name.startswith("j-") else "utf-8")
    path.write_bytes(data)
    if name.startswith("k-"):  # broken between head and end: the head's date (documented)
        assert _parsed_date(path) == "" and recording_date(path) == "2027-06-01"
    else:
        assert recording_date(path) == _parsed_date(path)


def test_the_newest_is_the_whole_parse_choice_as_files_come_and_go(tmp_path: Path) -> None:
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    shutil.copyfile(SAMPLE, recordings / SAMPLE.name)
    assert newest_recording(tmp_path) == recordings / SAMPLE.name  # the one file, unread
    assert recording_date(recordings / SAMPLE.name) == _parsed_date(SAMPLE) == "2026-11-22"
    (recordings / SAMPLE.name).unlink()  # 8.6 MB: the reference would parse it each time
    chosen = []
    for name in sorted(HEADS):  # each file joins the folder; the choice follows the dates
        if name.startswith("k-"):
            continue
        data = HEADS[name].encode("latin-1" if name.startswith("j-") else "utf-8")
        (recordings / name).write_bytes(data)
        assert newest_recording(tmp_path) == _reference_newest(tmp_path), name
        chosen.append(newest_recording(tmp_path).name)
    assert len(set(chosen)) >= 4  # the dates moved the choice, ties went to the name

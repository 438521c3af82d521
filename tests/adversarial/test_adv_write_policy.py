"""The one write policy: symlinks, escapes, overwrites and races are refused, writes are atomic."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from workbench.core.errors import WriteRefusedError
from workbench.core.write_policy import check_target, ensure_folder, write_file


def test_plain_write_and_no_silent_overwrite(tmp_path: Path) -> None:
    out = write_file(tmp_path, "a.txt", "one")
    assert out.read_text() == "one"
    with pytest.raises(WriteRefusedError, match="exists") as info:
        write_file(tmp_path, "a.txt", "two")
    assert info.value.path.endswith("a.txt") and out.read_text() == "one"
    write_file(tmp_path, "a.txt", "two", overwrite=True)
    assert out.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]  # no temporary left behind


def test_symlinked_target_is_refused_and_outside_file_untouched(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside.rc"
    root.mkdir()
    outside.write_text("safe")
    (root / "baseline.cu").symlink_to(outside)
    for overwrite in (False, True):
        with pytest.raises(WriteRefusedError, match="symlink"):
            write_file(root, "baseline.cu", "planted", overwrite=overwrite)
    assert outside.read_text() == "safe"


def test_dangling_symlink_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kernel.toml").symlink_to(tmp_path / "nowhere" / "x")
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_file(tmp_path, "kernel.toml", "x", overwrite=True)
    assert not (tmp_path / "nowhere").exists()


def test_symlinked_folder_on_the_way_is_refused(tmp_path: Path) -> None:
    root, away = tmp_path / "root", tmp_path / "away"
    root.mkdir()
    away.mkdir()
    (root / "k").symlink_to(away, target_is_directory=True)
    with pytest.raises(WriteRefusedError, match="symlink"):
        write_file(root, "k/baseline.cu", "x")
    with pytest.raises(WriteRefusedError, match="symlink"):
        ensure_folder(root, "k/sub")
    assert list(away.iterdir()) == []


@pytest.mark.parametrize("target", ["../escape.txt", "a/../../escape.txt", "/etc/passwd-wb"])
def test_escapes_are_refused(tmp_path: Path, target: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(WriteRefusedError):
        write_file(root, target, "x")
    assert not (tmp_path / "escape.txt").exists()


def test_folder_target_and_nul_are_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(WriteRefusedError, match="folder"):
        check_target(tmp_path, "d", overwrite=True)
    with pytest.raises(WriteRefusedError, match="NUL"):
        write_file(tmp_path, "a\x00b", "x")


def test_make_folders_and_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(WriteRefusedError, match="does not exist"):
        write_file(tmp_path, "new/a.txt", "x")
    assert write_file(tmp_path, "new/deeper/a.txt", b"\x00\x01", make_folders=True).read_bytes() \
        == b"\x00\x01"


def test_concurrent_writers_one_wins_none_clobbers(tmp_path: Path) -> None:
    results: list[str] = []

    def writer(i: int) -> None:
        try:
            write_file(tmp_path, "same.ipynb", f"writer {i}")
            results.append(f"wrote {i}")
        except WriteRefusedError:
            results.append("refused")

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wrote = [r for r in results if r.startswith("wrote")]
    assert len(wrote) == 1 and results.count("refused") == 9
    assert (tmp_path / "same.ipynb").read_text() == f"writer {wrote[0].split()[1]}"
    assert sorted(os.listdir(tmp_path)) == ["same.ipynb"]


def test_long_name_is_a_clean_refusal(tmp_path: Path) -> None:
    with pytest.raises(WriteRefusedError):
        write_file(tmp_path, "x" * 300, "x")


def test_make_folders_with_target_directly_in_root(tmp_path: Path) -> None:
    assert write_file(tmp_path, "top.txt", "x", make_folders=True).read_text() == "x"
    assert ensure_folder(tmp_path, ".") == tmp_path.resolve()

"""The test run's shared compiles (tests/helpers_session_cache.py): one make a key, nothing
kept from a failed make, an included header keyed by its text; and run_on_host compiles a
program once a run but runs it every time."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers_session_cache import COMPILES_ENV, flags_key, shared_output
from helpers_templater import run_on_host


@pytest.fixture
def compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "compiles"
    monkeypatch.setenv(COMPILES_ENV, str(root))
    return root


def test_a_key_is_made_once_and_another_key_again(compiles: Path) -> None:
    made: list[str] = []

    def make(text: str) -> Callable[[Path], None]:
        def write(path: Path) -> None:
            made.append(text)
            path.write_text(text)
        return write

    first = shared_output("t", ["a"], make("one"))
    again = shared_output("t", ["a"], make("two"))
    other = shared_output("t", ["b"], make("three"))
    assert first == again and first.read_text() == "one"
    assert other != first and other.read_text() == "three"
    assert made == ["one", "three"]
    assert first.parent == compiles


def test_a_failed_make_keeps_nothing_and_the_next_asker_makes_again(compiles: Path) -> None:
    def fail(path: Path) -> None:
        path.write_text("half")
        raise subprocess.CalledProcessError(1, ["cc"])

    with pytest.raises(subprocess.CalledProcessError):
        shared_output("t", ["k"], fail)
    assert [p.name for p in compiles.iterdir() if not p.name.endswith(".lock")] == []
    assert shared_output("t", ["k"], lambda p: p.write_text("whole")).read_text() == "whole"


def test_an_included_file_is_keyed_by_its_text_not_its_path(tmp_path: Path) -> None:
    one, two, three = (tmp_path / n for n in ("1.h", "2.h", "3.h"))
    one.write_text("int a;")
    two.write_text("int a;")
    three.write_text("int b;")
    assert flags_key(["-include", str(one)]) == flags_key(["-include", str(two)])
    assert flags_key(["-include", str(one)]) != flags_key(["-include", str(three)])
    assert flags_key(["-O1", "-w"]) == ["-O1", "-w"]


def test_run_on_host_compiles_a_program_once_and_runs_it_each_time(
        compiles: Path, tmp_path: Path) -> None:
    """The program counts its runs in a file: two calls print 1 then 2 from one compile."""
    counter = tmp_path / "runs.txt"
    program = (
        "#include <cstdio>\n"
        "int main() {\n"
        f'  FILE* f = std::fopen("{counter}", "r"); int n = 0;\n'
        "  if (f) { if (std::fscanf(f, \"%d\", &n) != 1) n = 0; std::fclose(f); }\n"
        f'  f = std::fopen("{counter}", "w"); std::fprintf(f, "%d", n + 1); std::fclose(f);\n'
        '  std::printf("%d\\n", n + 1);\n'
        "  return 0;\n"
        "}\n")
    for work in ("a", "b", "c"):
        (tmp_path / work).mkdir()
    assert run_on_host(tmp_path / "a", "p", program) == "1\n"
    assert run_on_host(tmp_path / "b", "p", program) == "2\n"
    assert len([p for p in compiles.iterdir() if p.name.startswith("gxx-exe-")
                and not p.name.endswith(".lock")]) == 1
    with pytest.raises(subprocess.CalledProcessError):
        run_on_host(tmp_path / "c", "bad", program.replace("return 0;", "return undefined;"))

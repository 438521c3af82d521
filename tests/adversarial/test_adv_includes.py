"""Template sources are data: what ``#include`` and friends may read (pure checks)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.engine.source_policy import SYSTEM_HEADERS, check_source

ALLOWED = [
    "#include <cuda_fp16.h>", "#include <cuda_bf16.h>", "#include <cuda_fp8.h>",
    "#include <cstdint>", "#include <cuda/std/limits>", "#include <cub/block/block_reduce.cuh>",
    "#include <cooperative_groups.h>", "#include <cooperative_groups/reduce.h>",
    "#include <mma.h>", '#include "cuda_fp16.h"', "  #  include <stdint.h>",
    "#include <type_traits>", "#include <cuda_pipeline.h>", "_Pragma(\"unroll\")",
    "_Pragma(\"unroll 4\")", "_Pragma(\"nounroll\")", "#pragma unroll 4", "#pragma unroll",
    "// #include </etc/passwd> in a line comment is not a directive",
    'const char* s = "#include </etc/passwd>";', "#define INCLUDE_ME 1",
    "#line 12 \"template.cu\"", "#if defined(__CUDA_ARCH__)\n#endif",
]

# (source, line of the refusal, words the reason must contain)
REFUSED = [
    ('#include "/dev/zero"', 1, "absolute path"),
    ('#include "/etc/passwd"', 1, "absolute path"),
    ("#include </etc/passwd>", 1, "allow-list"),
    ("#include </dev/zero>", 1, "allow-list"),
    ('#include "../secret.h"', 1, "`..`"),
    ('#include "a/../../secret.h"', 1, "`..`"),
    ("#include <../../etc/passwd>", 1, "allow-list"),
    ("#include <cuda/../../../etc/passwd>", 1, "allow-list"),
    ('#include "~/.ssh/id_rsa"', 1, "not a plain relative file name"),
    ('#include "C:\\\\secrets.h"', 1, "absolute path"),
    ("#include <stdio.h\x00>", 1, "allow-list"),
    ("#include <sys/socket.h>", 1, "allow-list"),
    ("#include <fstream>", 1, "allow-list"),
    ("#include <unistd.h>", 1, "allow-list"),
    ("#include <bits/stdc++.h>", 1, "allow-list"),
    ('%:include "/etc/passwd"', 1, "absolute path"),
    ('%: include "/etc/passwd"', 1, "absolute path"),
    ('??=include "/etc/passwd"', 1, "absolute path"),
    ('# /* comment */ include "/etc/passwd"', 1, "absolute path"),
    ('/* c */ #include "/etc/passwd"', 1, "absolute path"),
    ('#inc\\\nlude "/etc/passwd"', 1, "absolute path"),
    ('#include \\\n"/etc/passwd"', 1, "absolute path"),
    ('#\\\ninclude "/etc/passwd"', 1, "absolute path"),
    ('int a;\n/*\n*/ #include "/etc/passwd"', 3, "absolute path"),
    ('/* start\n#include "/etc/passwd"\nend */', 2, "absolute path"),
    ('#define F "/etc/passwd"\n#include F', 2, "computed"),
    ("#define H </etc/passwd>\n#include H", 2, "computed"),
    ('#define CAT(a, b) a##b\n#include CAT(<std, io.h>)', 2, "computed"),
    ("#include", 1, "computed"),
    ('#include "/etc/passwd" extra', 1, "computed"),
    ("#include_next <cuda.h>", 1, "#include_next"),
    ("#import <cuda.h>", 1, "#import"),
    ('#import "/etc/passwd"', 1, "#import"),
    ('#embed "/etc/passwd"', 1, "#embed"),
    ("#embed </dev/zero> limit(10)", 1, "#embed"),
    ('#pragma GCC dependency "/etc/passwd"', 1, "#pragma"),
    ("#pragma GCC system_header", 1, "#pragma"),
    ('_Pragma("GCC dependency \\"/etc/passwd\\"")', 1, "_Pragma"),
    ('_Pragma("message(\\"x\\")")', 1, "_Pragma"),
    ("_Pragma(X)", 1, "_Pragma"),
    ('#if __has_include("/etc/passwd")\n#endif', 1, "__has_include"),
    ("#if __has_include(</etc/shadow>)\n#endif", 1, "__has_include"),
    ("int x = __has_include_next(<a.h>);", 1, "__has_include"),
    ('asm(".incbin \\"/etc/passwd\\"");', 1, ".incbin"),
    ('__asm__ volatile (".incbin \\"/etc/passwd\\"");', 1, ".incbin"),
    ('#define A 1\n#line 1 "template.cu"\nint x;\n#include "/dev/zero"', 2, "absolute path"),
    ('int x;\n\n\n\n#include "/proc/self/environ"', 5, "absolute path"),
    ('#include "/proc/self/fd/0"', 1, "absolute path"),
    ('  #  include "/dev/urandom"', 1, "absolute path"),
    ('#include "nonexistent.cuh"', 1, "no kernel folder"),
]


@pytest.mark.parametrize("source", ALLOWED)
def test_allowed_sources_pass(source: str) -> None:
    check = check_source(source)
    assert check.ok, check.summary()


@pytest.mark.parametrize(("source", "line", "reason"), REFUSED)
def test_refused_with_the_line_named(source: str, line: int, reason: str) -> None:
    check = check_source(source)
    assert not check.ok
    first = check.refusals[0]
    assert first.line == line, check.summary()
    assert reason in first.reason, check.summary()
    assert "refused" in str(first)


@pytest.mark.parametrize("header", sorted(SYSTEM_HEADERS)[:12])
def test_every_allow_listed_header_passes_in_both_forms(header: str) -> None:
    assert check_source(f"#include <{header}>").ok
    assert check_source(f'#include "{header}"').ok


def test_local_header_inside_the_folder_is_allowed_and_copied(tmp_path: Path) -> None:
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "vec.cuh").write_text("#include <cuda_fp16.h>\n#define V 4\n")
    check = check_source('#include "common/vec.cuh"', tmp_path)
    assert check.ok and dict(check.local_files) == {
        "common/vec.cuh": (tmp_path / "common" / "vec.cuh").resolve()}


def test_local_header_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "evil.cuh").write_text('int a;\n#include "/etc/passwd"\n')
    check = check_source('#include "evil.cuh"', tmp_path)
    assert [(r.file, r.line) for r in check.refusals] == [("evil.cuh", 2)]


def test_symlink_out_of_the_folder_is_refused(tmp_path: Path, planted: tuple[Path, str]) -> None:
    folder = tmp_path / "k"
    folder.mkdir()
    os.symlink(planted[0], folder / "helper.cuh")
    check = check_source('#include "helper.cuh"', folder)
    assert not check.ok and "symlink that leaves the kernel folder" in check.summary()


def test_symlinked_directory_out_of_the_folder_is_refused(tmp_path: Path,
                                                          planted: tuple[Path, str]) -> None:
    folder = tmp_path / "k"
    folder.mkdir()
    os.symlink(planted[0].parent, folder / "inc")
    check = check_source(f'#include "inc/{planted[0].name}"', folder)
    assert not check.ok and "symlink" in check.summary()


def test_quoted_include_without_a_folder_is_refused() -> None:
    check = check_source('#include "helper.cuh"')
    assert not check.ok and "no kernel folder" in check.summary()


def test_non_utf8_local_header_is_refused(tmp_path: Path) -> None:
    (tmp_path / "bad.cuh").write_bytes(b"int \xff\xfe;\n")
    check = check_source('#include "bad.cuh"', tmp_path)
    assert not check.ok and "UTF-8" in check.summary()


def test_self_including_header_terminates(tmp_path: Path) -> None:
    (tmp_path / "loop.cuh").write_text('#include "loop.cuh"\n')
    assert check_source('#include "loop.cuh"', tmp_path).ok  # included once, checked once


def test_header_chain_deeper_than_the_limit_is_refused(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"h{i}.cuh").write_text(f'#include "h{i + 1}.cuh"\n')
    (tmp_path / "h12.cuh").write_text("int x;\n")
    check = check_source('#include "h0.cuh"', tmp_path)
    assert not check.ok and "nested deeper" in check.summary()


def test_many_refusals_are_all_listed_and_summarised() -> None:
    source = "\n".join(f'#include "/etc/file{i}"' for i in range(9))
    check = check_source(source)
    assert len(check.refusals) == 9 and "(and 4 more)" in check.summary()


def test_huge_source_is_checked_quickly() -> None:
    source = "int x;\n" * 200_000 + '#include "/dev/zero"\n'
    check = check_source(source)
    assert [r.line for r in check.refusals] == [200_001]


def test_local_header_in_folder_passes_then_missing_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "ok.cuh").write_text("int ok;\n")
    check = check_source('#include "ok.cuh"\n#include "gone.cuh"', tmp_path)
    assert [(r.line, r.reason) for r in check.refusals] == [
        (2, "no file gone.cuh in the kernel folder")]

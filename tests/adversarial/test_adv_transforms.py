"""Illegal transforms through the public entry points (issue 16's bad inputs): a kernel
whose pointers may alias, one with a non-unit-stride access and column walks that cannot be
split go through ``workbench init`` → fill-ins → ``workbench propose --write``; the
transform is not applied (neither in the printed template nor in what --write saved) and
``propose`` prints the reason with the line."""

from __future__ import annotations

import contextlib
import io
import re
import tomllib
from pathlib import Path

import pytest

from workbench.cli import main

pytestmark = pytest.mark.timeout(120)

SCALE = """// y = 2 x, one element per thread
extern "C" __global__ void scale(float* {restrict}y, const float* {restrict}x, int n) {{
  int i = blockIdx.x * 256 + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[{index}];
}}
"""

WALK = """// column sums, one thread per column walking down the rows
extern "C" __global__ void walk(float* __restrict__ out, int* __restrict__ seen,
                                const float* __restrict__ x, int rows, int cols) {{
  int c = blockIdx.x * 256 + threadIdx.x;
  if (c >= cols) return;
{before}  float s = 0.0f;
  for (int r = 0; r < rows; ++r) s += {summand};
  out[c] = s;
{after}}}
"""


def _cli(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(argv), stdout=out)
    return code, out.getvalue() + err.getvalue()


def _folder(tmp_path: Path, name: str, source: str, grid: str, sizes: dict[str, str],
            shapes: dict[str, str]) -> Path:
    """init on a bare .cu, then only the fill-ins a user types (sizes, buffer extents)."""
    cu = tmp_path / f"{name}.cu"
    cu.write_text(source)
    code, text = _cli("init", str(cu), "--grid", grid, "--block", "256")
    assert code == 0, text
    toml = tmp_path / name / "kernel.toml"
    body = toml.read_text()
    for shape, values in sizes.items():
        body = re.sub(rf"^{shape} = \{{.*\}}$", f"{shape} = {{ {values} }}", body, flags=re.M)
    for arg, dims in shapes.items():
        body = re.sub(rf'(name = "{arg}"\n(?:.*\n)*?)shape = \["FILL_IN"\]', rf"\g<1>shape = {dims}",
                      body)
    assert "FILL_IN" not in "\n".join(line.split("#")[0] for line in body.splitlines()), body
    toml.write_text(body)
    return tmp_path / name


def _propose_write(folder: Path, tmp_path: Path) -> tuple[str, dict[str, object], str]:
    code, text = _cli("propose", str(folder), "--write", "--store", str(tmp_path / "s.sqlite"))
    assert code == 0, text
    saved = tomllib.loads((folder / "kernel.toml").read_text())["template"]
    return text, saved["params"], (folder / "template.cu").read_text()


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("WORKBENCH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)


@pytest.mark.parametrize(("case", "restrict", "index", "x_shape", "reason"), [
    ("aliasing", "", "i", '["n"]', "VEC: not applied: `y` is written, is not __restrict__ "
                                   "and may alias x (line 4)"),
])
def test_vector_width_is_refused_through_propose_write(case: str, restrict: str, index: str,
                                                       x_shape: str, reason: str,
                                                       tmp_path: Path) -> None:
    folder = _folder(tmp_path, "scale", SCALE.format(restrict=restrict, index=index),
                     "ceil_div(n, 256)", {"small": "n = 1000", "large": "n = 65536"},
                     {"y": '["n"]', "x": x_shape})
    text, params, source = _propose_write(folder, tmp_path)
    assert reason in text, text
    assert "VEC" not in params and "VEC" not in source  # not applied, nothing half-done
    assert {"BLOCK_THREADS", "ITEMS_PER_THREAD"} <= set(params)  # the legal ones were


def test_a_strided_read_beside_a_non_restrict_store_vectorizes_one_element_threads(
        tmp_path: Path) -> None:
    """``y[i] = 2 x[2 i]`` with no ``__restrict__``, one element a thread: were y to alias x,
    thread i's store would race thread 2i's read in the kernel as written already (threads
    run in no order), so the lanes of a vector (threads as written) may store after their
    reads; VEC applies (session 29, for pixel_shuffle_r2's gather), at any n (the thread
    whose vector would cross n ends one by one: a scalar tail, no ``n % VEC == 0``). Inside
    a loop a thread's own order would change: that stays refused (vector.py)."""
    folder = _folder(tmp_path, "scale", SCALE.format(restrict="", index="2 * i"),
                     "ceil_div(n, 256)", {"small": "n = 1000", "large": "n = 65536"},
                     {"y": '["n"]', "x": '["2 * n"]'})
    text, params, source = _propose_write(folder, tmp_path)
    assert "VEC: applied: region over i vectorized" in text, text
    assert "VEC" in params and "reinterpret_cast<WbVec<float, VEC>*>(&y[i])" in source
    assert "n % VEC == 0" not in text, text
    assert "the vector would cross n: one by one" in source
    assert "wrote template.cu" in text


@pytest.mark.parametrize(("case", "before", "summand", "reason"), [
    ("writes-before", "  seen[c] = rows;\n", "x[(long long)r * cols + c]",
     "WALK_SPLIT: not applied: `seen[c] = rows` writes memory before the walk (each lane of "
     "a group would write it) (line 6)"),
    ("reads-its-sum", "", "0.5f * s + x[(long long)r * cols + c]",
     "WALK_SPLIT: not applied: the summand reads `s` (not a plain sum)"),
    ("non-unit-walk", "", "x[(long long)r * cols + c]", "WALK_SPLIT: not applied: the walk "
     "is not `for (int r = A; r < B; ++r)`"),
])
def test_a_walk_split_is_refused_through_propose_write(case: str, before: str, summand: str,
                                                       reason: str, tmp_path: Path) -> None:
    after = "" if before else "  seen[c] = rows;\n"  # after the walk: the first lane's
    source = WALK.format(before=before, summand=summand, after=after)
    if case == "non-unit-walk":
        source = source.replace("++r)", "r += 2)")
    folder = _folder(tmp_path, "walk", source, "ceil_div(cols, 256)",
                     {"small": "rows = 7, cols = 1000", "large": "rows = 4096, cols = 16384"},
                     {"out": '["cols"]', "seen": '["cols"]', "x": '["rows", "cols"]'})
    text, params, template = _propose_write(folder, tmp_path)
    assert reason in text, text
    assert "WALK_SPLIT" not in params and "__shfl_xor_sync" not in template
    assert "BLOCK_THREADS" in params


def test_a_legal_walk_is_split_through_propose_write(tmp_path: Path) -> None:
    """The control: the same kernel with nothing in the way gets WALK_SPLIT."""
    folder = _folder(tmp_path, "walk", WALK.format(before="", summand="x[(long long)r * cols + c]",
                                               after="  seen[c] = rows;\n"),
                     "ceil_div(cols, 256)",
                     {"small": "rows = 7, cols = 1000", "large": "rows = 4096, cols = 16384"},
                     {"out": '["cols"]', "seen": '["cols"]', "x": '["rows", "cols"]'})
    text, params, template = _propose_write(folder, tmp_path)
    assert "WALK_SPLIT: applied" in text and "WALK_SPLIT" in params
    assert "__shfl_xor_sync" in template and "if (threadIdx.x % WALK_SPLIT == 0)" in template

"""Session 33: take_rows_i64 (held-back set 25, released), a row gather over a flat index
split by a run-time extent, and two respellings (tests/spellings_s33_take/).

- The flat region ``T t = (size_t)blockIdx.x * blockDim.x + threadIdx.x; if (t >= n) return;``
  was not read as one (vector_regions.x_indices knew a literal block only): VEC was "not
  applied: no one-element-per-thread region". On a 1-D block ``blockDim.x`` is the block
  rule itself, so the region starts its items at ``blockIdx.x * B``; it is read so only
  where it has a row-group read (vector.vector_flat: read so everywhere, it displaced other
  families' knobs in five templater tests). A cast the author wrote on the index
  (``(size_t)``) stays on the vectorized start (no 32-bit wrap).
- The gather ``src[(size_t)idx[i] * D + c]`` (``i = t / D``, ``c = t - i * D``) then loaded
  element by element in each lane. vector_rowgroup reads it as a row group: where ``D %
  VEC == 0`` the vector's lanes lie in one row, every lane reads the same ``idx[i]`` and
  its own column, so lane 0 loads the VEC elements as one vector (a run-time choice: the
  divisor a multiple of VEC and the address a whole vector's; otherwise each lane reads its
  own element as written, D odd included). The range test (``r in range ? .. : 0``) reads
  only row values, so lane 0 loads exactly where every lane reads. Every item's lanes run
  before any item's stores (ITEMS_PER_THREAD's loads in flight together).

Lifts BLOCK_THREADS, VEC, ITEMS_PER_THREAD, MIN_BLOCKS_PER_SM (the expert's THREADS, VEC,
ITEMS; its MAP 1, whole rows a block, is not lifted). Respellings: gather_rows_i32 (int32
ids, an int index, ``/`` and ``%``, an if into a local), gather_rows_h16 (``__half`` rows,
an unsigned index, ``blockDim.x * blockIdx.x``, an unsigned range test, 16-byte groups at
VEC 8), embed_lookup (the division inside the index of a helper's read, no range test, a
guarded body); gather_rows_pos reads the column as a value too (each lane's remainder).
Host (g++): each bit for bit against the kernel as written at the default, mixes and the
ends, at the check shape (D a multiple of four, of eight for the halves) and at D odd, 6
and 12 (the fallbacks where D is no multiple of VEC).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import held_back_unseen25
import pytest
from held_back_harness import same_as_written
from helpers_templater import host_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s33_take"
SET = held_back_unseen25.SET
KNOBS = frozenset({"BLOCK_THREADS", "VEC", "ITEMS_PER_THREAD", "MIN_BLOCKS_PER_SM"})
#: where the flat index is split by one row width every thread shares (``t % D`` with D an
#: argument, not a value of the element's own statements), session 35's ITEM_ROWS shapes each
#: item as VEC columns by ITEM_ROWS rows too (vector_unit_rows); take_rows_i64 and the halves
#: split by a value they compute first, so they keep the four knobs
ITEM_ROWS_TOO = frozenset({"gather_rows_i32", "gather_rows_pos", "embed_lookup"})

#: folder -> the check shape's extent name (D) and the mixes checked bit for bit
FOLDERS: dict[str, tuple[Path, str, list[dict[str, int]]]] = {
    "take_rows_i64": (SET.root / "take_rows_i64", "D", [
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},  # the expert's pick
        {"BLOCK_THREADS": 160, "VEC": 2, "ITEMS_PER_THREAD": 8, "MIN_BLOCKS_PER_SM": 2},
        {"BLOCK_THREADS": 32, "VEC": 4, "ITEMS_PER_THREAD": 8}]),
    "gather_rows_i32": (SPELLINGS / "gather_rows_i32", "D", [
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
        {"BLOCK_THREADS": 160, "VEC": 2, "ITEMS_PER_THREAD": 4},
        {"BLOCK_THREADS": 64, "VEC": 2, "ITEMS_PER_THREAD": 2, "ITEM_ROWS": 2}]),
    # not a respelling: the column read as a value too (each lane's own remainder)
    "gather_rows_pos": (SPELLINGS / "gather_rows_pos", "D", [
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
        {"BLOCK_THREADS": 32, "VEC": 2, "ITEMS_PER_THREAD": 1},
        {"BLOCK_THREADS": 32, "VEC": 2, "ITEMS_PER_THREAD": 1, "ITEM_ROWS": 2}]),
    "gather_rows_h16": (SPELLINGS / "gather_rows_h16", "D", [
        {"BLOCK_THREADS": 64, "VEC": 8, "ITEMS_PER_THREAD": 2},  # 16-byte groups
        {"BLOCK_THREADS": 96, "VEC": 4, "ITEMS_PER_THREAD": 4}]),
    "embed_lookup": (SPELLINGS / "embed_lookup", "dim", [
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 2},
        {"BLOCK_THREADS": 224, "VEC": 2, "ITEMS_PER_THREAD": 8},
        {"BLOCK_THREADS": 64, "VEC": 4, "ITEMS_PER_THREAD": 1, "ITEM_ROWS": 2}]),
}


#: the check shape's row count of the ITEM_ROWS_TOO folders
ROWS_KEY = {"gather_rows_i32": "nidx", "gather_rows_pos": "nidx", "embed_lookup": "tokens"}


def _folder(name: str, root: Path, extent: int | None = None,
            rows: int | None = None) -> KernelFolder:
    """The folder, its check shape's extent set to ``extent`` and its row count to ``rows``
    (a copy) where given."""
    path, key, _mixes = FOLDERS[name]
    if extent is None and rows is None:
        return load_kernel_folder(path)
    copy = root / name
    shutil.copytree(path, copy, ignore=shutil.ignore_patterns("expert"))
    toml = copy / "kernel.toml"
    text = toml.read_text()
    for k, value in ((key, extent), (ROWS_KEY.get(name, ""), rows)):
        if value is None:
            continue
        small = re.compile(r"^(small = \{.*\b" + k + r" = )\d+", re.M)
        text, hits = small.subn(lambda m, v=value: f"{m.group(1)}{v}", text)
        assert hits == 1, (name, k)
    toml.write_text(text)
    return load_kernel_folder(copy)


@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_row_gather_lifts_vec_with_row_group_loads(name: str) -> None:
    lifted = offline_template(_folder(name, Path())).lifted
    knobs = KNOBS | {"ITEM_ROWS"} if name in ITEM_ROWS_TOO else KNOBS
    assert {p.name for p in lifted.params} == knobs, lifted.notes
    assert "wb_row_lane<" in lifted.source
    # every item's lanes (their loads) before any item's store
    assert lifted.source.rindex("wb_row_lane<") < lifted.source.index("*reinterpret_cast<WbVec<")
    assert any(n.startswith("VEC: applied: region over") for n in lifted.notes)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("extent", [None, 37, 6, 12])
@pytest.mark.parametrize("name", sorted(FOLDERS))
def test_the_lift_computes_as_written(name: str, extent: int | None, tmp_path: Path,
                                      host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """At the check shape (the extent a multiple of four, of eight for the halves: the
    row-group loads), at an odd extent (every lane its own element), at 6 (VEC 2 in
    groups, VEC 4 element-wise) and at 12 (VEC 4 in groups, VEC 8 element-wise)."""
    kf = _folder(name, tmp_path / "folder", extent)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space, default = template.space(env), template.default_config()
    # a mix whose VEC passes the extent (VEC 8 at 6) is outside the space there: D >= VEC
    mixes = [m for m in FOLDERS[name][2] if space.rejection({**default, **m}) is None]
    # (ITEM_ROWS > 1 needs whole row groups: test_item_rows_computes_as_written)
    configs = host_configs(template, env, mixes)
    assert len(configs) >= 3
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("name", sorted(ITEM_ROWS_TOO))
def test_item_rows_computes_as_written(name: str, tmp_path: Path,
                                       host_flags: tuple[str, ...]) -> None:  # noqa: F811
    """ITEM_ROWS > 1 needs a row count that is a multiple of it: the check shape's 37 / 29
    rows leave it at 1, so 36 rows (and D a multiple of four) check its mixes and ends."""
    kf = _folder(name, tmp_path / "folder", 12, rows=36)
    template = offline_template(kf).template
    env = kf.env(kf.check_shape, "fp32")
    space, default = template.space(env), template.default_config()
    mixes = [m for m in FOLDERS[name][2] if "ITEM_ROWS" in m]
    assert mixes and all(space.rejection({**default, **m}) is None for m in mixes)
    configs = host_configs(template, env, mixes)
    assert any(c["ITEM_ROWS"] > 1 for c in configs)
    assert same_as_written(kf, template, configs, SET.host_source, tmp_path / "run",
                           host_flags) == len(configs)


def _lift(source: str) -> tuple[set[str], str, tuple[str, ...]]:
    lifted = lift_kernel(source, entry="k", grid=["ceil_div(n * d, 256)"], block=["256"],
                         scalars={"n": "n", "d": "d", "m": "m"})
    return {p.name for p in lifted.params}, lifted.source, lifted.notes


def test_a_read_at_another_column_is_loaded_element_by_element() -> None:
    """``src[r * d + c + 1]``: still one step a lane, but lane 0's address is a whole vector's
    only by chance: the run-time test decides (it loads where aligned)."""
    src = """extern "C" __global__ void k(float* out, const float* src, const int* ids, int d,
                                  int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n * d) return;
  int r = ids[t / d];
  out[t] = src[r * d + t % d + 1];
}
"""
    knobs, text, _notes = _lift(src)
    assert "VEC" in knobs and "wb_row_lane<float, VEC>(&src[" in text


def test_a_read_whose_row_moves_within_the_vector_is_not_grouped() -> None:
    """``src[t % d * m + r]``: the column scaled, not one step a lane: no row group."""
    src = """extern "C" __global__ void k(float* out, const float* src, const int* ids, int d,
                                  int n, int m) {
  int t = blockIdx.x * 256 + threadIdx.x;
  if (t >= n * d) return;
  int r = ids[t / d];
  out[t] = src[(t % d) * m + r];
}
"""
    knobs, text, _notes = _lift(src)
    assert "VEC" in knobs and "wb_row_lane" not in text


def test_a_test_that_reads_the_column_keeps_lanes_apart() -> None:
    """``c < m ? src[..] : 0``: the test differs between lanes, so lane 0 cannot load for
    them: each lane reads its own element."""
    src = """extern "C" __global__ void k(float* out, const float* src, const int* ids, int d,
                                  int n, int m) {
  int t = blockIdx.x * 256 + threadIdx.x;
  if (t >= n * d) return;
  int c = t % d;
  out[t] = c < m ? src[ids[t / d] * d + c] : 0.0f;
}
"""
    knobs, text, _notes = _lift(src)
    assert "VEC" in knobs and "wb_row_lane" not in text


def test_blockdim_spelling_is_vectorized_only_for_its_row_groups() -> None:
    """``blockIdx.x * blockDim.x`` is read as the flat region only where it gains the
    row-group loads (elsewhere the families that lift that spelling today keep it)."""
    src = """extern "C" __global__ void k(float* out, const float* src, int d, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n * d) return;
  out[t] = src[t] * 2.0f;
}
"""
    knobs, _text, _notes = _lift(src)
    assert "VEC" not in knobs


def test_a_written_table_is_not_grouped() -> None:
    """A table the kernel writes (here through another index) may change between lanes."""
    src = """extern "C" __global__ void k(float* out, float* src, const int* ids, int d, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n * d) return;
  int r = ids[t / d];
  out[t] = src[r * d + t % d];
  src[0] = 1.0f;
}
"""
    _knobs, text, _notes = _lift(src)
    assert "wb_row_lane" not in text

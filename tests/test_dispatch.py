"""Dispatch tables: few configs for many shapes, exports, leave-one-out (pure tier, plus the
CLI on the committed recordings)."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.dispatch import (
    DispatchTable,
    UnsafeExportError,
    bucket_ratio,
    build_table,
    concrete,
    leave_one_out,
    median_loss_pct,
    neighbours,
    sweep_shapes,
    symbolic,
)
from workbench.core.errors import WorkbenchError
from workbench.core.records import Config

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parent.parent
A, B, C = Config(SPLIT=8, VEC=4), Config(SPLIT=1, VEC=16), Config(SPLIT=2, VEC=16)
SIZES = {"t1": {"tokens": 1, "d": 4096}, "t8": {"tokens": 8, "d": 4096},
         "t64": {"tokens": 64, "d": 4096}, "t512": {"tokens": 512, "d": 4096}}
# A wins at few tokens, B at many; C is within 2 % everywhere but never the fastest.
TIMES = {"t1": {A: 2.0, B: 3.0, C: 2.04}, "t8": {A: 2.1, B: 2.9, C: 2.14},
         "t64": {A: 4.0, B: 3.0, C: 3.05}, "t512": {A: 9.0, B: 6.0, C: 6.1}}


def test_one_config_covers_every_shape_within_the_tolerance() -> None:
    table = build_table("k", "bf16", TIMES, SIZES, tolerance_pct=3.0)
    assert table.configs == (C,)
    tight = build_table("k", "bf16", TIMES, SIZES, tolerance_pct=0.5)
    assert set(tight.configs) == {A, B}
    assert tight.lookup({"tokens": 2, "d": 4096}) == A       # nearest tuned shape: t1
    assert tight.lookup({"tokens": 4000, "d": 4096}) == B
    with pytest.raises(WorkbenchError, match="needs the sizes"):
        tight.lookup({"tokens": 3})


def test_leave_one_out_scores_each_shape_on_its_own_measurements() -> None:
    rows = leave_one_out("k", "bf16", TIMES, SIZES, tolerance_pct=0.5)
    by = {r.shape: r for r in rows}
    assert by["t1"].nearest == "t8" and by["t1"].config == A and by["t1"].loss_pct == 0.0
    assert by["t64"].nearest in ("t8", "t512")
    assert median_loss_pct(rows) is not None and median_loss_pct([]) is None


def test_neighbours_are_the_adjacent_tuned_shapes() -> None:
    near = neighbours(SIZES, list(SIZES))
    assert near == {"t1": ("t8",), "t8": ("t1", "t64"), "t64": ("t8", "t512"),
                    "t512": ("t64",)}


# F is fastest at t8 but falls off towards t64; R is 1 % slower at t8 and holds at t64.
F, R = Config(SPLIT=16, VEC=4), Config(SPLIT=4, VEC=8)
EDGE = {"t1": {F: 2.0, R: 2.02}, "t8": {F: 2.0, R: 2.02},
        "t64": {F: 4.4, R: 3.0, B: 3.0}, "t512": {B: 6.0, F: 9.0, R: 6.6}}


def test_a_shape_takes_the_config_that_holds_over_its_bucket() -> None:
    best = {s: min(v.values()) for s, v in EDGE.items()}
    assert bucket_ratio(EDGE, best, F, "t8", ("t1", "t64")) == pytest.approx((4.4 / 3.0) ** 0.5)
    assert bucket_ratio(EDGE, best, B, "t64", ("t8", "t512")) is None  # never timed at t8
    table = build_table("k", "bf16", EDGE, SIZES, tolerance_pct=3.0)
    by = {s: table.configs[i] for s, _, i in table.entries}
    assert by["t8"] == R and by["t1"] == R  # F is faster there, but not half-way to t64
    assert by["t512"] == B
    point = build_table("k", "bf16", EDGE, SIZES, tolerance_pct=0.5, interpolate=False)
    assert point.configs[dict((s, i) for s, _, i in point.entries)["t8"]] == F


def test_leave_one_out_never_learns_from_the_left_out_shape() -> None:
    # R was only found by t8's search (then measured elsewhere): t8's turn must do without
    found = {F: {"t1"}, R: {"t8"}, B: {"t64", "t512"}}
    rows = {r.shape: r for r in leave_one_out("k", "bf16", EDGE, SIZES, 3.0, found_at=found)}
    assert rows["t8"].config != R and rows["t8"].config in (F, B)
    assert rows["t1"].config == R  # t1's turn may use R: t8's search found it
    unfiltered = {r.shape: r for r in leave_one_out("k", "bf16", EDGE, SIZES, 3.0)}
    assert unfiltered["t8"].config == R


def test_specialisation_knobs_stay_symbolic() -> None:
    sizes = {"h1": {"hidden": 1024}, "h2": {"hidden": 4096}}
    times = {"h1": {Config(K=1024, V=8): 1.0, Config(K=0, V=8): 1.3},
             "h2": {Config(K=4096, V=8): 2.0, Config(K=0, V=8): 2.5}}
    table = build_table("k", "bf16", times, sizes, 3.0, {"K": "hidden"})
    assert table.configs == (Config(K="=hidden", V=8),)
    assert table.lookup({"hidden": 2888}) == Config(K=2888, V=8)
    assert symbolic(Config(K=0, V=8), {"hidden": 1024}, {"K": "hidden"}) == Config(K=0, V=8)
    assert concrete(Config(K="=hidden"), {"hidden": 7}) == Config(K=7)


def test_exports_define_the_same_mapping(tmp_path: Path) -> None:
    table = build_table("my_kernel", "bf16", TIMES, SIZES, tolerance_pct=0.5)
    namespace: dict[str, object] = {}
    exec(compile(table.to_python(), "dispatch.py", "exec"), namespace)  # our own output
    assert namespace["dispatch"](d=4096, tokens=2) == dict(A)  # type: ignore[operator]
    assert '"configs"' in table.to_json()
    header = table.to_cpp_header()
    assert "dispatch_my_kernel(long long d, long long tokens)" in header
    gxx = shutil.which("g++")
    if gxx is not None:
        src = tmp_path / "t.cpp"
        src.write_text(header + "\n#include <cstdio>\nint main() { auto& c = "
                       "dispatch_my_kernel(4096, 2); std::printf(\"%d %d\", c.SPLIT, c.VEC); }\n")
        subprocess.run([gxx, "-std=c++17", str(src), "-o", str(tmp_path / "t")], check=True)
        ran = subprocess.run([str(tmp_path / "t")], capture_output=True, text=True, check=True)
        assert ran.stdout == "8 4"


def test_sweep_shapes_parse_and_refuse() -> None:
    shapes = sweep_shapes("tokens=1..8:log2", {"tokens": 128, "d": 11008})
    assert list(shapes) == ["tokens1", "tokens2", "tokens4", "tokens8"]
    assert shapes["tokens4"] == {"tokens": 4, "d": 11008}
    assert list(sweep_shapes("d=64,96", {"tokens": 1, "d": 8})) == ["d64", "d96"]
    for bad in ("seq=1..8:log2", "tokens=8..1:log2", "tokens=1..8:lin", "tokens"):
        with pytest.raises(WorkbenchError, match="--sweep"):
            sweep_shapes(bad, {"tokens": 128, "d": 11008})


def test_cli_dispatch_on_the_recording_writes_the_exports_and_the_eval(tmp_path: Path) -> None:
    out = io.StringIO()
    code = main(["dispatch", str(ROOT / "sample_kernels" / "fused_add_rmsnorm"), "--shapes",
                 "small,odd,decode,prefill,large", "--dtype", "bf16", "--replay",
                 "--out", str(tmp_path), "--eval"], stdout=out)
    text = out.getvalue()
    assert code == 0, text
    assert "configs for 5 shapes" in text and "median loss:" in text
    assert "'HIDDEN_CONST': '=hidden'" in text
    assert (tmp_path / "fused_add_rmsnorm_bf16_dispatch.h").exists()


def _compile_and_import(table: DispatchTable, tmp_path: Path) -> None:
    """The table's header compiles with g++ and nvcc, and picks for every tuned shape the
    config the imported Python module picks; the JSON is strict JSON."""
    header, module = table.to_cpp_header(), table.to_python()
    json.loads(table.to_json(), parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    (tmp_path / "dispatch.h").write_text(header)
    spec = importlib.util.spec_from_file_location(f"wb_dispatch_{tmp_path.name}",
                                                  tmp_path / "dispatch.py")
    (tmp_path / "dispatch.py").write_text(module)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = table.kernel
    calls = []
    for _, values, index in table.entries:
        sizes = dict(zip(table.size_names, values, strict=True))
        assert mod.dispatch(**sizes) == dict(table.lookup(sizes))
        assert table.lookup(sizes) == concrete(table.configs[index], sizes)
        calls.append(f"  std::printf(\"%d\\n\", (int)(&dispatch_{k}("
                     + ", ".join(f"{v}LL" for v in values) + f") - {k}_configs));")
    main_src = ("#include \"dispatch.h\"\n#include \"dispatch.h\"\n#include <cstdio>\n"
                "int main() {\n" + "\n".join(calls) + "\n}\n")
    (tmp_path / "main.cpp").write_text(main_src)
    (tmp_path / "main.cu").write_text(main_src)
    gxx, nvcc = shutil.which("g++"), shutil.which("nvcc")
    if gxx is None or nvcc is None:
        pytest.skip("g++ and nvcc are needed to compile the header")
    subprocess.run([gxx, "-std=c++17", "-Wall", "-Werror", "-fsyntax-only",
                    str(tmp_path / "main.cpp")], check=True, cwd=tmp_path)
    subprocess.run([gxx, "-std=gnu++17", str(tmp_path / "main.cpp"), "-o",
                    str(tmp_path / "main")], check=True, cwd=tmp_path)
    ran = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True)
    assert [int(x) for x in ran.stdout.split()] == [i for _, _, i in table.entries]
    subprocess.run([nvcc, "-x", "cu", "-std=c++17", "-c", str(tmp_path / "main.cu"), "-o",
                    str(tmp_path / "main.o")], check=True, cwd=tmp_path, timeout=300)


def test_every_generated_export_compiles_and_imports_on_the_recording(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["dispatch", str(ROOT / "sample_kernels" / "fused_add_rmsnorm"), "--shapes",
                 "small,odd,decode,prefill,large", "--dtype", "bf16", "--replay",
                 "--tolerance", "0.5", "--out", str(out)], stdout=io.StringIO())
    assert code == 0
    data = json.loads((out / "fused_add_rmsnorm_bf16_dispatch.json").read_text())
    table = DispatchTable(
        kernel=data["kernel"], dtype=data["dtype"], size_names=tuple(data["sizes"]),
        configs=tuple(Config(c) for c in data["configs"]),
        entries=tuple((e["shape"], tuple(e["sizes"][n] for n in data["sizes"]), e["config"])
                      for e in data["entries"]), tolerance_pct=data["tolerance_pct"])
    assert table.to_cpp_header() == (out / "fused_add_rmsnorm_bf16_dispatch.h").read_text()
    assert table.to_python() == (out / "fused_add_rmsnorm_bf16_dispatch.py").read_text()
    _compile_and_import(table, tmp_path)


# sizes named like the generated code's former locals, and a wide table
WIDE = ("want", "best", "given", "d", "e", "k", "s", "w", "x", "v", "tokens", "hidden")
EDGE_TABLES = {
    "one config": DispatchTable("k", "fp16", ("n",), (Config(A=1),), (("only", (7,), 0),), 3.0),
    "many sizes": DispatchTable(
        "wide_kernel", "bf16", WIDE, (Config(SPLIT=1, VEC=4), Config(SPLIT=8, VEC=16)),
        tuple((f"s{i}", tuple(2 ** ((i + j) % 20) for j in range(len(WIDE))), i % 2)
              for i in range(40)), 2.5),
    "max int values": DispatchTable(
        "limits", "fp32", ("n", "m"),
        (Config(HI=2**31 - 1, LO=-(2**31), ZERO=0, FLAG=True, OFF=False, SPEC="=n"),
         Config(HI=1, LO=-1, ZERO=0, FLAG=False, OFF=True, SPEC=0)),
        (("tiny", (1, 1), 1), ("huge", (2**63 - 1, 2**62), 0)), 0.0),
}


@pytest.mark.parametrize("case", list(EDGE_TABLES))
def test_edge_case_exports_compile_and_import(case: str, tmp_path: Path) -> None:
    _compile_and_import(EDGE_TABLES[case], tmp_path)


def test_exports_refuse_a_table_that_holds_unsafe_data() -> None:
    bad = DispatchTable("k", "bf16", ("n",), (Config({"A b": 1}),), (("s", (1,), 0),), 3.0)
    for export in (bad.to_cpp_header, bad.to_python, bad.to_json):
        with pytest.raises(UnsafeExportError, match="'A b'"):
            export()

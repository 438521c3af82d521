"""``workbench init`` → fill in → ``propose --write``, and init's refusals (issue 16's bad
inputs): no __global__, several kernels with no --entry, a macro the parser cannot read
(naming the line), roles it cannot infer (asking), an int8 output with a tolerance."""

from __future__ import annotations

import io
import tomllib
from pathlib import Path

import pytest

from workbench.cli import main
from workbench.core.errors import KernelFolderError, ScaffoldError
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.kernel_folder.scaffold import scaffold, split_dims

# a per-row int8 quantizer as a user writes it: hard-coded 256 threads, scalar loads
QUANT = (Path(__file__).parent / "kernels" / "quant.cu").read_text()

FILLED = {
    'small = { rows = "FILL_IN", cols = "FILL_IN" }': "small = { rows = 7, cols = 1000 }",
    'large = { rows = "FILL_IN", cols = "FILL_IN" }': "large = { rows = 4096, cols = 4096 }",
    'shape = ["FILL_IN"]  # const float*': 'shape = ["rows", "cols"]  # const float*',
    'shape = ["FILL_IN"]  # int8_t*': 'shape = ["rows", "cols"]  # int8_t*',
    'shape = ["FILL_IN"]  # float*': 'shape = ["rows"]  # float*',
}


def run(*argv: str) -> tuple[int, str, str]:
    out = io.StringIO()
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        code = main(list(argv), stdout=out)
    return code, out.getvalue(), err.getvalue()


def init_quant(tmp_path: Path, *extra: str) -> Path:
    cu = tmp_path / "quant.cu"
    cu.write_text(QUANT)
    code, _, err = run("init", str(cu), "--grid", "rows", *extra)
    assert code == 0, err
    return tmp_path / "quant"


def fill(folder: Path, *more: tuple[str, str]) -> None:
    toml = folder / "kernel.toml"
    text = toml.read_text()
    for old, new in [*FILLED.items(), *more]:
        assert old in text, old
        text = text.replace(old, new)
    toml.write_text(text)


def test_init_infers_roles_dtypes_and_launch(tmp_path: Path) -> None:
    folder = init_quant(tmp_path)
    data = tomllib.loads((folder / "kernel.toml").read_text())
    roles = {a["name"]: (a["dtype"], a["role"]) for a in data["args"]}
    assert roles == {"x": ("f32", "in"), "q": ("i8", "out"), "scales": ("f32", "out"),
                     "rows": ("i32", "scalar"), "cols": ("i32", "scalar")}
    assert data["dtypes"] == ["fp32"] and data["baseline"]["grid"] == ["rows"]
    assert data["baseline"]["block"] == ["256"]  # from __launch_bounds__
    assert "template" not in data and not (folder / "reference.py").exists()
    baseline = (folder / "baseline.cu").read_text()
    assert 'extern "C" __global__ void __launch_bounds__(256) quant(' in baseline


def test_placeholders_are_named_until_filled(tmp_path: Path) -> None:
    folder = init_quant(tmp_path)
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(folder)
    text = str(info.value)
    assert "shapes.small.rows: got FILL_IN; expected a positive integer (workbench init left" in text
    assert "args[1] (q).shape[0]: got FILL_IN" in text
    assert "unknown name" not in text and "at least one out" not in text  # no follow-on noise
    fill(folder)
    kf = load_kernel_folder(folder)
    assert not kf.has_template and kf.template.params == () and kf.reference_functions == set()
    # bytes_moved defaults to each buffer once: x (4 B) + q (1 B) per element + scales
    assert kf.bytes_moved_for("large", "fp32") == 4096 * 4096 * 5 + 4096 * 4


def test_int8_output_with_an_integer_tolerance(tmp_path: Path) -> None:
    folder = init_quant(tmp_path)
    fill(folder, ('role = "out"  # written at line 16', 'role = "out"  # written at line 16\n'
                                                      "tolerance = { atol = 1 }"))
    kf = load_kernel_folder(folder)
    q = next(a for a in kf.args if a.name == "q")
    tol = kf.tolerance_for(q, "fp32")
    assert (tol.rtol, tol.atol) == (0.0, 1.0)
    scales = next(a for a in kf.args if a.name == "scales")
    assert kf.tolerance_for(scales, "fp32") == kf.tolerances["fp32"]
    layout = {a["name"]: a for a in kf.arg_layout("small", "fp32")}
    assert (layout["q"]["dtype"], layout["q"]["atol"], layout["q"]["rtol"]) == ("i8", 1.0, 0.0)
    # a float tolerance on an integer output is refused, naming the key and the rule
    text = (folder / "kernel.toml").read_text().replace(
        "tolerance = { atol = 1 }", "tolerance = { rtol = 0.01, atol = 0.5 }")
    (folder / "kernel.toml").write_text(text)
    with pytest.raises(KernelFolderError, match=r"args\[1\] \(q\)\.tolerance: got .*expected an "
                                                r"integer tolerance \{ atol = <int> \} for a i8"):
        load_kernel_folder(folder)


def test_propose_write_saves_the_template_and_the_review(tmp_path: Path) -> None:
    from workbench.store.sqlite import SQLiteStore

    folder = init_quant(tmp_path)
    fill(folder)
    store = tmp_path / "s.sqlite"
    code, out, err = run("propose", str(folder), "--write", "--store", str(store))
    assert code == 0, err + out
    assert "launch rules: grid = [rows], block = [" in out
    assert "gate: unverified: no GPU on this machine" in out
    assert "wrote template.cu and the [template] table of kernel.toml" in out
    kf = load_kernel_folder(folder)
    assert kf.has_template and kf.template.params
    assert (folder / "template.cu").read_text() == kf.template.source
    text = (folder / "kernel.toml").read_text()
    assert text.startswith("# Written by `workbench init`") and text.count("[template]") == 1
    [version] = SQLiteStore(store).template_versions("quant")
    [review] = SQLiteStore(store).reviews(version.id)
    assert review.decision == "approved" and "propose --write" in review.note


# -- refusals ---------------------------------------------------------------------------------

def test_no_global_function(tmp_path: Path) -> None:
    cu = tmp_path / "dev.cu"
    cu.write_text("__device__ float twice(float a) { return 2 * a; }\n")
    code, _, err = run("init", str(cu))
    assert code == 2 and "has no __global__ function definition" in err
    assert "Traceback" not in err


def test_several_kernels_need_entry(tmp_path: Path) -> None:
    cu = tmp_path / "two.cu"
    cu.write_text(QUANT + "__global__ void other(float* y) { y[0] = 1.0f; }\n")
    code, _, err = run("init", str(cu))
    assert code == 2 and "2 __global__ kernels (quant, other)" in err and "--entry" in err
    code, out, err = run("init", str(cu), "--entry", "other", "--grid", "1", "--block", "1")
    assert code == 0, err
    assert "y                f32       out" in out


def test_macro_the_parser_cannot_read_names_the_line(tmp_path: Path) -> None:
    cu = tmp_path / "m.cu"
    cu.write_text("__global__ void k(float* y, int n) {\n  int i = threadIdx.x;\n"
                  "  y[i] = SCALE_BY y[i];\n}\n")
    code, _, err = run("init", str(cu))
    assert code == 2 and "m.cu:3: cannot parse kernel 'k'" in err


def test_roles_that_cannot_be_inferred_are_asked(tmp_path: Path) -> None:
    text = ("__device__ void store_all(float* p, int n);\n"
            "__global__ void k(const float* x, float* y, float4* z, int n) {\n"
            "  store_all(y, n);\n  z[0] = make_float4(x[0], 0, 0, 0);\n}\n")
    with pytest.raises(ScaffoldError) as info:
        scaffold(text, "k.cu")
    asks = info.value.details["asks"]
    assert info.value.argument == "y" and len(asks) == 2
    assert "cannot tell whether argument 'y' (float* y, line 2) is read or written: it is " \
           "passed to code the analysis cannot follow (line 3); say which with --role y=in" in asks[0]
    assert "argument 'z' (float4* z, line 2) has no workbench dtype; give its element dtype " \
           "with --dtype z=DTYPE" in asks[1]
    plan = scaffold(text, "k.cu", roles={"y": "out"}, dtypes={"z": "f32"})
    assert [(a.name, a.role, a.why) for a in plan.args[:3]] == [
        ("x", "in", "const pointer"), ("y", "out", "set with --role"),
        ("z", "out", "written at line 4")]
    cu = tmp_path / "k.cu"
    cu.write_text(text)
    code, _, err = run("init", str(cu), "--role", "y=sideways")
    assert code == 2 and "--role y=sideways: expected one of ['in', 'out', 'inout']" in err


def test_template_kernels_and_scalar_types_are_explained() -> None:
    with pytest.raises(ScaffoldError, match=r"is a C\+\+ template"):
        scaffold("template <typename T> __global__ void k(T* y) { y[0] = 0; }\n", "t.cu")
    with pytest.raises(ScaffoldError, match=r"scalar argument 'h' .* is fp16"):
        scaffold("#include <cuda_fp16.h>\n__global__ void k(float* y, __half h) "
                 "{ y[0] = __half2float(h); }\n", "h.cu")


def test_split_dims_keeps_commas_inside_calls() -> None:
    assert split_dims("ceil_div(n, 256), min(rows, 4)") == ("ceil_div(n, 256)", "min(rows, 4)")


def test_panel_approve_writes_the_proposed_template(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The panel's Approve calls Workbench.review: a proposed template is written into a
    folder that has none; once it has one, approving writes nothing (save_template does)."""
    from workbench.api import Workbench
    from workbench.testing.synthetic_runner import SyntheticRunner

    for key in ("WORKBENCH_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    folder = init_quant(tmp_path)
    fill(folder)
    kf = load_kernel_folder(folder)
    wb = Workbench(kf, store=tmp_path / "s.sqlite", runner=SyntheticRunner(kf))
    assert not wb.template_is_saved
    assert "offline templater" in wb.propose_template()
    message = wb.review("approved", "looks right")
    assert message.endswith("wrote template.cu and the [template] table of kernel.toml")
    assert wb.template_is_saved and load_kernel_folder(folder).has_template
    before = (folder / "kernel.toml").read_text()
    wb.propose_template()
    assert "wrote" not in wb.review("approved", "again")
    assert (folder / "kernel.toml").read_text() == before

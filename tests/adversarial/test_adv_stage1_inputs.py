"""Adversarial tier (issue 28, item 2): bad inputs around module globals, reduced-quantity
outputs and the gate. Each case gets a refusal naming the key or line and what is missing,
or a template that says it is unverified, never a silent pass.

The shared-tile case runs the real gate on the GPU machine (gpu-marked); here it runs the
same validation with no GPU and must say the template is unverified and what will check it.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from helpers_stage1_folders import blur3_toml, scalar_arg, toml_arg, toml_head, write_folder

from workbench.cli import main as cli_main
from workbench.core.errors import KernelFolderError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.proposal import TemplateProposal
from workbench.engine.output_compare import VerifyHookError, _Mismatch, compare_outputs
from workbench.llm.gate_repair import validate_and_tighten
from workbench.llm.space_gate import unverified_notice

SOURCE = """\
#define KS 3
__constant__ float filt[KS * KS];
extern "C" __global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * filt[i % (KS * KS)];
}
"""

def _toml(*, constants: str, out_extra: str, in_extra: str, entry: str) -> str:
    return (toml_head("k", "n = 100", "rtol = 1e-5, atol = 1e-6")
            + toml_arg("out", "f32", "out", shape=("n",)) + out_extra + "\n"
            + toml_arg("in", "f32", "in", shape=("n",)) + in_extra + "\n"
            + scalar_arg("n") + constants + "\n"
            + f'[baseline]\nentry = "{entry}"\ngrid = ["ceil_div(n, 128)"]\nblock = ["128"]\n')


def _write(tmp_path: Path, *, constants: str = "", out_extra: str = "", in_extra: str = "",
           entry: str = "k", source: str = SOURCE, reference: str | None = None) -> Path:
    toml = _toml(constants=constants, out_extra=out_extra, in_extra=in_extra, entry=entry)
    return write_folder(tmp_path / "k", {"baseline.cu": source, "kernel.toml": toml,
                                         "reference.py": reference})


def _check(path: Path) -> tuple[int, str]:
    """``workbench check`` as a user runs it: exit code and everything it printed."""
    out = io.StringIO()
    import contextlib

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = cli_main(["check", str(path)], stdout=out)
    return code, out.getvalue() + err.getvalue()


def _constant(name: str = '"filt"', dtype: str = '"f32"', shape: str = "[9]") -> str:
    return f"[[constants]]\nname = {name}\ndtype = {dtype}\nshape = {shape}\n"


@pytest.mark.parametrize(("constants", "says"), [
    (_constant(dtype='"float"'), "constants[0] (filt).dtype: got float; expected one of"),
    (_constant(dtype='"f64"'), "constants[0] (filt).dtype: got f64"),
    (_constant(dtype='"i16"'), "a dtype of 4 bytes, as baseline.cu line 2 declares float filt"),
    (_constant(dtype="32"), "constants[0] (filt).dtype: got 32"),
    (_constant(shape="[8]"), "9 elements, as baseline.cu line 2 declares float filt[KS * KS]"),
    (_constant(shape='["n"]'), "100 elements"),
    (_constant(shape="[0]"), "positive integers"),
    (_constant(shape="[]"), "a list of 1 to 8 expressions"),
    (_constant(shape='["KS"]'), "a valid expression"),
    (_constant(shape='["__import__(\\"os\\")"]'), "a valid expression"),
    (_constant(name='"filt\\n"'), "a C identifier"),
    (_constant(name='"filt; int x"'), "a C identifier"),
    (_constant(name='"other"'), "a file-scope __constant__ or __device__ variable named other"),
    (_constant(name='"in"'), "a name no other constant or argument has"),
    (_constant() + _constant(), "a name no other constant or argument has"),
    ('[constants]\nname = "filt"\n', "an array of [[constants]] tables"),
    ("[[constants]]\nname = \"filt\"\n", "constants[0] (filt).dtype"),
])
def test_bad_constants_are_refused_by_check(tmp_path: Path, constants: str, says: str) -> None:
    code, text = _check(_write(tmp_path, constants=constants))
    assert code != 0 and says in text, text


def test_undeclared_global_of_a_type_the_workbench_cannot_fill(tmp_path: Path) -> None:
    source = SOURCE.replace("__constant__ float filt[KS * KS];",
                            "struct Tap { float w; int dx; };\n__constant__ Tap filt[KS * KS];")
    code, text = _check(_write(tmp_path, source=source))
    assert code != 0 and "line 3" in text and "[[constants]]" in text, text


def test_undeclared_global_whose_extent_is_another_files_macro(tmp_path: Path) -> None:
    source = SOURCE.replace("#define KS 3\n", '#include "taps.h"\n')
    code, text = _check(_write(tmp_path, source=source))
    assert code != 0 and "KS is not an object-like #define of this file" in text, text


def test_compare_sum_on_an_input_is_refused(tmp_path: Path) -> None:
    code, text = _check(_write(tmp_path, in_extra='compare = "sum"'))
    assert code != 0 and "args[1] (in).compare: got sum; expected no compare for a in" in text


def test_compare_with_an_unknown_mode_is_refused(tmp_path: Path) -> None:
    code, text = _check(_write(tmp_path, out_extra='compare = "elementwise; rm -rf /"'))
    assert code != 0 and "args[0] (out).compare" in text


def test_entry_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    code, text = _check(_write(tmp_path, entry="k\\n"))
    assert code != 0 and "baseline.entry" in text and "a C identifier" in text, text


def test_source_too_deep_to_parse_is_a_folder_problem(tmp_path: Path) -> None:
    deep = SOURCE.replace("in[i] * filt", "(" * 400 + "in[i]" + ")" * 400 + " * filt")
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(_write(tmp_path, source=deep))
    assert any(p.file == "baseline.cu" and "CUDA source" in p.expected
               for p in info.value.problems), info.value.problems


VERIFY_RAISES = """\
def verify(outputs, golden, shape):
    return outputs["missing"]
"""


def test_verify_raising_another_exception_is_an_error_not_a_result(tmp_path: Path) -> None:
    path = _write(tmp_path, reference=VERIFY_RAISES)
    folder = load_kernel_folder(path)  # it loads: the bug shows when verify runs
    hook = folder.load_reference().verify
    got = {"out": (np.ones(4), np.zeros(4, bool))}
    arg = folder.arg_layout(folder.check_shape, "fp32")[0]
    with pytest.raises(VerifyHookError, match="raised KeyError"):
        compare_outputs(got, {"out": np.ones(4)}, [arg], "baseline vs reference.py", hook, {})


@pytest.mark.parametrize("body", ["return False", "return o['out'].sum() == g['out'].sum()",
                                  "return 'ok'"])
def test_verify_that_returns_a_verdict_instead_of_raising_is_an_error(tmp_path: Path,
                                                                      body: str) -> None:
    """A verify() written as ``return np.allclose(...)`` would pass everything if its value
    were ignored: any return value other than None is refused as a bug in verify."""
    path = _write(tmp_path, reference=f"def verify(o, g, s):\n    {body}\n")
    hook = load_kernel_folder(path).load_reference().verify
    arg = {"name": "out", "dtype": "f32", "role": "out", "rtol": 0.0, "atol": 0.0}
    with pytest.raises(VerifyHookError, match="must return None"):
        compare_outputs({"out": (np.ones(4), np.zeros(4, bool))}, {"out": np.zeros(4)}, [arg],
                        "x", hook, {})


def test_verify_assertion_message_reaches_the_reason(tmp_path: Path) -> None:
    path = _write(tmp_path, reference="def verify(o, g, s):\n    assert o['out'].sum() == "
                                      "g['out'].sum(), 'totals differ'\n")
    hook = load_kernel_folder(path).load_reference().verify
    arg = {"name": "out", "dtype": "f32", "role": "out", "rtol": 0.0, "atol": 0.0}
    with pytest.raises(_Mismatch, match=r"reference.py verify\(\): totals differ"):
        compare_outputs({"out": (np.ones(4), np.zeros(4, bool))}, {"out": np.zeros(4)}, [arg],
                        "x", hook, {})


@pytest.mark.parametrize("signature", ["verify()", "verify(outputs)", "verify(a, b, c, d)"])
def test_verify_with_the_wrong_signature_is_refused(tmp_path: Path, signature: str) -> None:
    code, text = _check(_write(tmp_path, reference=f"def {signature}:\n    pass\n"))
    assert code != 0 and "three positional parameters" in text, text


# -- a shared tile whose extent a knob changes but whose loads do not ---------------------------

TILE_CU = """\
#ifndef T
#define T 16
#endif
extern "C" __global__ void blur3(float* out, const float* in, int h, int w) {
  __shared__ float tile[T + 2][T + 2];
  int tx = threadIdx.x, ty = threadIdx.y;
  int x = blockIdx.x * T + tx, y = blockIdx.y * T + ty;
  for (int dy = ty; dy < 18; dy += 16)       // the loads still assume a 16 x 16 tile
    for (int dx = tx; dx < 18; dx += 16) {
      int gx = blockIdx.x * T + dx - 1, gy = blockIdx.y * T + dy - 1;
      tile[dy][dx] = (gx >= 0 && gx < w && gy >= 0 && gy < h) ? in[gy * w + gx] : 0.0f;
    }
  __syncthreads();
  if (x < w && y < h) {
    float s = 0.0f;
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) s += tile[ty + i][tx + j];
    out[y * w + x] = s / 9.0f;
  }
}
"""

TILE_TOML = blur3_toml("template.cu") + """\
[template]
entry = "blur3"
grid = ["ceil_div(w, T)", "ceil_div(h, T)"]
block = ["T", "T"]
[template.params.T]
kind = "choice"
values = [8, 16, 32]
default = 16
"""


def tile_folder(tmp_path: Path) -> KernelFolder:
    return load_kernel_folder(write_folder(tmp_path / "blur3", {"template.cu": TILE_CU,
                                                                 "kernel.toml": TILE_TOML}))


def test_shared_tile_knob_without_a_gpu_is_unverified_and_says_what_checks_it(
        tmp_path: Path) -> None:
    folder = tile_folder(tmp_path)
    gated = validate_and_tighten(TemplateProposal.from_template(folder.template), folder,
                                 correctness=None)
    assert gated.report.status == "unverified"
    assert gated.report.gate is not None and not gated.report.gate.on_gpu
    notice = unverified_notice(str(folder.path))
    assert "unverified" in notice and f"workbench propose {folder.path}" in notice


@pytest.mark.gpu
@pytest.mark.timeout(600)
def test_shared_tile_knob_is_caught_by_the_gate_on_the_gpu(tmp_path: Path) -> None:
    """T = 8 and T = 32 read a tile the loads did not fill: the gate must fail them and the
    template must be refused (only its defaults pass), never written with them inside."""
    from workbench.llm.validation import gpu_correctness

    folder = tile_folder(tmp_path)
    gated = validate_and_tighten(TemplateProposal.from_template(folder.template), folder,
                                 correctness=gpu_correctness(folder))
    print(gated.report.messages(), gated.notes)
    assert gated.template is None and not gated.report.ok
    assert any("every non-default config failed the gate" in m
               for m in gated.report.messages()), gated.report.messages()

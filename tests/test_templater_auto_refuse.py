"""No family writes an ``auto`` array (issue 28, set 21's gmm_loglik_k16): a local declared
``auto`` whose type auto_types cannot tell (a file's typedef in a functional cast,
``auto acc = wb_real(0.0f)``; ``pow(1.0f, 2)``, where an overload decides) is copied by no
family (a template function returning its ``T``, ``wb_same(0.0f)``, is told since session
29: T deduced from the argument). Regtile (gemm_smem's ``acc``, gemm_cm_bt_rowscale's ``t``), conv (conv2d_const's
``acc``, colfilter13's ``s``) and centre (bilateral5's ``center``) wrote ``auto NAME[..]``
(nvcc: "auto type cannot appear in top-level array type"); each now refuses with the
local's line (auto_refuse.AutoGuard) and the next family lifts. Where the type can be told
(``auto acc = 0.0f``, ``auto acc = wb_same(0.0f)``) the lift is the plain kernel's
(typed_autos). Pure text checks; nvcc
compiles each refused lift at its first all-ends config."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers_nvcc import NVCC, needs_nvcc
from helpers_templater import end_configs

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import TemplateError
from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.templater import offline_template
from workbench.templater.auto_refuse import AutoGuard
from workbench.templater.plan import Plan
from workbench.templater.records import TemplaterResult

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
#: folder -> the local respelled auto (the comment: what its family wrote before)
CASES = {
    "corpus_compute/gemm_smem": "acc",  # regtile: auto acc[TM][TN]
    "corpus_compute_unseen19/gemm_cm_bt_rowscale": "t",  # regtile, threads x/y: auto t[TM][TN]
    "corpus_compute/conv2d_const": "acc",  # conv: auto wb_acc[OUT_Y][OUT_X]
    "corpus_compute_unseen9/bilateral5": "center",  # centre: auto wb_center[OUT_Y]
    "corpus_compute_unseen5/colfilter13": "s",  # conv: auto wb_acc[OUT_Y]
}
_AUTO_ARRAY = re.compile(r"\bauto\s+\w+\s*\[")


#: spelling -> (lines before the file, the initialiser around the value V): the same program
SPELLINGS = {
    "told": ("", "{}"),  # typed_autos writes float
    "typedef": ("typedef float wb_real;\n", "wb_real({})"),
    "template": ("template <typename T> __device__ T wb_same(T v) { return v; }\n",
                 "wb_same({})"),
    "pow": ("", "{} + 0.0f * pow(1.0f, 2)"),  # pow(float, int): an overload decides
}


def _respelled(source: str, name: str, spelling: str) -> tuple[str, int]:
    """``source`` with ``[const] float NAME = V;`` written ``[const] auto NAME = ..;`` in
    ``spelling`` (:data:`SPELLINGS`), and the declaration's line."""
    found = re.search(rf"(const )?float {name} = ([^;]+);", source)
    assert found is not None, name
    head, form = SPELLINGS[spelling]
    line = source[:found.start()].count("\n") + 1 + head.count("\n")
    return head + source[:found.start()] + \
        f"{found.group(1) or ''}auto {name} = {form.format(found.group(2))};" + \
        source[found.end():], line


def _folder(tmp: Path, case: str, spelling: str) -> tuple[KernelFolder, int]:
    copy = tmp / case.replace("/", "_") / spelling
    shutil.copytree(BENCH / case, copy, ignore=shutil.ignore_patterns("expert"))
    kf = load_kernel_folder(copy)
    base = copy / kf.baseline.source_name
    text, line = _respelled(base.read_text(), CASES[case], spelling)
    base.write_text(text)
    return load_kernel_folder(copy), line


@functools.cache
def _untold(case: str, tmp: Path, spelling: str) -> tuple[KernelFolder, TemplaterResult, int]:
    kf, line = _folder(tmp, case, spelling)
    return kf, offline_template(kf), line


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("auto_refuse")


@pytest.mark.parametrize(("case", "spelling"), [
    *((case, "typedef") for case in sorted(CASES)),
    *((case, "pow") for case in ("corpus_compute/gemm_smem", "corpus_compute/conv2d_const",
                                 "corpus_compute_unseen9/bilateral5"))])
def test_an_untold_auto_local_is_copied_by_no_family(case: str, spelling: str,
                                                     work: Path) -> None:
    _kf, result, line = _untold(case, work, spelling)
    assert not _AUTO_ARRAY.search(result.lifted.source), result.lifted.source
    name = CASES[case]
    refused = [str(f) for f in result.lifted.findings if not f.applied and
               f"`auto {name}` at line {line}: its type cannot be told" in str(f)]
    assert refused, result.lifted.notes
    assert "write the type" in refused[0]


@pytest.mark.parametrize(("case", "spelling"), [
    *((case, "told") for case in sorted(CASES)),
    # a template function's T, deduced from its argument (auto_types._deduced_return)
    *((case, "template") for case in ("corpus_compute/gemm_smem", "corpus_compute/conv2d_const",
                                      "corpus_compute_unseen9/bilateral5"))])
def test_a_told_auto_local_lifts_as_the_typed_kernel(case: str, spelling: str,
                                                     work: Path) -> None:
    kf, _line = _folder(work, case, spelling)
    plain = offline_template(load_kernel_folder(BENCH / case))
    told = offline_template(kf)
    assert [p.name for p in told.lifted.params] == [p.name for p in plain.lifted.params]
    assert told.lifted.constraints == plain.lifted.constraints
    assert not _AUTO_ARRAY.search(told.lifted.source)


@needs_nvcc
@pytest.mark.parametrize("case", sorted(CASES))
def test_nvcc_compiles_the_refused_kernels_lift_at_its_first_end(case: str, work: Path,
                                                                  tmp_path: Path) -> None:
    assert NVCC is not None
    kf, result, _line = _untold(case, work, "typedef")
    config = end_configs(result.template, kf.env(kf.check_shape, "fp32"))[0]
    source = tmp_path / "end.cu"
    source.write_text(result.template.render(config, "fp32").source)
    done = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"),
                           str(source)], capture_output=True, text=True, timeout=200,
                          check=False)
    assert done.returncode == 0, (config, done.stderr[-2000:])


def test_a_lift_still_copying_an_auto_local_at_the_end_is_refused_with_its_line() -> None:
    """The last check (AutoGuard.check, after every pass): a pass no family guard covers
    that wrote ``auto acc[..]`` refuses the lift, naming the local's line."""
    source = parse_cuda(
        "typedef float wb_real;\n"
        'extern "C" __global__ void k(float* out, const float* in, int n) {\n'
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  auto acc = wb_real(in[i]);\n"
        "  out[i] = acc;\n"
        "}\n")
    guard = AutoGuard(Plan(source, source.kernel("k"), grid=["n"], block=["256"], scalars={}))
    guard.check(source.data.decode())  # as written: nothing copied
    with pytest.raises(TemplateError, match=r"`auto acc` at line 4: its type cannot be told "
                                            r"from `wb_real\(in\[i\]\)`; write the type"):
        guard.check(source.data.decode().replace("auto acc = wb_real(in[i]);",
                                                 "auto acc[4] = {wb_real(in[i])};"))

"""Module globals as inputs (issue 28, item 2), pure tier: the loader's [[constants]] and the
derivation from the source, the input plan (which constants, dtype, shape, non-zero values),
the worker message, and the worker's upload code driven against a fake driver up to the
copy. The copy itself runs in tests/gpu/test_constants_gpu.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers_stage1_folders import scalar_arg, toml_arg, toml_head, write_folder

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import KernelFolderError
from workbench.core.inputs import complete_inputs
from workbench.core.kernel_folder import load_kernel_folder
from workbench.core.module_constants import module_globals
from workbench.engine.constant_upload import constant_uploads
from workbench.engine.gpu_verify import _InputSet
from workbench.engine.output_compare import _Mismatch
from workbench.engine.worker_messages import LaunchGeometry, ProblemSpec

CORPUS = Path(__file__).resolve().parents[1] / "benchmarks" / "corpus_compute"

SOURCE = """\
#ifndef TAPS
#define TAPS 5
#endif
#define ROWS (TAPS + 1)
__constant__ float filt[ROWS][TAPS * 2];
__constant__ int lut[1 << 3];
__device__ unsigned int counter;
__constant__ float4 planes[3];
__constant__ float fixed[2] = {1.0f, 2.0f};
extern "C" __global__ void k(float* out, const float* in, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * filt[i % ROWS][i % 10] + lut[i & 7] + counter + planes[0].x;
}
"""


def _toml(extra: str = "") -> str:
    return (toml_head("k", "n = 100", "rtol = 1e-5, atol = 1e-6")
            + toml_arg("out", "f32", "out", shape=("n",)) + toml_arg("in", "f32", "in", shape=("n",))
            + scalar_arg("n") + extra + '\n[baseline]\nentry = "k"\n'
            + 'grid = ["ceil_div(n, 128)"]\nblock = ["128"]\n')


def _folder(tmp_path: Path, extra: str = "", source: str = SOURCE,
            reference: str | None = None) -> Path:
    return write_folder(tmp_path / "k", {"baseline.cu": source, "kernel.toml": _toml(extra),
                                         "reference.py": reference})


def test_module_globals_read_from_the_source_with_macros_evaluated() -> None:
    found = module_globals(parse_cuda(SOURCE, "k.cu"))
    assert found["filt"].counts == (6, 10) and found["filt"].dtype == "f32"
    assert found["lut"].counts == (8,) and found["lut"].dtype == "i32"
    assert found["counter"].counts == () and found["counter"].qualifier == "__device__"
    assert found["planes"].counts == (3, 4) and found["planes"].dtype == "f32"
    assert found["fixed"].initialized and found["filt"].line == 5


def test_undeclared_globals_are_derived_as_inputs(tmp_path: Path) -> None:
    folder = load_kernel_folder(_folder(tmp_path))
    plan = {c["name"]: c for c in folder.constant_layout("small", "fp32")}
    assert set(plan) == {"filt", "lut", "counter", "planes"}  # "fixed" has its own values
    assert plan["filt"]["shape"] == [6, 10] and plan["filt"]["dtype"] == "f32"
    assert plan["lut"]["dtype"] == "i32" and plan["counter"]["dtype"] == "u32"
    assert plan["planes"]["shape"] == [3, 4]


def test_declared_constant_shapes_follow_the_problem_sizes(tmp_path: Path) -> None:
    extra = '[[constants]]\nname = "filt"\ndtype = "f32"\nshape = ["6", "10"]\n'
    folder = load_kernel_folder(_folder(tmp_path, extra))
    filt = next(c for c in folder.constants if c.name == "filt")
    assert filt.declared and folder.constant_layout("small", "fp32")[0]["shape"] == [6, 10]


def test_generated_constants_are_never_zero_and_have_the_plan_shape(tmp_path: Path) -> None:
    folder = load_kernel_folder(_folder(tmp_path))
    plan = folder.constant_layout("small", "fp32")
    host = complete_inputs({"in": np.ones(100, np.float32)}, plan, {"n": 100},
                           np.random.default_rng(0))
    for const in plan:
        values = host[const["name"]]
        assert values.shape == tuple(const["shape"])
        assert np.any(values != 0), const["name"]
    again = complete_inputs({}, plan, {"n": 100}, np.random.default_rng(1))
    assert not np.array_equal(host["filt"], again["filt"])  # random, per seed


def test_make_inputs_values_win_and_are_checked() -> None:
    plan = [{"name": "filt", "dtype": "f32", "shape": [7, 7]}]
    given = np.arange(1, 50, dtype=np.float32)
    host = complete_inputs({"filt": given}, plan, {"n": 3}, np.random.default_rng(0))
    assert np.array_equal(host["filt"].reshape(-1), given)  # flat memory: reshaped
    with pytest.raises(ValueError, match="holds 48 elements"):
        complete_inputs({"filt": given[:48]}, plan, {"n": 3}, np.random.default_rng(0))
    with pytest.raises(ValueError, match="is zero"):
        complete_inputs({"filt": np.zeros(49)}, plan, {"n": 3}, np.random.default_rng(0))


def test_corpus_constants_come_from_make_inputs_and_reach_the_reference() -> None:
    folder = load_kernel_folder(CORPUS / "conv2d_const")
    ref = folder.load_reference()
    shape = folder.shape_values(folder.check_shape)
    plan = folder.constant_layout(folder.check_shape, "fp32")
    assert plan == [{"name": "filt", "role": "constant", "dtype": "f32", "shape": [49]}]
    host = complete_inputs(ref.make_inputs(shape, "fp32", np.random.default_rng(0)), plan,
                           shape, np.random.default_rng(0))
    uploads, seen = constant_uploads(plan, host)
    assert [u.name for u in uploads] == ["filt"] and uploads[0].nbytes == 49 * 4
    out = ref.reference({**host, **seen}, shape, "fp32")["out"]
    assert np.any(out != 0)  # a zero filter would give zeros everywhere


def test_problem_message_carries_the_constants(tmp_path: Path) -> None:
    folder = load_kernel_folder(_folder(tmp_path))
    spec = ProblemSpec("small", folder.shape_values("small"), folder.arg_layout("small", "fp32"),
                       LaunchGeometry((1, 1, 1), (128, 1, 1), 0),
                       folder.constant_layout("small", "fp32"))
    back = ProblemSpec.from_message(spec.to_message())
    assert [c["name"] for c in back.constants] == ["filt", "lut", "counter", "planes"]
    plain = ProblemSpec("small", {"n": 1}, [], LaunchGeometry((1, 1, 1), (1, 1, 1), 0))
    assert "constants" not in plain.to_message()  # recordings without constants unchanged


# -- the worker's upload, against a fake driver ----------------------------------------------


class _FakeError(Exception):
    pass


class _Buf(int):
    def free(self) -> None:
        pass


class _FakeCuda:
    Error = _FakeError

    def __init__(self) -> None:
        self.next = 0x1000
        self.copies: list[tuple[int, bytes]] = []

    def mem_alloc(self, nbytes: int) -> _Buf:
        self.next += nbytes + 256
        return _Buf(self.next)

    def memcpy_htod(self, dst: Any, src: Any) -> None:
        self.copies.append((int(dst), np.asarray(src).tobytes()))

    def memcpy_dtod(self, *args: Any) -> None:
        pass


class _FakeModule:
    def __init__(self, symbols: dict[str, tuple[int, int]]) -> None:
        self.symbols = symbols

    def get_global(self, name: str) -> tuple[int, int]:
        if name not in self.symbols:
            raise _FakeError(f"cuModuleGetGlobal failed: named symbol not found ({name})")
        return self.symbols[name]


class _FakeSession:
    def __init__(self) -> None:
        self.cuda = _FakeCuda()


def _input_set(tmp_path: Path) -> tuple[_InputSet, dict[str, np.ndarray]]:
    folder = load_kernel_folder(_folder(tmp_path))
    spec = ProblemSpec("small", folder.shape_values("small"), folder.arg_layout("small", "fp32"),
                       LaunchGeometry((1, 1, 1), (128, 1, 1), 0),
                       folder.constant_layout("small", "fp32"))
    host = complete_inputs({"in": np.ones(100, np.float32)}, spec.constants, spec.shape,
                           np.random.default_rng(3))
    return _InputSet(_FakeSession(), spec, "fp32", host), host  # type: ignore[arg-type]


def test_input_set_uploads_each_constant_into_the_module_global(tmp_path: Path) -> None:
    iset, host = _input_set(tmp_path)
    module = _FakeModule({"filt": (0xA000, 240), "lut": (0xB000, 32), "counter": (0xC000, 4),
                          "planes": (0xD000, 48)})
    cuda = iset.session.cuda
    before = len(cuda.copies)
    iset.upload_constants(module)
    copies = dict(cuda.copies[before:])
    assert set(copies) == {0xA000, 0xB000, 0xC000, 0xD000}
    assert np.frombuffer(copies[0xA000], np.float32).tolist() == \
        host["filt"].astype(np.float32).reshape(-1).tolist()
    assert np.frombuffer(copies[0xB000], np.int32).tolist() == host["lut"].reshape(-1).tolist()
    assert np.any(np.frombuffer(copies[0xA000], np.float32) != 0)
    assert "filt" in iset.quantized  # the reference sees what the kernel sees


def test_upload_refuses_a_module_without_the_symbol_or_of_another_size(tmp_path: Path) -> None:
    iset, _ = _input_set(tmp_path)
    with pytest.raises(_Mismatch, match="no global named lut"):
        iset.upload_constants(_FakeModule({"filt": (0xA000, 240)}))
    with pytest.raises(_Mismatch, match="filt holds 200 bytes"):
        iset.upload_constants(_FakeModule({"filt": (0xA000, 200)}))


# -- bad folders ------------------------------------------------------------------------------


@pytest.mark.parametrize(("extra", "key", "says"), [
    ('[[constants]]\nname = "filt"\ndtype = "f99"\nshape = [60]\n', "dtype", "one of"),
    ('[[constants]]\nname = "filt"\ndtype = "f32"\nshape = [59]\n', "shape", "60 elements"),
    ('[[constants]]\nname = "filt"\ndtype = "i8"\nshape = [60]\n', "dtype", "4 bytes"),
    ('[[constants]]\nname = "nope"\ndtype = "f32"\nshape = [4]\n', "name", "named nope"),
    ('[[constants]]\nname = "filt\\n"\ndtype = "f32"\nshape = [60]\n', "name", "C identifier"),
    ('[[constants]]\nname = "in"\ndtype = "f32"\nshape = [60]\n', "name", "no other"),
    ('[[constants]]\nname = "filt"\ndtype = "f32"\nshape = ["n - 200"]\n', "shape", "positive"),
    ('[[constants]]\nname = "filt"\ndtype = "f32"\nshape = "60"\n', "shape", "a list"),
    ('[[constants]]\nname = "filt"\ndtype = "f32"\nshape = [60]\nvalues = 1\n', "values",
     "unknown key"),
])
def test_bad_constants_are_folder_problems(tmp_path: Path, extra: str, key: str,
                                           says: str) -> None:
    with pytest.raises(KernelFolderError) as info:
        load_kernel_folder(_folder(tmp_path, extra))
    text = str(info.value)
    assert "constants[0]" in text and key in text and says in text, text


def test_a_global_the_workbench_cannot_fill_is_named_with_its_line(tmp_path: Path) -> None:
    source = SOURCE.replace("__constant__ int lut[1 << 3];",
                            "struct S { int a; };\n__constant__ S table[4];")
    with pytest.raises(KernelFolderError, match=r"line 7.*table.*\[\[constants\]\]"):
        load_kernel_folder(_folder(tmp_path, source=source))

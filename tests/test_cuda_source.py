"""The CUDA parser front end: kernel signatures, dtypes, and refusals naming the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.core.cuda_source import CUDA_SCALAR_DTYPES, parse_cuda
from workbench.core.dtypes import ARG_DTYPES
from workbench.core.errors import CudaSourceError

ROOT = Path(__file__).resolve().parents[1]

TWO_KERNELS = """\
#include <cuda_fp16.h>
#include <cstdint>
extern "C" __global__ void __launch_bounds__(256, 2)
scale(const float* __restrict__ x, __half* y, int n, const int8_t* q, float s) {
  __shared__ float partial[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int j = i; j < n; j += 256) y[j] = __float2half(x[j] * s + q[j]);
}
__global__ void other(float4* out, unsigned char* u, long long n2) { out[0].x = u[n2]; }
"""


def test_signature_of_a_named_kernel() -> None:
    src = parse_cuda(TWO_KERNELS, "two.cu")
    assert [k.name for k in src.kernels] == ["scale", "other"]
    k = src.kernel("scale")
    assert k.extern_c and k.line == 3 and k.end_line == 8 and k.body_line == 4
    assert k.launch_bounds is not None
    assert (k.launch_bounds.max_threads, k.launch_bounds.min_blocks) == ("256", "2")
    x, y, n, q, s = k.params
    assert (x.name, x.dtype, x.is_pointer, x.is_const, x.is_restrict) == ("x", "f32", True, True, True)
    assert (y.dtype, y.is_pointer, y.is_const, y.is_restrict) == ("fp16", True, False, False)
    assert (n.dtype, n.is_scalar) == ("i32", True)
    assert (q.dtype, q.is_const, q.type_text) == ("i8", True, "const int8_t*")
    assert (s.dtype, s.is_scalar) == ("f32", True)
    assert [p.name for p in k.pointer_params] == ["x", "y", "q"]
    assert src.node_text(src.body(k)).startswith("{\n  __shared__ float partial[256];")


def test_types_without_a_workbench_dtype_are_none() -> None:
    k = parse_cuda(TWO_KERNELS).kernel("other")
    assert [(p.name, p.dtype) for p in k.params] == [("out", None), ("u", "u8"), ("n2", "i64")]
    assert not k.extern_c and k.launch_bounds is None


def test_element_dtype_from_template_and_scalar_t_typedef() -> None:
    text = ("#ifndef SCALAR_T\n#define SCALAR_T float\n#endif\ntypedef SCALAR_T scalar_t;\n"
            "template <typename T> __global__ void t(T* a, const scalar_t* b) { a[0] = b[0]; }\n")
    k = parse_cuda(text).kernel()
    assert k.template_params == ("T",)
    assert [p.dtype for p in k.params] == ["T", "T"]


def test_every_mapped_dtype_is_a_workbench_argument_dtype() -> None:
    assert set(CUDA_SCALAR_DTYPES.values()) <= set(ARG_DTYPES)


@pytest.mark.parametrize("folder", ["silu_and_mul", "fused_add_rmsnorm", "merge_attn_states_lse"])
def test_sample_kernels_parse(folder: str) -> None:
    for name in ("baseline.cu", "template.cu"):
        src = parse_cuda((ROOT / "sample_kernels" / folder / name).read_text(), name)
        k = src.kernel()
        assert k.name == f"{folder}_kernel" and k.extern_c
        assert src.outside_problems == ()


def test_no_global_function_is_refused() -> None:
    with pytest.raises(CudaSourceError, match="no __global__ function") as info:
        parse_cuda("__device__ float f(float a) { return a; }\n", "dev.cu").kernel()
    assert info.value.file == "dev.cu"


def test_several_kernels_need_an_entry_and_list_them() -> None:
    with pytest.raises(CudaSourceError, match=r"2 __global__ kernels \(scale, other\).*--entry"):
        parse_cuda(TWO_KERNELS, "two.cu").kernel()
    with pytest.raises(CudaSourceError, match="no __global__ kernel named 'nope'") as info:
        parse_cuda(TWO_KERNELS, "two.cu").kernel("nope")
    assert info.value.details["choices"] == ["scale", "other"]


def test_unresolved_macro_in_a_kernel_names_the_line() -> None:
    text = ("__global__ void k(float* x, int n) {\n"
            "  int i = threadIdx.x;\n"
            "  x[i] = LOAD_SCALED x[i];\n"
            "}\n")
    with pytest.raises(CudaSourceError, match=r"bad\.cu:3: cannot parse kernel 'k'") as info:
        parse_cuda(text, "bad.cu").kernel()
    assert info.value.line == 3


def test_kernel_made_by_a_macro_names_the_line() -> None:
    text = "#include <cstdint>\n#define KERNEL(n) __global__ void n(float* x)\nKERNEL(foo) { x[0] = 1; }\n"
    with pytest.raises(CudaSourceError, match=r"m\.cu:2: the __global__ function is inside a macro"):
        parse_cuda(text, "m.cu").kernel()


def test_problems_outside_the_kernel_are_kept_not_refused() -> None:
    text = "HOST_ONLY_MACRO(x) y z;\n__global__ void k(float* x) { x[0] = 1.0f; }\n"
    src = parse_cuda(text)
    assert src.kernel().name == "k"
    assert src.outside_problems and src.outside_problems[0].line == 1

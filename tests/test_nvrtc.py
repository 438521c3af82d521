"""NVRTC as the compiler's fast path: flag mapping, the setting, the sandboxed child, and the
Compiler's fallback to nvcc.

The compile tests run the real NVRTC (the ``nvidia-cuda-nvrtc`` wheel or the toolkit's) and
the real nvcc, and are skipped where either is missing.
"""

from __future__ import annotations

import ast
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.core.errors import CompilerNotFoundError
from workbench.core.settings import SettingError, workbench_settings
from workbench.engine.nvrtc import (
    CHILD,
    find_nvrtc,
    library_build,
    nvcc_build,
    nvcc_release,
    nvrtc_options,
    run_nvrtc,
)
from workbench.engine.sandbox import SandboxLimits

BASE = ("-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v", "--std=c++17", "-lineinfo")


def test_the_compilers_flags_map_to_nvrtc_options() -> None:
    assert nvrtc_options(BASE) == ["-arch=sm_90a", "--ptxas-options=-v", "--std=c++17",
                                   "-lineinfo"]
    assert nvrtc_options((*BASE, "-maxrregcount=64", "-DX=1", "--use_fast_math",
                          "-Xptxas=-O2")) == [
        "-arch=sm_90a", "--ptxas-options=-v", "--std=c++17", "-lineinfo", "-maxrregcount=64",
        "-DX=1", "--use_fast_math", "--ptxas-options=-O2"]


@pytest.mark.parametrize("flags", [
    (*BASE, "-Xcompiler", "-Wall"),       # a host-compiler flag: nvcc compiles
    (*BASE, "-rdc=true"),                 # unknown to the mapping
    ("-cubin", "-arch=compute_90a"),      # not a real architecture: no cubin from NVRTC
    ("-cubin", "-O3"),                    # no architecture at all
    (*BASE, "-Xptxas"),                   # a dangling -Xptxas
])
def test_a_flag_without_a_known_counterpart_means_nvcc(flags: tuple[str, ...]) -> None:
    assert nvrtc_options(flags) is None


def test_the_setting_is_off_on_or_a_path() -> None:
    assert workbench_settings({}).nvrtc == "off"
    assert workbench_settings({"WORKBENCH_NVRTC": " ON "}).nvrtc == "on"
    assert workbench_settings({"WORKBENCH_NVRTC": "all"}).nvrtc == "all"
    assert workbench_settings({"WORKBENCH_NVRTC": "/opt/lib/libnvrtc.so.13"}).nvrtc == (
        "/opt/lib/libnvrtc.so.13")
    with pytest.raises(SettingError) as info:
        workbench_settings({"WORKBENCH_NVRTC": "yes"})
    assert info.value.variable == "WORKBENCH_NVRTC" and "'off'" in info.value.expected


def test_the_child_imports_only_the_standard_library() -> None:
    tree = ast.parse(CHILD.read_text())
    names = {alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, ast.Import) for alias in node.names}
    names |= {str(node.module).split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom)}
    assert names and names <= set(sys.stdlib_module_names)


def test_the_launcher_runs_a_python_script_itself() -> None:
    from workbench.engine import sandbox

    assert f'if sys.argv[4] == "{sandbox.RUN_PYTHON}":' in sandbox._LAUNCHER


def test_an_nvcc_that_names_no_toolkit_means_nvcc_alone(tmp_path: Path) -> None:
    """``on`` with an nvcc whose -dryrun names no toolkit (a wrapper, a fake): no NVRTC,
    and the version is nvcc's own text."""
    from workbench.engine.compiler import Compiler

    fake = tmp_path / "nvcc"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && echo 'release 13.0, V13.0.88' "
                    "&& exit 0\nexit 1\n")
    fake.chmod(0o755)
    compiler = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=fake, nvrtc="on")
    assert compiler.backend is None and compiler.version == "release 13.0, V13.0.88"


def test_the_release_is_read_from_nvcc_version_text() -> None:
    assert nvcc_release("Cuda compilation tools, release 13.0, V13.0.88") == "13.0"
    assert nvcc_build("Cuda compilation tools, release 13.0, V13.0.88") == "13.0.88"
    assert nvcc_release("no release here") == nvcc_build("no release here") == ""


def test_the_build_comes_from_the_file_name_or_the_wheel(tmp_path: Path) -> None:
    toolkit = tmp_path / "cuda" / "lib64"
    toolkit.mkdir(parents=True)
    (toolkit / "libnvrtc.so.13.0.88").write_bytes(b"")
    (toolkit / "libnvrtc.so.13").symlink_to("libnvrtc.so.13.0.88")
    assert library_build(toolkit / "libnvrtc.so.13") == "13.0.88"
    site = tmp_path / "site"
    (site / "nvidia" / "cu13" / "lib").mkdir(parents=True)
    wheel = site / "nvidia/cu13/lib/libnvrtc.so.13"
    wheel.write_bytes(b"")
    info = site / "nvidia_cuda_nvrtc-13.0.77.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: x\nVersion: 13.0.77\n")
    assert library_build(wheel) == ""  # the wheel's RECORD does not list it
    (info / "RECORD").write_text("nvidia/cu13/lib/libnvrtc.so.13,sha256=x,1\n")
    assert library_build(wheel) == "13.0.77"


# --- with the real NVRTC and nvcc -------------------------------------------------------

NVCC = shutil.which("nvcc")


def _compiler(tmp_path: Path, mode: str, **options: object):  # -> Compiler
    from workbench.engine.compiler import Compiler

    return Compiler("sm_90a", cache_dir=tmp_path / f"cache-{mode}", nvrtc=mode,
                    **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def nvrtc_found() -> None:
    from workbench.engine.compiler import find_nvcc, nvcc_version

    if NVCC is None:
        pytest.skip("nvcc is not installed")
    nvcc = find_nvcc()
    if find_nvrtc(nvcc, nvcc_version(nvcc), "on") is None:
        pytest.skip("no libnvrtc of nvcc's release (pip install nvidia-cuda-nvrtc)")


@dataclass(frozen=True)
class Src:
    name: str
    entry: str
    source: str
    hash: str


KERNEL = """\
#include <cuda_bf16.h>
#include "scale.cuh"
extern "C" __global__ void scale_kernel(__nv_bfloat16* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(__bfloat162float(x[i]) * SCALE);
}
"""


def test_nvrtc_compiles_with_the_kernel_folders_header(tmp_path: Path,
                                                        nvrtc_found: None) -> None:
    folder = tmp_path / "kernel"
    folder.mkdir()
    (folder / "scale.cuh").write_text("#define SCALE 3.0f\n")
    fast = _compiler(tmp_path, "on", include_dir=folder)
    slow = _compiler(tmp_path, "off", include_dir=folder)
    a = fast.compile(Src("scale", "scale_kernel", KERNEL, "h1")).raise_for_error()
    b = slow.compile(Src("scale", "scale_kernel", KERNEL, "h1")).raise_for_error()
    assert (a.compiler, b.compiler) == ("nvrtc", "nvcc")
    assert a.usage == b.usage and a.usage is not None and a.usage.regs_per_thread > 0
    assert Path(str(a.cubin_path)).read_bytes()[:4] == b"\x7fELF"
    # The backend keys the cache and the provenance: no entry is shared between the two.
    assert a.cache_key != b.cache_key
    assert fast.version.startswith(slow.version) and "\nnvrtc 13." in fast.version
    assert fast.backend is not None and fast.backend.build.startswith("13.0.")
    again = fast.compile(Src("scale", "scale_kernel", KERNEL, "h2"))
    assert again.cached and again.compiler == "nvrtc" and again.instance_hash == "h2"


def test_what_nvrtc_refuses_is_compiled_by_nvcc(tmp_path: Path, nvrtc_found: None) -> None:
    """NVRTC does not define __NVCC__ (nvcc's host pass does): the source compiles only
    with nvcc, and the result says so."""
    source = "#ifndef __NVCC__\n#error needs nvcc\n#endif\n" + KERNEL.replace(
        '#include "scale.cuh"\n', "#define SCALE 2.0f\n")
    result = _compiler(tmp_path, "on").compile(Src("s", "scale_kernel", source, "h"))
    assert result.ok and result.compiler == "nvcc"
    assert "needs nvcc" not in result.log


SHARED_KERNEL = """\
extern "C" __global__ void tile_kernel(float* x, int n) {
  __shared__ float tile[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? x[i] : 0.f;
  __syncthreads();
  if (i < n) x[i] = tile[blockDim.x - 1 - threadIdx.x];
}
"""


def test_on_leaves_shared_memory_kernels_to_nvcc_and_all_takes_them(
        tmp_path: Path, nvrtc_found: None) -> None:
    """NVRTC's shared-memory addressing differs from nvcc's (test_nvrtc_same_code.py): with
    ``on`` such a kernel is nvcc's, with ``all`` NVRTC's; the two settings never share a
    cache entry."""
    on, every = _compiler(tmp_path, "on"), _compiler(tmp_path, "all")
    a = on.compile(Src("t", "tile_kernel", SHARED_KERNEL, "h")).raise_for_error()
    b = every.compile(Src("t", "tile_kernel", SHARED_KERNEL, "h")).raise_for_error()
    assert (a.compiler, b.compiler) == ("nvcc", "nvrtc")
    assert a.cache_key != b.cache_key and on.version != every.version
    assert "kernels without shared memory" in on.version and "every kernel" in every.version


def test_on_checks_nvrtcs_ptx_for_shared_memory_the_source_does_not_name(
        tmp_path: Path, nvrtc_found: None) -> None:
    """No ``__shared__`` in the source, but a shared-window conversion in its PTX: nvcc."""
    source = ('extern "C" __global__ void cvta_kernel(float* x) {\n'
              '  x[threadIdx.x] = (float)__cvta_generic_to_shared(x + threadIdx.x);\n}\n')
    result = _compiler(tmp_path, "on").compile(Src("c", "cvta_kernel", source, "h"))
    assert result.ok and result.compiler == "nvcc"
    assert not list((tmp_path / "cache-on").rglob("kernel.ptx"))


def test_a_source_error_reads_as_nvccs(tmp_path: Path, nvrtc_found: None) -> None:
    source = KERNEL.replace('#include "scale.cuh"\n', "#define SCALE 2.0f\n").replace(
        "int i =", "int i = undefined_name +")
    fast = _compiler(tmp_path, "on").compile(Src("s", "scale_kernel", source, "h"))
    slow = _compiler(tmp_path, "off").compile(Src("s", "scale_kernel", source, "h"))
    assert not fast.ok and fast.compiler == "nvcc"
    assert (fast.error_kind, fast.error_line, fast.error_summary) == (
        slow.error_kind, slow.error_line, slow.error_summary) == (
        "syntax", 4, slow.error_summary)
    assert "undefined_name" in fast.error_summary


def test_the_child_runs_under_the_sandbox_limits(tmp_path: Path, nvrtc_found: None) -> None:
    """With 64 MiB of address space the library cannot even be mapped: the child fails
    (and the Compiler would hand the instance to nvcc)."""
    from workbench.engine.compiler import find_nvcc, nvcc_version

    nvcc = find_nvcc()
    found = find_nvrtc(nvcc, nvcc_version(nvcc), "on")
    assert found is not None
    (tmp_path / "source.cu").write_text(KERNEL.replace('#include "scale.cuh"\n',
                                                       "#define SCALE 2.0f\n"))
    options = nvrtc_options(BASE)
    assert options is not None
    tight = run_nvrtc(found, options, tmp_path, source="source.cu", cubin="k.cubin",
                      limits=SandboxLimits(address_space_bytes=64 << 20), timeout_s=60)
    assert tight.returncode != 0 and not (tmp_path / "k.cubin").exists()
    roomy = run_nvrtc(found, options, tmp_path, source="source.cu", cubin="k.cubin",
                      limits=SandboxLimits(), timeout_s=60)
    assert roomy.returncode == 0 and (tmp_path / "k.cubin").is_file()
    assert "ptxas info    : Used" in roomy.log


def test_a_library_path_that_is_not_nvrtc_is_refused_with_its_name(tmp_path: Path,
                                                                   nvrtc_found: None) -> None:
    from workbench.engine.compiler import find_nvcc, nvcc_version

    nvcc = find_nvcc()
    fake = tmp_path / "libnvrtc.so.13"
    fake.write_bytes(b"not a library")
    with pytest.raises(CompilerNotFoundError) as info:
        find_nvrtc(nvcc, nvcc_version(nvcc), str(fake))
    assert info.value.details["value"] == str(fake)
    assert "not a loadable libnvrtc" in info.value.message

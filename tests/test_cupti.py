"""The CUPTI kernel clock's parts that run without a GPU: record offsets against CUDA's own
header, decoding, and finding (or clearly failing to find) libcupti. The clock itself runs
in ``tests/gpu`` on the GPU machine."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from workbench.engine import cupti

pytestmark = pytest.mark.timeout(60)


def _cuda_include() -> Path | None:
    nvcc = shutil.which("nvcc")
    roots = [Path(nvcc).resolve().parents[1]] if nvcc else []
    roots += [Path("/usr/local/cuda")]
    for root in roots:
        if (root / "include" / "cupti_activity.h").is_file():
            return root / "include"
    return None


@pytest.mark.skipif(_cuda_include() is None or shutil.which("gcc") is None,
                    reason="CUDA's CUPTI headers or gcc are not installed")
def test_record_offsets_match_cuda_13_headers(tmp_path: Path) -> None:
    src = tmp_path / "offsets.c"
    src.write_text("""
#include <stdio.h>
#include <stddef.h>
#include <cupti_activity.h>
int main(void) {
  printf("%zu %zu %zu %zu %zu %zu %d %d %d %d\\n",
         offsetof(CUpti_ActivityKernel10, start), offsetof(CUpti_ActivityKernel10, end),
         offsetof(CUpti_ActivityKernel10, name), offsetof(CUpti_ActivityMemcpy6, copyKind),
         offsetof(CUpti_ActivityMemcpy6, start), offsetof(CUpti_ActivityMemcpy6, end),
         (int)CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, (int)CUPTI_ACTIVITY_KIND_MEMCPY,
         (int)CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, (int)CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  return 0;
}
""")
    exe = tmp_path / "offsets"
    subprocess.run(["gcc", f"-I{_cuda_include()}", str(src), "-o", str(exe)], check=True,
                   capture_output=True, timeout=60)
    got = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True,
                                          text=True, timeout=10).stdout.split()]
    assert got == [cupti.KERNEL_START_OFFSET, cupti.KERNEL_END_OFFSET, cupti.KERNEL_NAME_OFFSET,
                   cupti.MEMCPY_COPY_KIND_OFFSET, cupti.MEMCPY_START_OFFSET,
                   cupti.MEMCPY_END_OFFSET, cupti.KIND_CONCURRENT_KERNEL, cupti.KIND_MEMCPY,
                   cupti.MEMCPY_DTOD, cupti.FLUSH_FORCED]


def test_kernel_and_copy_records_decode_to_name_and_timestamps() -> None:
    kernel = bytearray(cupti.KERNEL_NAME_OFFSET + 8)
    struct.pack_into("<I", kernel, 0, cupti.KIND_CONCURRENT_KERNEL)
    struct.pack_into("<QQ", kernel, cupti.KERNEL_START_OFFSET, 1_000_000, 1_004_250)
    struct.pack_into("<Q", kernel, cupti.KERNEL_NAME_OFFSET, 0xDEADBEEF)
    names = {0xDEADBEEF: "silu_and_mul_kernel"}
    assert cupti.decode_record(cupti.KIND_CONCURRENT_KERNEL, bytes(kernel), names.__getitem__) \
        == ("silu_and_mul_kernel", 1_000_000, 1_004_250)
    copy = bytearray(cupti.MEMCPY_END_OFFSET + 8)
    copy[cupti.MEMCPY_COPY_KIND_OFFSET] = cupti.MEMCPY_DTOD
    struct.pack_into("<QQ", copy, cupti.MEMCPY_START_OFFSET, 7, 9)
    assert cupti.decode_record(cupti.KIND_MEMCPY, bytes(copy), names.__getitem__) == \
        (cupti.DTOD_COPY, 7, 9)
    copy[cupti.MEMCPY_COPY_KIND_OFFSET] = 1  # host to device: not a DtoD copy
    assert cupti.decode_record(cupti.KIND_MEMCPY, bytes(copy), names.__getitem__)[0] == \
        "<memcpy 1>"
    assert cupti.decode_record(99, bytes(copy), names.__getitem__) == (None, 0, 0)
    assert cupti.ActivityRecord("k", 1_000_000, 1_004_250).duration_us == pytest.approx(4.25)


def test_a_missing_library_is_an_error_naming_every_path_tried(tmp_path: Path) -> None:
    not_a_lib = tmp_path / "libcupti.so.13"
    not_a_lib.write_text("not an ELF file")
    with pytest.raises(cupti.CuptiError) as info:
        cupti.load_library([str(tmp_path / "absent.so"), str(not_a_lib)])
    text = str(info.value)
    assert "absent.so" in text and str(not_a_lib) in text and "WORKBENCH_CUPTI_LIB" in text
    with pytest.raises(cupti.CuptiError, match="nothing found"):
        cupti.load_library([])


def test_the_environment_variable_is_tried_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_CUPTI_LIB", "/opt/somewhere/libcupti.so")
    assert cupti.library_candidates()[0] == "/opt/somewhere/libcupti.so"


def test_an_installed_cuda_13_libcupti_loads_and_reports_its_version() -> None:
    candidates = [c for c in cupti.library_candidates() if Path(c).is_file()]
    if not candidates:
        pytest.skip("no libcupti on this machine")
    _, path, version = cupti.load_library(candidates)
    assert Path(path).name.startswith("libcupti.so")
    assert version >= cupti.MIN_API_VERSION

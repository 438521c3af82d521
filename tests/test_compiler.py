"""The offline compiler: ptxas report parsing, failure classification, nvcc runs, the cache.

Parser tests read output captured from real nvcc 13.0 runs; the compile tests run the real
nvcc (skipped where it is not installed). Fakes are real executables on disk: a slow
"nvcc" to time out, a wrapper that counts calls to the real one.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.core.errors import CompileError, CompilerNotFoundError
from workbench.engine.compiler import Compiler, CompileResult, compile_many, find_nvcc
from workbench.engine.ptxas import (
    classify_failure,
    entry_usage,
    find_entry,
    parse_ptxas_report,
)

# --- captured output (nvcc 13.0, `-cubin -O3 -Xptxas -v --std=c++17`) ----------------

# sm_90a: an entry with static shared memory and a stack frame (a local array in a
# __noinline__ helper), a second entry, and the helper's own report.
PTXAS_SM90 = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'other' for 'sm_90a'
ptxas info    : Function properties for other
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 0 barriers
ptxas info    : Compile time = 14.905 ms
ptxas info    : Compiling entry function 'my_kernel' for 'sm_90a'
ptxas info    : Function properties for my_kernel
    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 34 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem
ptxas info    : Compile time = 7.527 ms
ptxas info    : Function properties for _Z6helperf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
"""

# sm_80 with -maxrregcount=32: spills, kernel parameters in cmem[0], __constant__ in cmem[3].
PTXAS_SM80_SPILLS = """\
ptxas info    : Overriding maximum register limit 256 for 'spilly' with  32 of maxrregcount option
ptxas info    : 0 bytes gmem, 256 bytes cmem[3]
ptxas info    : Compiling entry function 'spilly' for 'sm_80'
ptxas info    : Function properties for spilly
    600 bytes stack frame, 888 bytes spill stores, 888 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 600 bytes cumulative stack size, 368 bytes cmem[0]
ptxas info    : Compile time = 38.622 ms
"""

# sm_80: a C++ template kernel (mangled name).
PTXAS_SM80_MANGLED = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z5scaleILi64EEvPf' for 'sm_80'
ptxas info    : Function properties for _Z5scaleILi64EEvPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 256 bytes smem, 360 bytes cmem[0]
ptxas info    : Compile time = 3.144 ms
"""


def test_parse_every_function_in_the_report() -> None:
    reports = parse_ptxas_report(PTXAS_SM90)
    assert list(reports) == ["other", "my_kernel", "_Z6helperf"]
    mine = reports["my_kernel"]
    assert (mine.is_entry, mine.arch, mine.regs_per_thread, mine.static_smem_bytes,
            mine.stack_frame_bytes) == (True, "sm_90a", 34, 1024, 256)
    assert reports["other"].regs_per_thread == 10 and reports["other"].static_smem_bytes == 0
    assert not reports["_Z6helperf"].is_entry


def test_entry_usage_picks_the_entry_block() -> None:
    usage = entry_usage(PTXAS_SM90, "other")
    assert usage is not None and (usage.regs_per_thread, usage.stack_frame_bytes) == (10, 0)
    assert entry_usage(PTXAS_SM90, "missing") is None


def test_parse_spills_and_constant_memory() -> None:
    usage = entry_usage(PTXAS_SM80_SPILLS, "spilly")
    assert usage is not None
    assert (usage.regs_per_thread, usage.stack_frame_bytes, usage.spill_store_bytes,
            usage.spill_load_bytes, usage.const_bytes) == (32, 600, 888, 888, 368)
    assert usage.spills


def test_find_entry_accepts_a_mangled_name() -> None:
    report = find_entry(parse_ptxas_report(PTXAS_SM80_MANGLED), "scale")
    assert report is not None and report.name == "_Z5scaleILi64EEvPf"
    assert (report.regs_per_thread, report.static_smem_bytes, report.const_bytes) == (10, 256, 360)
    assert find_entry(parse_ptxas_report(PTXAS_SM80_MANGLED), "scal") is None


@pytest.mark.parametrize(("log", "kind", "file", "line"), [
    ("template.cu(2): error: identifier \"undefined_thing\" is undefined\n    out[0] = x;\n"
     "\n1 error detected in the compilation of \"source.cu\".", "syntax", "template.cu", 2),
    ("template.cu:1:10: fatal error: nonexistent.h: No such file or directory\n"
     "compilation terminated.", "syntax", "template.cu", 1),
    ("ptxas fatal   : Unresolved extern function '_Z3extf'", "syntax", None, None),
    ("ptxas error   : Entry function 'big' uses too much shared data (0x4b000 bytes, 0x38c00 max)\n"
     "ptxas info    : 0 bytes gmem\nptxas info    : Used 12 registers, used 1 barriers, "
     "307200 bytes smem", "resource", None, None),
    ("ptxas error   : File uses too much global constant data (0x13880 bytes, 0x10000 max)",
     "resource", None, None),
    ("nvcc fatal   : Unsupported gpu architecture 'compute_10'", "internal", None, None),
    ("", "internal", None, None),
])
def test_classify_failure(log: str, kind: str, file: str | None, line: int | None) -> None:
    diagnosis = classify_failure(log)
    assert (diagnosis.kind, diagnosis.file, diagnosis.line) == (kind, file, line)
    if log:
        assert diagnosis.summary and diagnosis.summary in log


# --- real nvcc ------------------------------------------------------------------------

def _nvcc_or_skip() -> Path:
    try:
        return find_nvcc()
    except CompilerNotFoundError:
        pytest.skip("nvcc is not installed")


@dataclass(frozen=True)
class Instance:
    """Stands in for workbench.core.template.KernelInstance (the fields the compiler reads)."""

    name: str
    entry: str
    source: str

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()[:16]


def render(body: str, entry: str = "k", **defines: int) -> Instance:
    """Like the template renderer: a #define block, then #line 1 "template.cu"."""
    head = "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items()))
    return Instance("test", entry, f'{head}#line 1 "template.cu"\n{body}')


SCALE = """\
extern "C" __global__ void k(float* out, const float* in, int n) {
  __shared__ float tile[BLOCK];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = tile[(threadIdx.x + 1) % BLOCK] * FACTOR;
}
"""


@pytest.fixture
def compiler(tmp_path: Path) -> Compiler:
    return Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=_nvcc_or_skip())


def _counting_nvcc(tmp_path: Path, real: Path) -> tuple[Path, Path]:
    """An executable 'nvcc' that appends a line per compile to a file, then runs the real one."""
    count_file = tmp_path / "nvcc-calls.txt"
    script = tmp_path / "bin" / "nvcc"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = "--version" ] || echo call >> "{count_file}"\n'
        f'exec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, count_file


def _calls(count_file: Path) -> int:
    return len(count_file.read_text().splitlines()) if count_file.exists() else 0


def test_compile_reports_the_entry_usage(compiler: Compiler) -> None:
    result = compiler.compile(render(SCALE, BLOCK=256, FACTOR=3))
    assert result.ok and result.error_kind is None and not result.cached
    assert result.cubin_path is not None and Path(result.cubin_path).stat().st_size > 0
    assert result.usage is not None
    assert result.usage.static_smem_bytes == 256 * 4  # the tile
    assert 0 < result.usage.regs_per_thread <= 255
    assert result.usage == entry_usage(result.log, "k")
    assert result.log_path is not None and Path(result.log_path).read_text() == result.log
    assert result.source_path is not None and "#define BLOCK 256" in Path(
        result.source_path).read_text()
    assert result.compile_s > 0 and result.arch == "sm_90a"


def test_static_shared_memory_overflow_is_a_resource_error(compiler: Compiler) -> None:
    body = SCALE.replace("tile[BLOCK]", "tile[300 * 1024 / 4]")
    result = compiler.compile(render(body, BLOCK=256, FACTOR=1))
    assert not result.ok and result.error_kind == "resource"
    assert "uses too much shared data" in result.error_summary
    assert result.cubin_path is None and result.usage is None
    with pytest.raises(CompileError) as caught:
        result.raise_for_error()
    assert caught.value.details["kind"] == "resource"
    assert caught.value.details["log_path"] == result.log_path


def test_syntax_error_points_at_the_authors_line(compiler: Compiler) -> None:
    body = SCALE.replace("in[i] : 0.0f", "in[i] : undefined_zero")  # line 4 of template.cu
    result = compiler.compile(render(body, BLOCK=128, FACTOR=2))
    assert not result.ok and result.error_kind == "syntax"
    assert (result.error_file, result.error_line) == ("template.cu", 4)
    assert "undefined_zero" in result.error_summary


def test_a_macro_in_pragma_unroll_gets_what_to_write_instead(compiler: Compiler) -> None:
    """nvcc reads a constant expression after #pragma unroll and does not expand a macro
    there ("identifier FACTOR is undefined"); the summary says what to write instead, and
    that spelling compiles."""
    loop = "  #pragma unroll FACTOR\n  for (int r = 0; r < 8; ++r) tile[threadIdx.x] += 1.0f;\n"
    body = SCALE.replace("  __syncthreads();\n", loop + "  __syncthreads();\n")
    result = compiler.compile(render(body, BLOCK=128, FACTOR=2))
    assert not result.ok and result.error_kind == "syntax"
    assert "`constexpr int k_FACTOR = FACTOR;` and `#pragma unroll (k_FACTOR)`" in \
        result.error_summary
    fixed = body.replace("  #pragma unroll FACTOR\n",
                         "  constexpr int k_FACTOR = FACTOR;\n  #pragma unroll (k_FACTOR)\n")
    assert compiler.compile(render(fixed, BLOCK=128, FACTOR=2)).ok
    other = SCALE.replace("in[i] : 0.0f", "in[i] : undefined_zero")  # no pragma: no hint
    assert "pragma" not in compiler.compile(render(other, BLOCK=128, FACTOR=2)).error_summary


def test_missing_entry_function_is_reported(compiler: Compiler) -> None:
    result = compiler.compile(Instance("t", "not_there", render(SCALE, BLOCK=64, FACTOR=1).source))
    assert not result.ok and result.error_kind == "syntax"
    assert "'not_there'" in result.error_summary and "k" in result.error_summary


def test_cache_hit_does_not_run_nvcc(tmp_path: Path) -> None:
    fake, count_file = _counting_nvcc(tmp_path, _nvcc_or_skip())
    instance = render(SCALE, BLOCK=128, FACTOR=5)
    first = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=fake).compile(instance)
    assert first.ok and not first.cached and _calls(count_file) == 1
    # a new Compiler (a new process, say) over the same cache directory
    second = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=fake).compile(instance)
    assert second.cached and _calls(count_file) == 1
    assert (second.ok, second.usage, second.cubin_path, second.log) == (
        first.ok, first.usage, first.cubin_path, first.log)
    assert second.compile_s < first.compile_s


def test_source_errors_are_cached_but_timeouts_are_not(tmp_path: Path) -> None:
    fake, count_file = _counting_nvcc(tmp_path, _nvcc_or_skip())
    compiler = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=fake)
    bad = render("extern \"C\" __global__ void k() { nope(); }")
    first, second = compiler.compile(bad), compiler.compile(bad)
    assert (first.error_kind, second.error_kind, second.cached) == ("syntax", "syntax", True)
    assert second.error_line == first.error_line == 1
    assert _calls(count_file) == 1


def test_cache_keys_differ_by_arch_and_flags(tmp_path: Path) -> None:
    nvcc = _nvcc_or_skip()
    instance = render(SCALE, BLOCK=64, FACTOR=1)
    keys = {
        Compiler("sm_90a", cache_dir=tmp_path, nvcc=nvcc).cache_key(instance),
        Compiler("sm_80", cache_dir=tmp_path, nvcc=nvcc).cache_key(instance),
        Compiler("sm_90a", cache_dir=tmp_path, nvcc=nvcc, flags=("-DEXTRA=1",)).cache_key(instance),
        Compiler("sm_90a", cache_dir=tmp_path, nvcc=nvcc, lineinfo=False).cache_key(instance),
        Compiler("sm_90a", cache_dir=tmp_path, nvcc=nvcc).cache_key(render(SCALE, BLOCK=64,
                                                                          FACTOR=2)),
    }
    assert len(keys) == 5
    same = Compiler("sm_90a", cache_dir=tmp_path / "other", nvcc=nvcc).cache_key(instance)
    assert same in keys


def test_compile_many_compiles_in_parallel_and_once_per_key(tmp_path: Path) -> None:
    fake, count_file = _counting_nvcc(tmp_path, _nvcc_or_skip())
    instances = [render(SCALE, BLOCK=b, FACTOR=f) for b in (64, 128, 256) for f in (1, 2)]
    instances.append(render(SCALE, BLOCK=64, FACTOR=1))  # a duplicate of the first
    seen: list[CompileResult] = []
    results = list(compile_many(instances, "sm_90a", workers=2, on_result=seen.append,
                                cache_dir=tmp_path / "cache", nvcc=fake))
    assert len(results) == 7 and seen == results
    assert all(r.ok for r in results)
    assert sorted(r.instance_hash for r in results) == sorted(i.hash for i in instances)
    assert _calls(count_file) == 6
    smem = {r.instance_hash: r.usage.static_smem_bytes for r in results if r.usage}
    assert smem[render(SCALE, BLOCK=256, FACTOR=2).hash] == 1024
    assert not list((tmp_path / "cache" / "tmp").iterdir())  # no work directory left behind


def test_parallel_compiles_of_one_instance_publish_one_entry(tmp_path: Path) -> None:
    nvcc = _nvcc_or_skip()
    instance = render(SCALE, BLOCK=32, FACTOR=7)
    results: list[CompileResult] = []

    def work() -> None:
        results.append(Compiler("sm_90a", cache_dir=tmp_path, nvcc=nvcc).compile(instance))

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and all(r.ok for r in results)
    assert len({r.cubin_path for r in results}) == 1
    entries = [p for p in tmp_path.glob("??/*") if p.is_dir()]
    assert len(entries) == 1 and sorted(p.name for p in entries[0].iterdir()) == [
        "compile.log", "kernel.cubin", "result.json", "source.cu"]


@pytest.mark.timeout(60)
def test_timeout_kills_the_compiler_process_group(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "child.pid"
    slow = tmp_path / "bin" / "nvcc"
    slow.parent.mkdir()
    # a stand-in nvcc that starts a long child (as nvcc starts cicc/ptxas) and waits on it
    slow.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "--version" ]; then echo "slow nvcc 0.0"; exit 0; fi\n'
        f'sleep 30 &\necho $! > "{pid_file}"\nwait\n')
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    compiler = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvcc=slow)
    started = time.perf_counter()
    result = compiler.compile(render(SCALE, BLOCK=64, FACTOR=1), timeout_s=0.5)
    assert time.perf_counter() - started < 10
    assert not result.ok and result.error_kind == "timeout"
    assert "did not finish within 0.5 s" in result.log
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the compiler's child process survived the timeout"
    # a timeout is not cached: the next call runs the compiler again
    assert not compiler.compile(render(SCALE, BLOCK=64, FACTOR=1), timeout_s=0.3).cached


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_missing_nvcc_says_how_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # a folder without nvcc
    with pytest.raises(CompilerNotFoundError) as caught:
        Compiler("sm_90a", cache_dir=tmp_path / "cache")
    message = str(caught.value)
    assert "cuda-nvcc" in message and "CUDA_HOME" in message
    assert "conda-forge" in caught.value.details["hint"]


def test_find_nvcc_prefers_cuda_home(tmp_path: Path) -> None:
    def fake_nvcc(folder: Path) -> Path:
        path = folder / "bin" / "nvcc"
        path.parent.mkdir(parents=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
        return path

    home, cuda_path, on_path = (fake_nvcc(tmp_path / n) for n in ("home", "cudapath", "path"))
    path_var = str(on_path.parent)
    assert find_nvcc({"CUDA_HOME": str(tmp_path / "home"), "PATH": path_var}) == home
    assert find_nvcc({"CUDA_PATH": str(tmp_path / "cudapath"), "PATH": path_var}) == cuda_path
    assert find_nvcc({"CUDA_HOME": str(tmp_path / "nothing"), "PATH": path_var}) == on_path
    with pytest.raises(CompilerNotFoundError) as caught:
        find_nvcc({"CUDA_HOME": str(tmp_path / "nothing"), "PATH": os.devnull})
    assert str(tmp_path / "nothing" / "bin" / "nvcc") in caught.value.details["searched"]


def test_compile_result_round_trips(compiler: Compiler) -> None:
    result = compiler.compile(render(SCALE, BLOCK=512, FACTOR=1))
    assert CompileResult.from_dict(result.to_dict()) == result

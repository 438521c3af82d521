"""The persistent NVRTC child: one child answers many requests, a deadline or a limit ends
it with a typed result and a fresh one serves the next request, threads get children of
their own, and close() (or the interpreter's exit) ends them.

Every test runs the real NVRTC (the ``nvidia-cuda-nvrtc`` wheel or the toolkit's) in the
real sandboxed child, and is skipped where it is missing.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from workbench.core.errors import CompilerNotFoundError
from workbench.engine import nvrtc as nvrtc_module
from workbench.engine.nvrtc import (
    NVRTC_TIMEOUT_MARKER,
    ChildPool,
    Nvrtc,
    child_key,
    find_nvrtc,
    nvrtc_options,
    run_nvrtc,
)
from workbench.engine.sandbox import DEFAULT_LIMITS, SandboxLimits, SandboxRun, limit_hit

pytestmark = pytest.mark.timeout(300)

FLAGS = ("-cubin", "-arch=sm_90a", "-O3", "-Xptxas", "-v", "--std=c++17")
KERNEL = """\
#include <cuda_bf16.h>
#include "scale.cuh"
extern "C" __global__ void scale_kernel(__nv_bfloat16* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2bfloat16(__bfloat162float(x[i]) * SCALE);
}
"""


def _spin_kernel(count: int) -> str:
    """A kernel whose front end spends CPU time: ``count`` constexpr loops of 200,000."""
    body = "".join(f"  {{ constexpr long v = spin({200_000 + i}L); x[{i}] = v; }}\n"
                   for i in range(count))
    return ("__host__ __device__ constexpr long spin(long n) {\n"
            "  long s = 0; for (long i = 0; i < n; ++i) s += i % 7; return s; }\n"
            f'extern "C" __global__ void spin_kernel(long* x) {{\n{body}}}\n')


@pytest.fixture(scope="module")
def library() -> Nvrtc:
    from workbench.engine.compiler import find_nvcc, nvcc_version

    try:
        nvcc = find_nvcc()
    except CompilerNotFoundError:
        pytest.skip("nvcc is not installed")
    found = find_nvrtc(nvcc, nvcc_version(nvcc), "all")
    if found is None:
        pytest.skip("no libnvrtc of nvcc's release (pip install nvidia-cuda-nvrtc)")
    return found


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChildPool]:
    """A pool of this test's own, ended after it."""
    own = ChildPool()
    monkeypatch.setattr(nvrtc_module, "CHILDREN", own)
    yield own
    own.close()


@dataclass(frozen=True)
class Job:
    """One request's work directory and what it compiles."""

    work: Path
    scale: str | None  # the header's SCALE (None: no header; the options may define it)

    @classmethod
    def make(cls, root: Path, name: str, scale: str | None = "2.0f",
             source: str = KERNEL) -> Job:
        work = root / name
        work.mkdir()
        (work / "source.cu").write_text(source)
        if scale is not None:
            (work / "scale.cuh").write_text(f"#define SCALE {scale}\n")
        return cls(work, scale)


def _compile(library: Nvrtc, job: Job, *, limits: SandboxLimits = DEFAULT_LIMITS,
             timeout_s: float = 120, extra: tuple[str, ...] = (),
             cubin: str = "k.cubin") -> SandboxRun:
    options = nvrtc_options((*FLAGS, *extra))
    assert options is not None
    return run_nvrtc(library, options, job.work, source="source.cu", cubin=cubin,
                     limits=limits, timeout_s=timeout_s)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"


def test_one_child_answers_many_requests_each_in_its_own_folder(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    """The same child compiles request after request; each finds its own header and writes
    its own cubin and log, and the CPU limit applies per request: the child spends more CPU
    in all than the limit of one (1 s) and is not stopped."""
    limits = SandboxLimits(cpu_s=1)
    key = child_key(library, limits)
    pids: set[int] = set()
    for index in range(40):
        job = Job.make(tmp_path, f"r{index}", scale=f"{index + 1}.0f",
                       source=_spin_kernel(2) if index % 2 else KERNEL)
        done = _compile(library, job, limits=limits)
        assert done.returncode == 0 and not done.timed_out, done.log
        assert (job.work / "k.cubin").read_bytes()[:4] == b"\x7fELF"
        assert "ptxas info    : Used" in done.log
        assert not (job.work / nvrtc_module.OUTPUT_FILE).exists()  # read and removed
        pids.update(pool.pids(key))
        if index >= 3 and _cpu_seconds(next(iter(pids))) > 2 * limits.cpu_s:
            break
    assert len(pids) == 1
    assert _cpu_seconds(pids.pop()) > 2 * limits.cpu_s


def test_options_and_headers_do_not_carry_to_the_next_request(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    """A macro given to one request is unknown to the next, which has no header for it."""
    with_macro = Job.make(tmp_path, "a", scale=None,
                          source=KERNEL.replace('#include "scale.cuh"\n', ""))
    first = _compile(library, with_macro, extra=("-DSCALE=3.0f",))
    assert first.returncode == 0, first.log
    without = Job.make(tmp_path, "b", scale=None,
                       source=KERNEL.replace('#include "scale.cuh"\n', ""))
    second = _compile(library, without)
    assert second.returncode == 1 and "SCALE" in second.log and "undefined" in second.log
    assert not (without.work / "k.cubin").exists()
    headerless = Job.make(tmp_path, "c", scale=None)  # includes scale.cuh: a's is not seen
    third = _compile(library, headerless)
    assert third.returncode == 1 and "scale.cuh" in third.log
    assert len(pool.pids(child_key(library, DEFAULT_LIMITS))) == 1


def test_a_request_past_its_deadline_kills_the_child_and_the_next_gets_a_new_one(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    key = child_key(library, DEFAULT_LIMITS)
    assert _compile(library, Job.make(tmp_path, "warm")).returncode == 0
    [before] = pool.pids(key)
    late = _compile(library, Job.make(tmp_path, "late", source=_spin_kernel(40)),
                    timeout_s=0.5)
    assert late.timed_out and late.returncode == -signal.SIGKILL
    assert f"{NVRTC_TIMEOUT_MARKER} 0.5 s and was killed" in late.log
    assert pool.pids(key) == [] and not _alive(before)
    after = _compile(library, Job.make(tmp_path, "after"))
    assert after.returncode == 0 and not after.timed_out, after.log
    assert pool.pids(key) not in ([], [before])


def test_a_request_past_the_cpu_limit_ends_as_that_limit(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    limits = SandboxLimits(cpu_s=1)
    assert _compile(library, Job.make(tmp_path, "warm"), limits=limits).returncode == 0
    done = _compile(library, Job.make(tmp_path, "spin", source=_spin_kernel(40)),
                    limits=limits)
    assert done.returncode == -signal.SIGXCPU and not done.timed_out
    assert limit_hit(done.returncode, done.log, limits) == (
        "the compiler used more than the CPU-time limit of 1 s")
    assert _compile(library, Job.make(tmp_path, "next"), limits=limits).returncode == 0


def test_the_compiler_reports_a_deadline_as_a_timeout(tmp_path: Path,
                                                      library: Nvrtc) -> None:
    """Through the Compiler, a request past its deadline is the typed timeout it was with a
    one-shot child (NVRTC's failure goes to nvcc, which is killed at the same deadline)."""
    from workbench.engine.compiler import Compiler

    @dataclass(frozen=True)
    class Src:
        name: str
        entry: str
        source: str
        hash: str

    compiler = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvrtc="all", timeout_s=0.3)
    try:
        result = compiler.compile(Src("spin", "spin_kernel", _spin_kernel(40), "h"))
    finally:
        compiler.close()
    assert not result.ok and result.error_kind == "timeout"
    assert "did not finish within 0.3 s" in result.error_summary


def test_a_crash_is_reported_for_its_request_and_the_next_is_unaffected(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    """A cubin path into a missing folder makes the child fail unexpectedly: it ends,
    printing the traceback into that request's log; the next request gets a new child."""
    key = child_key(library, DEFAULT_LIMITS)
    assert _compile(library, Job.make(tmp_path, "warm")).returncode == 0
    [before] = pool.pids(key)
    crash = _compile(library, Job.make(tmp_path, "crash"), cubin="missing/k.cubin")
    assert crash.returncode == 4 and not crash.timed_out
    assert "FileNotFoundError" in crash.log and "ended without answering" in crash.log
    assert not _alive(before)
    after = _compile(library, Job.make(tmp_path, "after"))
    assert after.returncode == 0, after.log
    assert "FileNotFoundError" not in after.log and "ended without" not in after.log


def test_a_child_killed_while_idle_is_replaced_without_failing_a_request(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    key = child_key(library, DEFAULT_LIMITS)
    assert _compile(library, Job.make(tmp_path, "warm")).returncode == 0
    [before] = pool.pids(key)
    os.kill(before, signal.SIGKILL)
    os.waitid(os.P_PID, before, os.WEXITED | os.WNOWAIT)  # dead before the next request
    after = _compile(library, Job.make(tmp_path, "after"))
    assert after.returncode == 0, after.log
    assert pool.pids(key) not in ([], [before])


def _in_threads(library: Nvrtc, jobs: list[Job]) -> list[SandboxRun]:
    start = threading.Barrier(len(jobs))
    results: dict[int, SandboxRun] = {}

    def one(index: int) -> None:
        start.wait()
        results[index] = _compile(library, jobs[index])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [results[i] for i in range(len(jobs))]


def test_two_threads_compile_at_once_with_two_children(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    done = _in_threads(library, [Job.make(tmp_path, "a"), Job.make(tmp_path, "b")])
    assert [d.returncode for d in done] == [0, 0]
    assert len(set(pool.pids(child_key(library, DEFAULT_LIMITS)))) == 2


def test_the_pool_bound_makes_a_third_caller_wait_for_a_free_child(
        tmp_path: Path, library: Nvrtc, monkeypatch: pytest.MonkeyPatch) -> None:
    bounded = ChildPool(limit=1)
    monkeypatch.setattr(nvrtc_module, "CHILDREN", bounded)
    try:
        done = _in_threads(library, [Job.make(tmp_path, n) for n in ("a", "b", "c")])
        assert [d.returncode for d in done] == [0, 0, 0]
        assert len(bounded.pids(child_key(library, DEFAULT_LIMITS))) == 1
    finally:
        bounded.close()


def test_close_ends_the_idle_children_and_those_in_use_when_they_come_back(
        tmp_path: Path, library: Nvrtc, pool: ChildPool) -> None:
    key = child_key(library, DEFAULT_LIMITS)
    _in_threads(library, [Job.make(tmp_path, "a"), Job.make(tmp_path, "b")])
    idle = pool.pids(key)
    busy = pool.take(key, tmp_path)  # one in use while the pool closes
    assert pool.close() == 1 and not _alive(idle[0]) and _alive(busy.pid)
    pool.give_back(key, busy, alive=True)
    assert not _alive(busy.pid) and pool.pids(key) == []
    assert _compile(library, Job.make(tmp_path, "again")).returncode == 0  # on demand


def test_compiler_close_ends_its_children(tmp_path: Path, library: Nvrtc,
                                          pool: ChildPool) -> None:
    from workbench.engine.compiler import Compiler

    @dataclass(frozen=True)
    class Src:
        name: str
        entry: str
        source: str
        hash: str

    folder = tmp_path / "kernel"
    folder.mkdir()
    (folder / "scale.cuh").write_text("#define SCALE 2.0f\n")
    compiler = Compiler("sm_90a", cache_dir=tmp_path / "cache", nvrtc="all",
                        include_dir=folder)
    result = compiler.compile(Src("s", "scale_kernel", KERNEL, "h")).raise_for_error()
    assert result.compiler == "nvrtc"
    assert compiler.backend is not None
    [pid] = pool.pids(child_key(compiler.backend, compiler.limits))
    compiler.close()
    assert not _alive(pid) and pool.pids(child_key(compiler.backend, compiler.limits)) == []


#: A process that compiles once with the real pool, prints its child's pid and exits.
_EXIT_SCRIPT = (
    "import os, sys\n"
    "from pathlib import Path\n"
    "from workbench.engine import nvrtc\n"
    "from workbench.engine.compiler import find_nvcc, nvcc_version\n"
    "from workbench.engine.sandbox import DEFAULT_LIMITS\n"
    "found = nvrtc.find_nvrtc(find_nvcc(), nvcc_version(find_nvcc()), 'all')\n"
    f"options = nvrtc.nvrtc_options({FLAGS!r})\n"
    "done = nvrtc.run_nvrtc(found, options, Path(sys.argv[1]), source='source.cu',\n"
    "                       cubin='k.cubin', limits=DEFAULT_LIMITS, timeout_s=120)\n"
    "assert done.returncode == 0, done.log\n"
    "print(*nvrtc.CHILDREN.pids(nvrtc.child_key(found, DEFAULT_LIMITS)), flush=True)\n")


def test_the_interpreters_exit_ends_the_children(tmp_path: Path, library: Nvrtc) -> None:
    (tmp_path / "source.cu").write_text(KERNEL.replace('#include "scale.cuh"\n',
                                                       "#define SCALE 2.0f\n"))
    script = _EXIT_SCRIPT
    ran = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, timeout=240, check=True)
    [pid] = [int(word) for word in ran.stdout.split()]
    assert not _alive(pid)


def test_a_child_whose_parent_dies_without_atexit_ends_on_its_own(tmp_path: Path,
                                                                  library: Nvrtc) -> None:
    """A Dask worker killed outright runs no atexit: its children see their stdin close and
    leave their loop (they never outlive the process they serve)."""
    (tmp_path / "source.cu").write_text(KERNEL.replace('#include "scale.cuh"\n',
                                                       "#define SCALE 2.0f\n"))
    script = _EXIT_SCRIPT + "os._exit(0)  # no atexit, as a SIGKILLed worker\n"
    ran = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, timeout=240, check=True)
    [pid] = [int(word) for word in ran.stdout.split()]
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already gone
    try:
        ended = select.select([handle], [], [], 60)[0]  # readable once the process exits
    finally:
        os.close(handle)
    assert ended, f"the child {pid} outlived its parent by 60 s"


def test_a_forked_process_leaves_the_parents_children_to_it(tmp_path: Path,
                                                            library: Nvrtc) -> None:
    """After a fork (a multiprocessing worker), the copy starts with no children and closes
    its copy of their pipes, so the parent's close still ends them at once (exit status 0:
    they saw their stdin close, not the kill that follows a 2 s wait)."""
    pool = nvrtc_module.CHILDREN  # the process's own: its fork handler is registered
    key = child_key(library, DEFAULT_LIMITS)
    assert _compile(library, Job.make(tmp_path, "warm")).returncode == 0
    [child] = pool._idle[key][-1:]
    hold_read, hold_write = os.pipe()
    report_read, report_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the copy: report what it sees, then stay until the parent is done
        os.close(hold_write)
        os.write(report_write, b"empty" if pool.pids(key) == [] else b"inherited")
        os.read(hold_read, 1)
        os._exit(0)
    os.close(hold_read)
    try:
        assert os.read(report_read, 16) == b"empty"
        pool.close(key)
        assert child.process.returncode == 0
    finally:
        os.close(hold_write)
        os.waitpid(pid, 0)
        os.close(report_read)
        os.close(report_write)

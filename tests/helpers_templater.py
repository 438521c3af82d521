"""Shared pieces of the offline templater's tests: the template a lift describes, and the
host simulation that runs a rendered kernel with g++."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers_session_cache import flags_key, shared_output

from workbench.core.params import parameter_from_dict
from workbench.core.template import KernelTemplate
from workbench.core.write_policy import write_file
from workbench.templater import LiftedSource


def lifted_template(lifted: LiftedSource, entry: str = "k") -> KernelTemplate:
    """The kernel template ``lifted`` describes, named after its entry point ``entry``."""
    return KernelTemplate.build(
        name=entry, source=lifted.source, entry=entry,
        params=[parameter_from_dict(p.name, dict(p.spec)) for p in lifted.params],
        constraints=list(lifted.constraints), grid=list(lifted.grid), block=list(lifted.block))


def end_configs(template: KernelTemplate, env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The valid configs at ``env`` with every parameter at one end of its values (first
    parameter's ends slowest, as ``itertools.product`` walks them)."""
    space = template.space(dict(env))
    ends = [(p.values()[0], p.values()[-1]) for p in template.params]
    valid = [dict(zip(template.param_names, combo, strict=True))
             for combo in itertools.product(*ends)]
    return [c for c in valid if space.rejection(c) is None]


def corner_configs(template: KernelTemplate, env: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The default, then the first and the last of :func:`end_configs`."""
    valid = end_configs(template, env)
    return [dict(template.default_config()), valid[0], valid[-1]]


#: ``WORKBENCH_FULL_MATRIX=1`` runs every config a host-simulation or compile test lists;
#: the default run checks the first and the last of them (each list starts at the default or
#: the first all-ends corner and ends at the last corner or a config flipping every knob), so
#: every spelling is still simulated at both ends of its space on every run.
FULL_MATRIX = os.environ.get("WORKBENCH_FULL_MATRIX") == "1"


def host_sample(configs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``configs`` under ``WORKBENCH_FULL_MATRIX=1``, else its first and last (once each)."""
    listed = [dict(c) for c in configs]
    if FULL_MATRIX or len(listed) <= 2:
        return listed
    first, last = listed[0], listed[-1]
    return [first] if first == last else [first, last]


def host_configs(template: KernelTemplate, env: Mapping[str, Any],
                    mixes: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
    """The default, each of ``mixes`` over the default, and the all-ends configs (their
    first and last without ``WORKBENCH_FULL_MATRIX=1``: :func:`host_sample`), each once and
    each asserted inside the space."""
    space = template.space(env)
    default = dict(template.default_config())
    ends = end_configs(template, env)
    assert ends, "no all-ends config is valid"
    out: list[dict[str, Any]] = []
    for config in [default, *({**default, **m} for m in mixes), *host_sample(ends)]:
        assert space.rejection(config) is None, (config, space.rejection(config))
        if config not in out:
            out.append(config)
    return out


def rotating_sample(configs: Sequence[Mapping[str, Any]], index: int,
                    keep: int = 1) -> list[dict[str, Any]]:
    """``configs`` under ``WORKBENCH_FULL_MATRIX=1``; else its first ``keep`` (the default,
    and whatever else each spelling must meet) and one of the rest, the ``index``-th in turn:
    a test parametrized over N spellings, passing each spelling's position, checks every
    listed config on some spelling in each run while N is at least the number of the rest
    (:func:`assert_rotation_covers`)."""
    listed = [dict(c) for c in configs]
    if FULL_MATRIX or len(listed) <= keep + 1:
        return listed
    kept = listed[:keep]
    rest = [c for c in listed[keep:] if c not in kept]
    return [*kept, rest[index % len(rest)]] if rest else kept


def assert_rotation_covers(spellings: int, configs: Sequence[Mapping[str, Any]],
                           keep: int = 1) -> None:
    """Fails when ``spellings`` rotating over ``configs`` (:func:`rotating_sample`) would leave
    one of the configs after the first ``keep`` unchecked in the default run."""
    assert spellings >= len(configs) - keep, (
        f"{spellings} spellings rotate over {len(configs) - keep} configs: some never run; "
        "list fewer configs or keep more a spelling")


# -- host simulation of a CUDA launch ------------------------------------------------------

COOPERATIVE_BLOCK = r"""
#include <ucontext.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>
struct wb_dim3 { unsigned x, y, z; };
extern wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
void wb_yield();
static void __syncthreads() { wb_yield(); }
#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __ldg(p) (*(p))
#define __restrict__
using std::min;
using std::max;
void wb_launch(wb_dim3 grid, wb_dim3 block, std::function<void()> body);
"""
"""C++ that runs a CUDA kernel on the host: every thread of a block a coroutine,
``__syncthreads`` (and ``wb_yield``) a switch back to the scheduler, so shared memory and
barriers behave as on the GPU; ``wb_launch(grid, block, body)`` runs ``body`` as each thread
of each block in turn. Paste the kernel after it, then a ``main`` that calls ``wb_launch``.
It declares the scheduler; :func:`run_on_host` links a program holding it with
:data:`COOPERATIVE_RUNTIME`."""

COOPERATIVE_RUNTIME = COOPERATIVE_BLOCK + r"""
#include <cstdint>
#include <cstdlib>
wb_dim3 threadIdx, blockIdx, blockDim, gridDim;
// A switch between two coroutines. glibc's swapcontext also saves and restores the signal
// mask, one rt_sigprocmask system call a switch: 99.9 % of a barrier-heavy program's system
// time. On x86-64 a switch is this routine instead: push the callee-saved registers, keep
// the stack pointer, load the other's, pop its registers and return into it (the SysV ABI
// leaves every other register to the caller; the kernels never change MXCSR or the x87
// control word). Elsewhere ucontext does it, as before.
#if defined(__x86_64__)
extern "C" void wb_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .p2align 4
  .globl wb_switch
  .type wb_switch, @function
wb_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size wb_switch, .-wb_switch
)");
struct wb_context { void* sp; };
static void wb_swap(wb_context* from, wb_context* to) { wb_switch(&from->sp, to->sp); }
static void wb_thread_main();
// A fresh thread's stack, as wb_switch leaves a suspended one: six registers (zero) under
// the address it returns to, wb_thread_main, entered as if called (its return slot, never
// used, keeps the ABI's 16-byte alignment at entry).
static void wb_start(wb_context* c, char* stack, size_t bytes) {
  uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top) - 2;
  sp[0] = reinterpret_cast<void*>(&wb_thread_main);
  sp[1] = nullptr;
  sp -= 6;
  for (int r = 0; r < 6; ++r) sp[r] = nullptr;
  c->sp = sp;
}
#else
struct wb_context { ucontext_t uc; };
static void wb_swap(wb_context* from, wb_context* to) { swapcontext(&from->uc, &to->uc); }
static void wb_thread_main();
static void wb_start(wb_context* c, char* stack, size_t bytes) {
  getcontext(&c->uc);
  c->uc.uc_stack.ss_sp = stack;
  c->uc.uc_stack.ss_size = bytes;
  c->uc.uc_link = nullptr;
  makecontext(&c->uc, wb_thread_main, 0);
}
#endif
static wb_context wb_sched, *wb_cur;
static bool wb_finished;
void wb_yield() { wb_swap(wb_cur, &wb_sched); }
static std::function<void()> wb_body;
// A thread runs the kernel, then hands back to the scheduler for good (never resumed).
static void wb_thread_main() {
  wb_body();
  wb_finished = true;
  wb_swap(wb_cur, &wb_sched);
  std::abort();
}
static const size_t wb_stack_bytes = 1 << 16;
// Every thread's stack, kept from launch to launch: malloc'd, not a zero-filled vector, so
// only the pages a thread touches (its top few KiB) are ever faulted in.
static char* wb_stacks;
static size_t wb_stacks_bytes;
void wb_launch(wb_dim3 grid, wb_dim3 block, std::function<void()> body) {
  wb_body = body; gridDim = grid; blockDim = block;
  const unsigned n = block.x * block.y * block.z;
  std::vector<wb_context> ctx(n);
  if (wb_stacks_bytes < n * wb_stack_bytes) {
    std::free(wb_stacks);
    wb_stacks_bytes = n * wb_stack_bytes;
    wb_stacks = static_cast<char*>(std::malloc(wb_stacks_bytes));
  }
  std::vector<char> done(n);
  for (unsigned bz = 0; bz < grid.z; ++bz)
  for (unsigned by = 0; by < grid.y; ++by)
  for (unsigned bx = 0; bx < grid.x; ++bx) {
    blockIdx = {bx, by, bz};
    for (unsigned i = 0; i < n; ++i) {
      wb_start(&ctx[i], wb_stacks + i * wb_stack_bytes, wb_stack_bytes);
      done[i] = 0;
    }
    unsigned left = n;
    while (left) {
      for (unsigned i = 0; i < n; ++i) {
        if (done[i]) continue;
        threadIdx = {i % block.x, i / block.x % block.y, i / (block.x * block.y)};
        wb_cur = &ctx[i];
        wb_finished = false;
        wb_swap(&wb_sched, &ctx[i]);
        if (wb_finished) { done[i] = 1; --left; }
      }
    }
  }
}
"""
"""The scheduler :data:`COOPERATIVE_BLOCK` declares, compiled once a run into an object
(:func:`_cooperative_runtime`) that every host program holding the block links: about half
of each host compile was this code generated again (0.2 s of g++ CPU a program)."""


#: g++'s options for every host program (a precompiled header is used only under the same).
#: the host tier's mark: a test that compiles a kernel for the CPU with g++
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="needs g++ for the host runs")

HOST_GXX_FLAGS = ("-O1", "-w")

#: How host programs are linked: with gold where binutils has it (0.04 s of CPU a program
#: against ld.bfd's 0.12 s; the same objects and libraries, so the same program).
HOST_LINK_FLAGS = ("-fuse-ld=gold",) if shutil.which("ld.gold") else ()

def _opening_includes(program: str) -> str:
    """The ``#include <...>`` lines ``program`` opens with (blank lines before them skipped)."""
    lines = program.lstrip("\n").splitlines()
    opening = list(itertools.takewhile(lambda line: line.startswith("#include <"), lines))
    return "\n".join(opening)


def precompiled_header(includes: str, flags: tuple[str, ...] = ()) -> str:
    """The path of a header holding ``includes`` (``#include`` lines) with its .gch beside
    it, built with :data:`HOST_GXX_FLAGS` and ``flags`` once a test run and shared by the
    xdist workers (tests/helpers_session_cache.py; g++ takes a .gch built elsewhere and
    renamed into place). ``-include`` it with the same flags; g++ falls back to the header's
    text where the .gch does not fit (time, never meaning). A build is about 1.7 s of g++
    CPU: once a run instead of once a worker."""
    def build(folder: Path) -> None:
        folder.mkdir()
        header = write_file(folder, folder / "wb_host_headers.h", includes + "\n")
        subprocess.run(["g++", *HOST_GXX_FLAGS, *flags, "-x", "c++-header", "-o",
                        f"{header}.gch", str(header)], check=True, capture_output=True,
                       timeout=120)

    folder = shared_output("gxx-pch", [*HOST_GXX_FLAGS, *flags, includes], build)
    return str(folder / "wb_host_headers.h")


def _precompiled_header(program: str, flags: tuple[str, ...]) -> tuple[str, ...]:
    """``-include HEADER`` for a precompiled header of exactly the ``#include`` lines
    ``program`` opens with, built with the same flags (:func:`precompiled_header`); () when
    it opens with none or ``flags`` already include a header. The program's own includes of
    the same headers, in the same order, then read nothing new (include guards), so it
    compiles to what it did without. Half of a host program's compile was parsing these
    standard headers again."""
    includes = _opening_includes(program)
    if not includes or "-include" in flags:
        return ()
    return ("-include", precompiled_header(includes, flags))


def _cooperative_runtime() -> Path:
    """:data:`COOPERATIVE_RUNTIME` compiled to an object file, once a test run."""
    def compile_to(obj: Path) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            cpp = write_file(Path(tmp), Path(tmp) / "wb_runtime.cpp", COOPERATIVE_RUNTIME)
            subprocess.run(["g++", *HOST_GXX_FLAGS, "-c", "-o", str(obj), str(cpp)],
                           check=True, capture_output=True, timeout=120)

    return shared_output("gxx-obj", [*HOST_GXX_FLAGS, COOPERATIVE_RUNTIME], compile_to)


def run_on_host(work: Path, name: str, program: str, *, flags: tuple[str, ...] = (),
                run_timeout_s: int = 120) -> str:
    """Compile ``program`` (C++) with g++ -O1, written to ``work`` as ``name``.cpp, run it,
    and return what it printed (the compile and the run must succeed). The standard headers
    it opens with come precompiled (:func:`_precompiled_header`); a program holding
    :data:`COOPERATIVE_BLOCK` links the scheduler compiled once (:func:`_cooperative_runtime`);
    a program this test run compiled before with the same flags is not compiled again
    (tests/helpers_session_cache.py), but every call runs it."""
    cpp = write_file(work, work / f"{name}.cpp", program, overwrite=True)
    links = (str(_cooperative_runtime()),) if COOPERATIVE_BLOCK in program else ()

    def compile_to(exe: Path) -> None:
        pch = _precompiled_header(program, flags)
        subprocess.run(["g++", *HOST_GXX_FLAGS, *HOST_LINK_FLAGS, *flags, *pch, "-o", str(exe),
                        str(cpp), *links], check=True, capture_output=True, timeout=120)

    exe = shared_output("gxx-exe", [*HOST_GXX_FLAGS, *HOST_LINK_FLAGS, *flags_key(flags),
                                    program, *links], compile_to)
    done = subprocess.run([str(exe)], check=True, capture_output=True, text=True,
                          timeout=run_timeout_s)
    return done.stdout


# -- several host runs, one compile -------------------------------------------------------

_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)", re.MULTILINE)
_MAIN = "\nint main() {\n"
_MARK = "--wb-run-end--"


def merged_program(prefix: str, programs: Sequence[str]) -> str:
    """One C++ program that does what each of ``programs`` does, in turn, printing a mark
    line after each. Each must open with ``prefix`` (kept once) and hold one ``int main()
    {``; the rest of each goes in a namespace of its own with ``main`` renamed and
    ``extern "C"`` dropped (one C name a program), every macro it defines undefined after
    it, so no program sees another's macros, names or constants."""
    parts, calls = [prefix], []
    for i, program in enumerate(programs):
        assert program.startswith(prefix), f"program {i} does not open with the prefix"
        rest = program[len(prefix):]
        assert rest.count(_MAIN) == 1, f"program {i} holds {rest.count(_MAIN)} mains"
        undefs = "".join(f"#undef {m}\n" for m in dict.fromkeys(_DEFINED.findall(rest)))
        body = rest.replace('extern "C" ', "").replace(_MAIN, "\nint wb_main() {\n")
        parts.append(f"namespace wb_p{i} {{\n{body}\n}}\n{undefs}")
        calls.append(f"  wb_p{i}::wb_main(); std::printf(\"{_MARK}\\n\");\n")
    return "".join([*parts, "int main() {\n", *calls, "  return 0;\n}\n"])


def run_merged_on_host(work: Path, name: str, prefix: str,
                       programs: Sequence[str]) -> list[str]:
    """What each of ``programs`` prints, from one compile and run of
    :func:`merged_program`."""
    printed = run_on_host(work, name, merged_program(prefix, programs)).split(f"{_MARK}\n")
    assert printed[-1] == "" and len(printed) == len(programs) + 1, printed[-1][-300:]
    return printed[:-1]

"""Session 35 (bits): CTZ (workbench/templater/bitloops.py), a loop stripping factors of two
one bit a round as one shift by the count of trailing zeros. The corpus kernel is set 28's
gcd_binary_pairs (Stein's binary gcd: a common-factor loop with a counter, two odd-making
loops); tests/spellings_s35_bits/ holds two respellings of it (the corpus folder's
kernel.toml and reference.py come with :func:`held_back_harness.respelled`): inline in the
kernel with ``% 2``, ``!(.. & 1u)``, ``/= 2`` and a ``for`` with no initializer; 64-bit
through pointer-taking helpers with a bit-scan counting helper and a ``for (;;)``.
collatz_steps (set 16) halves one step at a time under an ``if`` (no loop stripping twos):
nothing to read there, and no note."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import held_back_unseen28 as held
import pytest
from held_back_harness import default_and_mix, respelled, same_as_written
from helpers_templater import end_configs, needs_gxx
from test_corpus_unseen3 import (
    host_flags,  # noqa: F401  (the session fixture: precompiled host headers)
)

from workbench.core.kernel_folder import KernelFolder, load_kernel_folder
from workbench.core.template import KernelTemplate
from workbench.templater import lift_kernel, offline_template

SPELLINGS = Path(__file__).resolve().parent / "spellings_s35_bits"
CORPUS = "gcd_binary_pairs"
#: spelling -> the knobs it lifts, a mix of them checked on the host
CASES: dict[str, tuple[set[str], dict[str, int]]] = {
    "gcd_pairs_inline_mod2": (
        {"BLOCK_THREADS", "ITEMS_PER_THREAD", "CTZ", "BRANCHLESS", "MIN_BLOCKS_PER_SM"},
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "CTZ": 1, "BRANCHLESS": 1}),
    "gcd_pairs_u64_bitscan": (
        {"BLOCK_THREADS", "ITEMS_PER_THREAD", "CHECK_EVERY", "ANY_BRANCH", "CTZ", "BRANCHLESS",
         "MIN_BLOCKS_PER_SM"},
        {"BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "CTZ": 1, "BRANCHLESS": 1}),
}
#: Host forms of the bit built-ins CTZ = 1 uses (the device's bit reverse, leading zeros).
HOST_EXTRAS = r"""
static inline unsigned __brev(unsigned x) {
  unsigned r = 0; for (int k = 0; k < 32; ++k) r |= ((x >> k) & 1u) << (31 - k); return r; }
static inline unsigned long long __brevll(unsigned long long x) {
  unsigned long long r = 0;
  for (int k = 0; k < 64; ++k) r |= ((x >> k) & 1ull) << (63 - k); return r; }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline int __clzll(unsigned long long x) { return x ? __builtin_clzll(x) : 64; }
"""


def _host(source: str) -> str:
    return held.SET.host_source(HOST_EXTRAS + source)


def _folder(spelling: str, root: Path) -> KernelFolder:
    return respelled(held.SET.root / CORPUS, root, (SPELLINGS / f"{spelling}.cu").read_text())


def _ctz_notes(notes: tuple[str, ...]) -> list[str]:
    return [n for n in notes if n.startswith("CTZ:")]


def test_the_corpus_kernel_lifts_ctz_for_its_three_loops() -> None:
    lifted = offline_template(held.SET.folder(CORPUS)).lifted
    assert {p.name for p in lifted.params} == {
        "BLOCK_THREADS", "ITEMS_PER_THREAD", "CTZ", "MIN_BLOCKS_PER_SM"}, lifted.notes
    assert _ctz_notes(lifted.notes) == [
        "CTZ: applied: `u | v`'s trailing zeros (32-bit) in one shift of u, v, counted in "
        "shift (line 19)",
        "CTZ: applied: `u`'s trailing zeros (32-bit) in one shift of u (line 24)",
        "CTZ: applied: `v`'s trailing zeros (32-bit) in one shift of v (line 29)"]
    assert "WB_CTZ32(u | v)" in lifted.source and "shift += wb_tz0;" in lifted.source


def test_collatz_has_no_loop_stripping_twos() -> None:
    kf = load_kernel_folder(held.SET.root.parent / "corpus_compute_unseen16" / "collatz_steps")
    lifted = offline_template(kf).lifted
    assert "CTZ" not in {p.name for p in lifted.params} and not _ctz_notes(lifted.notes)


@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_lifts_ctz(spelling: str, tmp_path: Path) -> None:
    lifted = offline_template(_folder(spelling, tmp_path)).lifted
    assert {p.name for p in lifted.params} == CASES[spelling][0], lifted.notes
    assert all(n.startswith("CTZ: applied:") for n in _ctz_notes(lifted.notes)), lifted.notes
    assert len(_ctz_notes(lifted.notes)) == 3, lifted.notes


def _lift(body: str, params: str = "unsigned* out, const unsigned* x, int n"
          ) -> tuple[set[str], list[str], str]:
    source = (f'extern "C" __global__ void k({params}) {{\n'
              "  const int i = blockIdx.x * 128 + threadIdx.x;\n  if (i >= n) return;\n"
              f"{body}}}\n")
    lifted = lift_kernel(source, entry="k", grid=["(n + 127) / 128"], block=["128"],
                         scalars={"n": "n"})
    return {p.name for p in lifted.params}, _ctz_notes(lifted.notes), lifted.source


def test_a_signed_value_is_refused_with_its_line() -> None:
    names, notes, _ = _lift("  int v = x[i];\n  while ((v & 1) == 0) v >>= 1;\n"
                            "  out[i] = v;\n")
    assert "CTZ" not in names
    assert notes == ["CTZ: not applied: `v` is a signed `int` not shown non-negative: its first "
                     "value `x[i]` may be negative (a shift and a division by two differ on a "
                     "negative value) (line 5)"], notes


@pytest.mark.parametrize(("declared", "later", "bits"), [
    ("long long v = x[i];", "v = 3 * v + 1;", 64),  # a 32-bit unsigned value: it fits
    ("int v = x[i] & 0xffff;", "v = v * 2 + (v >> 3) % 7;", 32),
    ("int v = (unsigned short)x[i];", "v += 5;", 32)])
def test_a_signed_local_never_negative_lifts(declared: str, later: str, bits: int) -> None:
    names, notes, _ = _lift(f"  {declared}\n  int s = 0;\n"
                            "  while (v % 2 == 0) { v /= 2; s++; }\n"
                            f"  {later}\n  out[i] = (unsigned)v + s;\n")
    assert "CTZ" in names and notes == [
        f"CTZ: applied: `v`'s trailing zeros ({bits}-bit) in one shift of v, counted in s "
        "(line 6)"], notes


@pytest.mark.parametrize(("declared", "later", "why"), [
    ("long long v = x[i];", "v -= 3;", "`v -= 3` may make it negative"),
    ("int v = x[i];", "", "its first value `x[i]` may be negative"),
    ("int v = x[i] & 0xffff;", "int *p = &v; *p = -4;", "its address is taken (`&v`)"),
    ("long long v = x[i];", "v = 1u + v;", "`v = 1u + v` may make it negative")])
def test_a_signed_local_that_may_be_negative_is_refused(declared: str, later: str,
                                                         why: str) -> None:
    names, notes, _ = _lift(f"  {declared}\n  int s = 0;\n"
                            "  while (v % 2 == 0) { v /= 2; s++; }\n"
                            f"  {later}\n  out[i] = (unsigned)v + s;\n")
    assert "CTZ" not in names and len(notes) == 1 and why in notes[0], notes


def test_a_narrow_value_shifted_by_a_wide_count_is_refused() -> None:
    names, notes, _ = _lift("  unsigned long long w = x[i];\n  unsigned h = x[i];\n"
                            "  while (!(w & 1)) { w >>= 1; h >>= 1; }\n  out[i] = h + w;\n")
    assert "CTZ" not in names
    assert notes == ["CTZ: not applied: `h` is 32-bit while the count of `w` reaches 63: one "
                     "shift could pass its width (line 6)"], notes


def test_a_round_doing_more_than_halving_and_counting_is_refused() -> None:
    names, notes, _ = _lift("  unsigned v = x[i], s = 0;\n"
                            "  while (v % 2 == 0) { v >>= 1; s += 3; }\n  out[i] = v + s;\n")
    assert "CTZ" not in names
    assert notes == ["CTZ: not applied: a round runs `s += 3`, not a halving or a step by one "
                     "(line 5)"], notes


def test_a_loop_in_the_kernel_body_with_two_counters() -> None:
    names, notes, source = _lift("  unsigned v = x[i];\n  int s = 0;\n  unsigned t = 0;\n"
                                 "  for (; (v & 1u) == 0u; v = v >> 1) { s++; t = t + 1; }\n"
                                 "  out[i] = v + s + t;\n")
    assert "CTZ" in names, notes
    assert notes == ["CTZ: applied: `v`'s trailing zeros (32-bit) in one shift of v, counted "
                     "in s, t (line 7)"], notes
    assert "s += wb_tz0;" in source and "t += wb_tz0;" in source


def _corpus_configs(kf: KernelFolder, template: KernelTemplate) -> list[dict[str, Any]]:
    """The default, the all-ends corners' first and last, and the expert's pick's knobs."""
    ends = end_configs(template, kf.env(kf.check_shape, "fp32"))
    pick = {**template.default_config(), "BLOCK_THREADS": 64, "ITEMS_PER_THREAD": 2, "CTZ": 1}
    out: list[dict[str, Any]] = []
    for c in [dict(template.default_config()), ends[0], ends[-1], pick]:
        if c not in out:
            out.append(c)
    return out


@needs_gxx
@pytest.mark.timeout(1200)
def test_the_corpus_lift_computes_as_written(tmp_path: Path,
                                             host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = held.SET.folder(CORPUS)
    template = offline_template(kf).template
    configs = _corpus_configs(kf, template)
    assert {c["CTZ"] for c in configs} == {0, 1}
    assert same_as_written(kf, template, configs, _host, tmp_path, host_flags) == len(configs)


@needs_gxx
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("spelling", sorted(CASES))
def test_the_respelling_computes_as_written(spelling: str, tmp_path: Path,
                                            host_flags: tuple[str, ...]) -> None:  # noqa: F811
    kf = _folder(spelling, tmp_path / "folder")
    template = offline_template(kf).template
    configs = default_and_mix(template, kf, CASES[spelling][1])
    assert same_as_written(kf, template, configs, _host, tmp_path / "run", host_flags) == \
        len(configs)


@pytest.mark.parametrize("guard", ["v != 0u && ", "v && ", "0 != v && "])
def test_a_zero_guarded_loop_lifts_and_a_guard_of_another_value_does_not(guard: str) -> None:
    names, notes, _ = _lift(f"  unsigned v = x[i];\n  int s = 0;\n"
                            f"  while ({guard}(v & 1) == 0) {{ v >>= 1; ++s; }}\n"
                            "  out[i] = v + s;\n")
    assert "CTZ" in names and notes[0].startswith("CTZ: applied:"), notes
    names, notes, _ = _lift(f"  unsigned v = x[i], w = x[i + 1];\n  int s = 0;\n"
                            f"  while ({guard}((v | w) & 1) == 0) {{ v >>= 1; w >>= 1; ++s; }}\n"
                            "  out[i] = v + s + w;\n")
    assert "CTZ" not in names and not notes, notes


ALIASED = """__device__ void strip(unsigned& u, unsigned& v, int& s) {
  if ((u | v) == 0u) return;  // a return before the end: not inlined, the references stay
  while (((u | v) & 1u) == 0u) { u >>= 1; v >>= 1; ++s; }
}
__device__ void odd(unsigned& w) { while (!(w & 1u)) w >>= 1; }
extern "C" __global__ void k(unsigned* out, const unsigned* x, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  unsigned a = x[i], b = x[i];
  int s = 0;
  strip(a, a, s);
  odd(b);
  out[i] = a + b + s;
}
"""


def test_references_that_may_alias_are_refused_and_one_alone_is_not() -> None:
    lifted = lift_kernel(ALIASED, entry="k", grid=["(n + 127) / 128"], block=["128"],
                         scalars={"n": "n"})
    notes = _ctz_notes(lifted.notes)
    assert any(n.startswith("CTZ: not applied: `u` is a reference: it may name the object")
               for n in notes), notes
    assert any(n.startswith("CTZ: applied: `b`'s trailing zeros") for n in notes), notes
    # inlined at the call, the alias is seen: one variable stepped twice
    inlined = ALIASED.replace("  if ((u | v) == 0u) return;", "")
    lifted = lift_kernel(inlined, entry="k", grid=["(n + 127) / 128"], block=["128"],
                         scalars={"n": "n"})
    assert "CTZ: not applied: `a` is stepped twice a round (line 3)" in lifted.notes, \
        lifted.notes


BOUND = """__device__ void flip(int& w) {
  if (w > 100) return;  // a return before the end: not inlined, the reference stays
  w = -w;
}
extern "C" __global__ void k(unsigned* out, const unsigned* x, int n) {
  const int i = blockIdx.x * 128 + threadIdx.x;
  if (i >= n) return;
  int v = x[i] & 0xffff;
  flip(v);
  while ((v & 1) == 0) v >>= 1;
  out[i] = (unsigned)v;
}
"""


def test_a_signed_local_bound_to_a_reference_is_refused() -> None:
    lifted = lift_kernel(BOUND, entry="k", grid=["(n + 127) / 128"], block=["128"],
                         scalars={"n": "n"})
    notes = _ctz_notes(lifted.notes)
    assert "CTZ" not in {p.name for p in lifted.params}
    assert len(notes) == 1 and "`flip(v)` may write it through a reference" in notes[0], notes

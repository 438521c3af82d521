"""Namespace aliases: only an alias of the file's own namespace is opened (a header's
namespace, ``namespace cg = cooperative_groups;``, keeps its qualifier)."""

from __future__ import annotations

from workbench.templater.inline_namespaces import open_namespaces

_HEADER_ALIAS = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(float* y, int n) {
  cg::thread_block b = cg::this_thread_block();
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] *= 2.0f;
  b.sync();
}
"""

_OWN_ALIAS = """namespace geo {
__device__ float twice(float v) { return 2.0f * v; }
}
namespace g = geo;
extern "C" __global__ void k(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = g::twice(y[i]);
}
"""


def test_an_alias_of_a_header_namespace_keeps_its_qualifier() -> None:
    out, told = open_namespaces(_HEADER_ALIAS, "k", "k.cu")
    assert out == _HEADER_ALIAS
    assert told == ()


def test_an_alias_of_the_files_namespace_is_opened_with_it() -> None:
    out, told = open_namespaces(_OWN_ALIAS, "k", "k.cu")
    assert "g::" not in out and "namespace g" not in out and "namespace geo" not in out
    assert "y[i] = twice(y[i]);" in out
    assert len(out.splitlines()) == len(_OWN_ALIAS.splitlines())
    assert told and told[0].applied and "1 alias(es) dropped" in told[0].reason

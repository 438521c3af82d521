"""Two misreadings of tree-sitter's CUDA grammar that cuda_source repairs: a chain of
comparisons read as a template call (``r < h && c >= 0`` as ``r<h && c> = 0``), and a
``#pragma`` between a loop or ``if`` header and its brace-less body (the statement ended
early at a missing ``;``). Pure tests: the repaired tree is the one a C++ compiler reads,
every node's text is the source as written, and real template calls stay template calls.
"""

from __future__ import annotations

import pytest
from tree_sitter import Node

from workbench.core.cuda_source import CudaSource, parse_cuda

HEAD = 'extern "C" __global__ void k(float* o, const float* x, int h, int w, int n) {\n'


def kernel(body: str) -> tuple[CudaSource, Node]:
    source = parse_cuda(HEAD + body + "}\n", "k.cu")
    return source, source.body(source.kernel(None))  # kernel() refuses unread text


def of_type(source: CudaSource, node: Node, kind: str) -> list[Node]:
    return [n for n in source.walk(node) if n.type == kind]


def comparisons(source: CudaSource, node: Node) -> list[str]:
    out = []
    for n in of_type(source, node, "binary_expression"):
        op = n.child_by_field_name("operator")
        assert op is not None
        if source.node_text(op) in ("<", "<=", ">", ">="):
            out.append(" ".join(source.node_text(n).split()))
    return out


# Written as different people write a bounds test; each was read as a template call.
BOUNDS = {
    "ternary_rc": ("  int r = blockIdx.y, c = threadIdx.x;\n"
                   "  o[0] = (r >= 0 && r < h && c >= 0 && c < w) ? 1.0f : 0.0f;\n",
                   ["r >= 0", "r < h", "c >= 0", "c < w"]),
    "two_terms": ("  int r = blockIdx.y, c = threadIdx.x;\n"
                  "  float v = (r < h && c >= 0) ? x[r * w + c] : 0.0f;\n  o[0] = v;\n",
                  ["r < h", "c >= 0"]),
    "yy_xx_apron": ("  const int yy = (int)blockIdx.y - 1, xx = (int)threadIdx.x - 1;\n"
                    "  o[0] = (yy >= 0 && yy < h && xx >= 0 && xx < w && x[0] > 0.0f) "
                    "? x[yy * w + xx] : 0.0f;\n",
                    ["yy >= 0", "yy < h", "xx >= 0", "xx < w", "x[0] > 0.0f"]),
    "parameter_names": ("  o[0] = (n >= 0 && n < h && w >= 1) ? 2.0f : 0.0f;\n",
                        ["n >= 0", "n < h", "w >= 1"]),
}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_a_chain_of_comparisons_is_read_as_comparisons(name: str) -> None:
    body, expected = BOUNDS[name]
    source, node = kernel(body)
    assert not of_type(source, node, "template_function")
    assert not of_type(source, node, "template_argument_list")
    assert comparisons(source, node) == expected
    assert source.node_text(node) == "{\n" + body + "}"  # the text as written


def test_the_unrepaired_grammar_misreads_it() -> None:
    """The control: without the repair the grammar gives a template call (if this starts
    failing, the grammar was fixed and the repair may go)."""
    import tree_sitter_cuda
    from tree_sitter import Language, Parser

    body = BOUNDS["ternary_rc"][0]
    tree = Parser(Language(tree_sitter_cuda.language())).parse((HEAD + body + "}\n").encode())
    assert any(n.type == "template_function" for n in _all(tree.root_node))


def _all(node: Node) -> list[Node]:
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children)
    return out


def test_real_template_calls_stay_template_calls() -> None:
    source = parse_cuda("""
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
template <int N> __device__ float scale(float v) { return v * N; }
extern "C" __global__ void k(float* o, const float* x, int n) {
  int i = static_cast<int>(blockIdx.x) * 32 + threadIdx.x;
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  if (i < n && i >= 0) o[i] = scale<4>(x[i]) + tile.thread_rank();
}
""", "k.cu")
    body = source.body(source.kernel("k"))
    names = sorted(source.node_text(n.child_by_field_name("name"))  # type: ignore[arg-type]
                   for n in of_type(source, body, "template_function"))
    assert names == ["scale", "static_cast", "tiled_partition"]
    assert comparisons(source, body) == ["i < n", "i >= 0"]


PRAGMA_BODIES = {
    "for_statement": "  for (int t = 0; t < 8; ++t)\n#pragma unroll\n    acc += x[t];\n",
    "nested_for": ("  for (int t = 0; t < 8; ++t)\n  #pragma unroll 4\n"
                   "    for (int u = 0; u < 4; ++u) acc += x[t * 4 + u];\n"),
    "while_statement": "  int t = 0;\n  while (t < 8)\n#pragma unroll\n    acc += x[t++];\n",
    "if_statement": ("  if (n > 0)\n#pragma unroll 2\n"
                     "    for (int u = 0; u < 4; ++u) acc += x[u];\n"),
}


@pytest.mark.parametrize("name", sorted(PRAGMA_BODIES))
def test_a_pragma_before_a_braceless_body(name: str) -> None:
    body = "  float acc = 0.0f;\n" + PRAGMA_BODIES[name] + "  o[0] = acc;\n"
    source, node = kernel(body)
    kind = name if name != "nested_for" else "for_statement"
    outer = next(c for c in node.named_children if c.type == kind)
    inner = outer.child_by_field_name("body") or outer.child_by_field_name("consequence")
    assert inner is not None
    assert source.node_text(inner).startswith(("acc +=", "for (int u"))  # the real body
    assert "#pragma unroll" in source.node_text(outer)  # kept, as written
    assert next(source.node_text(c) for c in outer.children if c.type == "comment") \
        .startswith("#pragma unroll")
    # the statement after the loop is a sibling, not swallowed
    assert source.node_text(node.named_children[-1]) == "o[0] = acc;"


def test_a_pragma_after_else() -> None:
    body = ("  float acc = 0.0f;\n  if (n > 0) acc = 1.0f; else\n#pragma unroll\n"
            "    for (int u = 0; u < 4; ++u) acc += x[u];\n  o[0] = acc;\n")
    source, node = kernel(body)
    branch = next(c for c in node.named_children if c.type == "if_statement")
    alternative = branch.child_by_field_name("alternative")
    assert alternative is not None
    assert of_type(source, alternative, "for_statement")


def test_a_pragma_in_a_braced_body_is_left_a_directive() -> None:
    _source, node = kernel("  float acc = 0.0f;\n#pragma unroll\n"
                          "  for (int t = 0; t < 8; ++t) acc += x[t];\n  o[0] = acc;\n")
    assert [c.type for c in node.named_children][:3] == ["declaration", "preproc_call",
                                                         "for_statement"]

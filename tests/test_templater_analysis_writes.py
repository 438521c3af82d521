"""analysis.writer and analysis.write_target: the one home of "what writes this place" and
"which place does this assignment write" that the transforms share."""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import text, walk, write_target, writer

KERNEL = """
__global__ void k(float* a, float* b, int n) {
    int i = threadIdx.x;
    a[i] = b[i];
    (a[i + 1]) += b[i + 1];
    a[i + 2]++;
    --(a[i + 3]);
    float* p = &a[i + 4];
    float v = a[i + 5] * b[i + 2];
    b[i + 3] = (float)n;
    *p = v;
}
"""


def _body() -> Node:
    return parse_cuda(KERNEL, "k.cu").tree.root_node


def _subscript(spelled: str) -> Node:
    return next(n for n in walk(_body()) if n.type == "subscript_expression"
                and text(n) == spelled)


def test_writer_names_the_assignment_or_step_through_parentheses() -> None:
    assert text(writer(_subscript("a[i]"))) == "a[i] = b[i]"
    assert text(writer(_subscript("a[i + 1]"))) == "(a[i + 1]) += b[i + 1]"
    assert text(writer(_subscript("a[i + 2]"))) == "a[i + 2]++"
    assert text(writer(_subscript("a[i + 3]"))) == "--(a[i + 3])"


def test_writer_reads_right_sides_and_operands_as_reads() -> None:
    assert writer(_subscript("b[i]")) is None
    assert writer(_subscript("a[i + 5]")) is None
    assert writer(_subscript("b[i + 1]")) is None


def test_an_address_taken_is_a_write_only_when_asked() -> None:
    place = _subscript("a[i + 4]")
    assert writer(place) is None
    assert text(writer(place, address=True)) == "&a[i + 4]"


def test_write_target_unwraps_parentheses_and_names_none_for_other_nodes() -> None:
    writes = [n for n in walk(_body())
              if n.type in ("assignment_expression", "update_expression")]
    assert [text(write_target(n)) for n in writes] == [
        "a[i]", "a[i + 1]", "a[i + 2]", "a[i + 3]", "b[i + 3]", "*p"]
    assert write_target(_subscript("b[i]")) is None

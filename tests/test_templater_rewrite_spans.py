"""Rewriter: an edit over exactly a node's span is that node's text.

Two views of a span, both used by the families. ``text(node)`` is the node as the file renders
it: the last edit made over exactly its span, eager or lazy (a family that copies a term
another family replaced whole, as warp_chains' split loops copy LDG's ``WB_RO(*p)``, copies
the replacement). ``render(a, b)`` is what an edit over exactly ``[a, b)`` replaces: the bytes
with the edits inside them and the insertions at either end (a wrap of its own span renders
it; a hoist declares its name equal to it: conv_mix's ``const auto wb_v0 = img[...]``).
Inside a lazy edit's own ``make`` its span's text and render are what stood under that edit
(the edit made over it before, else the bytes with the edits inside), so wraps over one span
stack, the last outermost, and a wrap keeps an edit another family made over its span."""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.templater.analysis import text, walk
from workbench.templater.rewrite import Rewriter

SOURCE = "__global__ void k(const float* a, float* o, int i) { o[0] = a[i] + 2.0f; }\n"


def _setup() -> tuple[Rewriter, Node, Node, Node]:
    """The rewriter, the term ``a[i]``, its index ``i`` and the statement around them."""
    src = parse_cuda(SOURCE)
    body = src.body(src.kernels[0].name)
    term = next(n for n in walk(body) if n.type == "subscript_expression" and text(n) == "a[i]")
    index = next(n for n in walk(term) if n.type == "identifier" and text(n) == "i")
    stmt = next(n for n in walk(body) if n.type == "expression_statement")
    return Rewriter(src.data), term, index, stmt


def _span(rw: Rewriter, node: Node) -> str:
    return rw.render(node.start_byte, node.end_byte)


def test_an_eager_edit_of_exactly_the_span_is_its_text_and_not_its_render() -> None:
    rw, term, _index, stmt = _setup()
    rw.replace(term, "WB_RO(a[i])")
    assert rw.text(term) == "WB_RO(a[i])"
    assert _span(rw, term) == "a[i]"  # what the edit replaced
    assert rw.text(stmt) == _span(rw, stmt) == "o[0] = WB_RO(a[i]) + 2.0f;"


def test_a_lazy_edit_of_exactly_the_span_is_its_text_with_the_edits_inside() -> None:
    rw, term, index, stmt = _setup()
    a, b = term.start_byte, term.end_byte
    rw.replace_span(a, b, make=lambda r: f"WB_RO({r.render(a, b)})")
    rw.replace(index, "j")  # made after the wrap, still inside what it renders
    assert rw.text(term) == "WB_RO(a[j])"
    assert _span(rw, term) == "a[j]"
    assert rw.text(stmt) == "o[0] = WB_RO(a[j]) + 2.0f;"
    assert rw.render().count("WB_RO(") == 1


def test_a_copy_of_the_term_made_lazily_elsewhere_keeps_the_replacement() -> None:
    """warp_chains' shape: a lazy edit before the statement copies the term."""
    rw, term, _index, stmt = _setup()
    rw.replace_span(stmt.start_byte, stmt.start_byte,
                    make=lambda r: f"float copy = {r.text(term)};\n  ")
    rw.replace_span(term.start_byte, term.end_byte,
                    make=lambda r: f"WB_RO({r.render(term.start_byte, term.end_byte)})")
    assert _span(rw, stmt) == "float copy = WB_RO(a[i]);\n  o[0] = WB_RO(a[i]) + 2.0f;"


def test_edits_over_one_span_stack_the_last_outermost() -> None:
    rw, term, _index, stmt = _setup()
    rw.replace(term, "t[0]")
    rw.replace_span(term.start_byte, term.end_byte, make=lambda r: f"WB_RO({r.text(term)})")
    rw.replace_span(term.start_byte, term.end_byte, make=lambda r: f"({r.text(term)} * 2)")
    assert rw.text(term) == "(WB_RO(t[0]) * 2)"
    assert _span(rw, stmt) == "o[0] = (WB_RO(t[0]) * 2) + 2.0f;"
    rw.replace(term, f"[{rw.text(term)}]")  # an eager edit written over what stood
    assert _span(rw, stmt) == "o[0] = [(WB_RO(t[0]) * 2)] + 2.0f;"
    assert _span(rw, term) == "a[i]"


def test_a_wrap_that_renders_its_own_span_wraps_what_stood_under_it() -> None:
    """A wrap of its own span (warp_ldg's ``WB_RO(render)``) over a term another family
    replaced whole before keeps that family's edit inside it."""
    rw, term, _index, stmt = _setup()
    a, b = term.start_byte, term.end_byte
    rw.replace(term, "t[0]")
    rw.replace_span(a, b, make=lambda r: f"WB_RO({r.render(a, b)})")
    assert rw.text(term) == "WB_RO(t[0])"
    assert _span(rw, stmt) == "o[0] = WB_RO(t[0]) + 2.0f;"
    assert _span(rw, term) == "a[i]"  # outside the wrap's make: what the first edit replaced
    rw.replace_span(a, b, make=lambda r: f"({r.render(a, b)} * 2)")
    assert rw.text(term) == "(WB_RO(t[0]) * 2)"


def test_insertions_at_either_end_are_not_replacements() -> None:
    rw, term, _index, stmt = _setup()
    rw.insert(term.start_byte, "<")
    assert rw.text(term) == _span(rw, term) == "<a[i]"  # zero width: the bytes stay
    rw.replace(term, "v")
    rw.insert(term.end_byte, ">")
    assert _span(rw, term) == "<a[i]>"
    assert rw.text(term) == "v"
    assert _span(rw, stmt) == "o[0] = <v> + 2.0f;"


def test_an_edit_around_the_span_is_not_in_it() -> None:
    rw, term, index, stmt = _setup()
    rw.replace(stmt, "o[0] = 0.0f;")
    rw.replace(index, "j")
    assert rw.text(term) == _span(rw, term) == "a[j]"
    assert rw.text(stmt) == "o[0] = 0.0f;"

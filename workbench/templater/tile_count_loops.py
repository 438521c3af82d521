"""A loop over tile numbers read as the loop over tile starts it is, before the analysis
(issue 28: respell round 31, a staged walk counted by tiles).

``const int tiles = (n + T - 1) / T; for (int t = 0; t < tiles; ++t) { const int base = t *
T; ... }`` walks ``base = 0, T, 2T, ..`` while ``base < n``: ``t < ceil(n / T)`` holds
exactly where ``t * T < n`` (for every n: at ``n <= 0`` neither loop runs), so it is ``for
(int base = 0; base < n; base += T) { ... }`` written by a hand that counts tiles. The
staged walk (:mod:`.staged_walk`: JSPLIT, ITEMS) reads the loop over tile starts, and
refused the count ("the tile loop's bounds read tiles, a local"), so a kernel lifted or not
by which of the two it wrote.

Rewritten only where: the ``for`` starts its variable at 0 (declared there), tests ``t <
(E + T - 1) / T`` (or ``(E + (T - 1)) / T``, ``T - 1`` written as its value; directly or through a local declared once with that value and never
assigned; ``T`` any expression the pass reads as a positive integer constant, ``E`` any
expression that reads nothing the loop assigns), steps by one (``++t``, ``t++``, ``t +=
1``); the body is a block whose first statement declares one name, with the value ``t * T``
(or ``T * t``) of the same T, that the body never assigns; and the body reads ``t`` nowhere
else. The header becomes ``for (int base = 0; base < E; base += T)`` and the declaration
blank (the name keeps its type only where it is an ``int``: another type is left as written);
every line keeps its number.
"""

from __future__ import annotations

from tree_sitter import Node

from workbench.core.cuda_source import CudaSourceError, parse_cuda
from workbench.templater.analysis import binary, int_expr_value, single_values, strip, text, walk
from workbench.templater.analysis import integer_macros as reading_constants
from workbench.templater.inline_bind import declarator_name, statements
from workbench.templater.inline_calls import InlinedSource
from workbench.templater.macros import integer_macros
from workbench.templater.point_split import entry_body

_STEPS = ("++{v}", "{v}++", "{v} += 1", "{v}+=1")


def tile_count_loops(current: InlinedSource, entry: str | None) -> InlinedSource:
    """``current`` with each loop over tile numbers of ``entry``'s body written as the loop
    over tile starts (module doc); unchanged where there is none."""
    body = entry_body(current, entry)
    if body is None:
        return current
    values = single_values(body)
    edits: list[tuple[int, int, str]] = []
    with reading_constants(file_integers(current)):
        for loop in walk(body):
            if loop.type == "for_statement":
                edits += _rewrite(loop, values)
    return current.edited(edits) if edits else current


def file_integers(current: InlinedSource) -> dict[str, int]:
    """The file's integer macros and file-scope integer constants (``constexpr int kTile =
    256;``), as the analysis reads them."""
    try:
        source = parse_cuda(current.text, current.file)
    except CudaSourceError:
        return {}
    found = {m.name: m.value for m in integer_macros(source).values()}
    functions = [(n.start_byte, n.end_byte) for n in walk(source.tree.root_node)
                 if n.type == "function_definition"]
    for decl in walk(source.tree.root_node):
        if decl.type != "declaration" or any(a <= decl.start_byte < b
                                             for a, b in functions) or \
                not {"const", "constexpr"} & set(text(decl).split()):
            continue
        for d in decl.children_by_field_name("declarator"):
            with reading_constants(found):  # an earlier constant read too (kLd = kTile + 1)
                value = int_expr_value(d.child_by_field_name("value")) \
                    if d.type == "init_declarator" else None
            if value is not None:
                found[text(d.child_by_field_name("declarator"))] = value
    return found


def _rewrite(loop: Node, values: dict[str, Node]) -> list[tuple[int, int, str]]:
    init, cond = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    update, block = loop.child_by_field_name("update"), loop.child_by_field_name("body")
    if init is None or cond is None or update is None or block is None or \
            block.type != "compound_statement" or init.type != "declaration":
        return []
    decls = init.children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator" or \
            text(init.child_by_field_name("type")) != "int":
        return []
    var = text(decls[0].child_by_field_name("declarator"))
    if int_expr_value(decls[0].child_by_field_name("value")) != 0 or \
            " ".join(text(update).split()) not in {s.format(v=var) for s in _STEPS}:
        return []
    parts = binary(strip(cond))
    if parts is None or parts[1] != "<" or text(strip(parts[0])) != var:
        return []
    count = strip(parts[2])
    if count.type == "identifier" and values.get(text(count)) is not None:
        count = strip(values[text(count)])
    division = binary(count)
    if division is None or division[1] != "/":
        return []
    tile = int_expr_value(division[2])
    extent = _rounded_up(division[0], tile) if tile is not None and tile > 0 else None
    if extent is None or tile is None:
        return []
    first = next(iter(statements(block)), None)
    start = _start(first, var, tile)
    if first is None or start is None:
        return []
    name = text(start)
    reads = [n for n in walk(block) if n.type == "identifier" and text(n) == var]
    assigned = {text(strip(n.child_by_field_name("left") or n)) for n in walk(loop)
                if n.type == "assignment_expression"} | \
        {text(strip(n.child_by_field_name("argument") or n)) for n in walk(loop)
         if n.type == "update_expression" and n != update}
    inside = {text(n) for n in walk(extent) if n.type == "identifier"}
    if len(reads) != 1 or name in assigned or var in assigned or inside & (assigned | {name}):
        return []
    step = text(division[2])
    head = f"int {name} = 0; {name} < {text(extent)}; {name} += {step}"
    return [(init.start_byte, update.end_byte, head),
            (first.start_byte, first.end_byte, "\n" * text(first).count("\n"))]


def _rounded_up(node: Node, tile: int) -> Node | None:
    """E of ``E + T - 1`` (or ``E + (T - 1)``, ``E + 255`` for T = 256)."""
    parts = binary(strip(node))
    if parts is not None and parts[1] == "-" and int_expr_value(parts[2]) == 1:
        inner = binary(strip(parts[0]))
        return inner[0] if inner is not None and inner[1] == "+" and \
            int_expr_value(inner[2]) == tile else None
    if parts is not None and parts[1] == "+" and int_expr_value(parts[2]) == tile - 1:
        return parts[0]
    return None


def _start(first: Node | None, var: str, tile: int) -> Node | None:
    """The name ``first`` declares as ``int base = t * T;`` (T of value ``tile``)."""
    if first is None or first.type != "declaration" or \
            text(first.child_by_field_name("type")) != "int":
        return None
    decls = first.children_by_field_name("declarator")
    if len(decls) != 1 or decls[0].type != "init_declarator":
        return None
    name = declarator_name(decls[0])
    value = decls[0].child_by_field_name("value")
    product = binary(strip(value)) if value is not None else None
    if name is None or product is None or product[1] != "*":
        return None
    a, b = strip(product[0]), strip(product[2])
    if not any(text(x) == var and int_expr_value(y) == tile for x, y in ((a, b), (b, a))):
        return None
    return name



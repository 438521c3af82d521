"""Constants a hand-tuned kernel already names, lifted as the author named them.

The dependency-aware transforms recognise the block size, vector width and items per
thread from how the kernel uses them. A hand-tuned kernel often says it instead: it names
its constants (``constexpr int kVec = 16 / ELEM_BYTES``, ``#define THREADS 256``), reads
``blockDim`` and caps its block in the launch rules (``min(d // (16 // elem_bytes), 1024)``).
Where no other transform lifted anything, this one trusts those names (the unroll pragma
is lifted beside any other lift too):

===================================================  ======================================
found in the parse of the kernel as written           becomes
===================================================  ======================================
``#pragma unroll N``                                  ``UNROLL`` (choice 1, 2, 4, 8 and N)
``16 / ELEM_BYTES``, ``16 / sizeof(T)``, ``alignas(16)``  ``VEC_BYTES`` (choice 2..16 bytes)
``constexpr int kVec = 8`` (vec / pack / width)       ``VEC`` (choice 1, 2, 4, 8 and 8)
``constexpr int kThreads = 128``, ``#define THREADS``  ``BLOCK_THREADS`` (pow2 32..1024)
a 1024 cap or a lone 1-D block size in launch rules   ``BLOCK_THREADS`` + ``__launch_bounds__``
``constexpr int kItemsPerThread = 4``                 ``ITEMS_PER_THREAD`` (choice 1..8 and 4)
===================================================  ======================================

Legality: the block is resized only in a kernel that reads ``blockDim`` (a kernel that does
not holds the block size in some other spelling, ``threadIdx.x / TILE``, that a rename
would leave behind), and a named block constant is lifted only where the launch block is
that constant. Launch rules follow through :mod:`.rules` (``16 // elem_bytes`` ->
``VEC_BYTES // elem_bytes``, the cap and ``ceil_div`` divisors -> ``BLOCK_THREADS``); the
defaults are the kernel as written. Comments and string literals are never rewritten (the
parse does not see code in them).
"""

from __future__ import annotations

import re
from typing import Any

from tree_sitter import Node

from workbench.core.code_mask import code_mask
from workbench.core.identifiers import identifier_problem
from workbench.templater.analysis import DIMS, builtin, int_value, line, strip, text, walk
from workbench.templater.block import _cross_grids, _scaled
from workbench.templater.block_outputs import unfollowed
from workbench.templater.macros import IntegerMacro, guard_define
from workbench.templater.plan import Plan
from workbench.templater.records import LiftedParameter
from workbench.templater.rules import (
    divided_names,
    literal,
    replace_cap,
    replace_divisor,
    replace_ratio,
)

TRANSFORM = "named constants"

_BLOCK_NAME = re.compile(r"(?i)(threads|block_?size|block_?dim|kblock\b)")
_VEC_NAME = re.compile(r"(?i)(vec|pack|width)")
_ITEMS_NAME = re.compile(r"(?i)(items?_?per_?thread|elems?_?per_?thread|^k?items$)")
_UNROLL_ARG = re.compile(r"^unroll[ \t]*(\(?)[ \t]*(\d+)[ \t]*(\)?)[ \t]*$")
_INTEGRAL = {"int", "long", "size_t", "unsigned", "int32_t", "uint32_t", "unsigned int",
             "signed int", "long long", "unsigned long"}
_VEC_BYTES_UNIT = 16  # bytes of the widest vector access the spellings above name


def _choice(default: int, extra: tuple[int, ...], description: str) -> dict[str, Any]:
    return {"kind": "choice", "values": sorted({*extra, default}), "default": default,
            "description": description}


def _classify(name: str, value: int) -> tuple[str, str, dict[str, Any]] | None:
    """(category, parameter base name, spec) of a named constant, or None."""
    if _ITEMS_NAME.search(name) and 1 <= value <= 64:
        return ("items", "ITEMS_PER_THREAD",
                _choice(value, (1, 2, 4, 8), f"items per thread (baseline {value})"))
    if _BLOCK_NAME.search(name) and 32 <= value <= 1024 and value & (value - 1) == 0:
        return ("block", "BLOCK_THREADS",
                {"kind": "pow2", "min": 32, "max": 1024, "default": value,
                 "description": f"threads per block (baseline {value})"})
    if _VEC_NAME.search(name) and value in (1, 2, 4, 8, 16):
        return ("vec", "VEC", _choice(value, (1, 2, 4, 8),
                                      f"elements per vector access (baseline {value})"))
    return None


class _Named:
    """One pass of the transform over ``plan`` (state shared by its steps)."""

    def __init__(self, plan: Plan, macros: dict[str, IntegerMacro], smem_bytes: str) -> None:
        self.plan = plan
        self.macros = macros
        self.smem = smem_bytes
        self.root = plan.source.tree.root_node
        self.original = plan.source.data.decode()
        self.lifted: dict[str, tuple[str, int]] = {}  # category -> (parameter, value)
        self.written_block = list(plan.block)  # the launch rule as written, for origins

    def free_name(self, base: str) -> str:
        name, k = base, 2
        while name in self.plan.params or re.search(rf"\b{name}\b", self.original):
            name, k = f"{base}_{k}", k + 1
        problem = identifier_problem(name)
        assert problem is None, f"{name!r}: {problem}"  # made from fixed bases and digits
        return name

    def add(self, name: str, spec: dict[str, Any], node: Node | None, snippet: str) -> None:
        where = "launch rules" if node is None else str(line(node))
        self.plan.add_param(name, spec, f"{where}: {snippet.strip()}")

    # -- the steps, in the order their parameters are listed -------------------------------

    def unroll(self) -> None:
        """``#pragma unroll N`` -> ``#pragma unroll (wb_unroll)``: nvcc does not expand a
        macro there but evaluates a constant expression, so the knob goes through a
        constexpr."""
        names: dict[int, str] = {}
        for node in walk(self.root):
            if node.type != "preproc_call" or text(node.child_by_field_name("directive")) \
                    != "#pragma":
                continue
            arg = node.child_by_field_name("argument")
            match = _UNROLL_ARG.match(text(arg).strip()) if arg is not None else None
            if arg is None or match is None:
                continue
            n = int(match.group(2))
            if n not in names:
                names[n] = self.free_name("UNROLL")
                self.add(names[n], _choice(n, (1, 2, 4, 8), f"unroll factor (baseline {n})"),
                         node, text(node))
                self.plan.helper(f"constexpr int wb_{names[n].lower()} = {names[n]};"
                                 "  // #pragma unroll needs a constant, not a macro")
            self.plan.rw.replace(arg, f"unroll (wb_{names[n].lower()})")

    def vec_bytes(self) -> None:
        """``16 / ELEM_BYTES`` and ``16 / sizeof(T)`` (elements per 16-byte vector) and
        ``alignas(16)`` follow one VEC_BYTES; so do the launch rules' ``16 // elem_bytes``."""
        ratios = [n for n in walk(self.root) if n.type == "binary_expression" and
                  text(n.child_by_field_name("operator")) == "/" and
                  _is_sixteen(n.child_by_field_name("left")) and
                  _per_element(n.child_by_field_name("right"))]
        in_macros = _macro_body_spans(self.root, _MACRO_RATIO)
        if not ratios and not in_macros:
            return
        name = self.free_name("VEC_BYTES")
        for n in ratios:
            left = n.child_by_field_name("left")
            assert left is not None
            self.plan.rw.replace(left, name)
        for start, end in [*in_macros, *_align_macro_spans(self.root, self.plan.source.data)]:
            self.plan.rw.replace_span(start, end, name)
        for n in walk(self.root):
            if n.type == "alignas_qualifier":
                value = next((c for c in n.named_children), None)
                if value is not None and _is_sixteen(value):
                    self.plan.rw.replace(value, name)
        first = ratios[0] if ratios else _definition_at(self.root, in_macros[0][0])
        self.add(name, _choice(16, (2, 4, 8), "bytes per vector load/store (baseline 16)"),
                 first, text(first).splitlines()[0])
        self.plan.constrain(f"{name} >= elem_bytes")
        shapes = {t for v in self.plan.scalars.values() for t in re.findall(r"[A-Za-z_]\w*", v)}
        for rule in (*self.plan.grid, *self.plan.block, self.smem):
            for divided in divided_names(rule, _VEC_BYTES_UNIT, "elem_bytes"):
                if divided in shapes:
                    self.plan.constrain(f"{divided} % ({name} // elem_bytes) == 0")
        self.plan.grid = [_or(replace_ratio(r, _VEC_BYTES_UNIT, "elem_bytes", name), r)
                          for r in self.plan.grid]
        self.plan.block = [_or(replace_ratio(r, _VEC_BYTES_UNIT, "elem_bytes", name), r)
                           for r in self.plan.block]
        self.smem = _or(replace_ratio(self.smem, _VEC_BYTES_UNIT, "elem_bytes", name),
                        self.smem)
        self.plan.note(TRANSFORM, True, f"{_VEC_BYTES_UNIT}-byte vectors are {name}: "
                       f"{len(ratios)} ratio(s), the alignments and the launch rules follow",
                       first)

    def constants(self, reads_block_dim: bool) -> None:
        """``constexpr``/``const`` integer declarations, then ``#define NAME N``: the first
        of each category (block, vec, items) whose name says it is one."""
        for node in walk(self.root):
            if node.type != "declaration" or not _constant_integral(node):
                continue
            d = node.child_by_field_name("declarator")
            if d is None or d.type != "init_declarator":
                continue
            value = d.child_by_field_name("value")
            if value is None or value.type != "number_literal" or int_value(value) is None:
                continue
            pname = self.take(text(d.child_by_field_name("declarator")), int(int_value(value)
                                                                            or 0), node,
                              reads_block_dim)
            if pname is not None:
                self.plan.rw.replace(value, pname)
        for macro in sorted(self.macros.values(), key=lambda m: m.definition.start_byte):
            pname = self.take(macro.name, macro.value, macro.definition, reads_block_dim)
            if pname is None:
                continue
            if pname == macro.name:  # already the parameter's name: a guarded default
                guard_define(self.plan, macro, macro.value)
            else:
                self.plan.rw.replace(macro.value_node, pname)
        if "vec" in self.lifted:
            self.plan.constrain(f"{self.lifted['vec'][0]} * elem_bytes <= 16")

    def take(self, cname: str, value: int, node: Node, reads_block_dim: bool) -> str | None:
        kind = _classify(cname, value)
        if kind is None or kind[0] in self.lifted:
            return None
        category, base, spec = kind
        if category == "block":
            if not reads_block_dim:
                self.plan.note(TRANSFORM, False, f"{cname} = {value} would resize the block "
                               "of a kernel that never reads blockDim (its indexing would "
                               "keep the block size as written); left as written", node)
                return None
            if str(value) not in (b.strip() for b in self.plan.block):
                self.plan.note(TRANSFORM, False, f"{cname} = {value} is not the launch "
                               f"block ({', '.join(self.plan.block)}); left as written", node)
                return None
        pname = base if cname == base else self.free_name(base)
        self.lifted[category] = (pname, value)
        self.add(pname, spec, node, text(node).splitlines()[0] if text(node) else cname)
        return pname

    def block(self, reads_block_dim: bool) -> None:
        """The block size from the launch rules: a ``min(..., 1024)`` cap, a lone 1-D
        literal, or the literal a named block constant equals."""
        named = self.lifted.get("block")
        pname = named[0] if named is not None else self.free_name("BLOCK_THREADS")
        written = list(self.plan.block)
        block = list(written)
        found: int | None = None
        for i, rule in enumerate(block):
            capped = replace_cap(rule, 1024, pname)
            if capped is not None:
                block[i], found = capped, 1024
        lone = literal(block[0]) if len(block) == 1 else None
        if found is None and lone is not None and 32 <= lone <= 1024 and lone & (lone - 1) == 0:
            block, found = [pname], lone
        if found is None and named is not None:
            for i, rule in enumerate(block):
                if rule.strip() == str(named[1]):
                    block[i], found = pname, named[1]
        if found is None:
            return
        if not reads_block_dim:
            self.plan.note(TRANSFORM, False, f"the launch block {found} would be resized in a "
                           "kernel that never reads blockDim (its indexing would keep the "
                           "block size as written); left as written")
            return
        crossed = [_cross_grids(self.plan, DIMS[i], found) for i, rule in enumerate(block)
                   if rule != written[i]]  # a flattened grid follows too, or nothing lifts
        stuck = next((c for c in crossed if isinstance(c, Node)), None)
        if stuck is not None:
            self.plan.note(TRANSFORM, False, f"`{text(stuck)[:60]}` offsets blocks by the block "
                           f"size along a grid dimension whose rule does not divide by {found}: "
                           "the grid would not follow the block; left as written", stuck)
            return
        follow = set().union(*(c for c in crossed if not isinstance(c, Node)))
        wrong = next((w for k, rule in enumerate(block) if rule != written[k] and k not in follow
                      and k < len(self.plan.grid) and
                      (w := unfollowed(self.plan, DIMS[k], self.plan.grid[k], found))), None)
        if wrong is not None:
            self.plan.note(TRANSFORM, False, f"`{text(wrong[0])[:60]}` {wrong[1]}; left as "
                           "written", wrong[0])
            return
        self.plan.grid = [_or(_scaled(g, found, pname) if k in follow else
                              replace_divisor(g, found, pname), g)
                          for k, g in enumerate(self.plan.grid)]
        self.plan.block = block
        if named is None:
            self.add(pname, {"kind": "pow2", "min": 32, "max": 1024, "default": found,
                             "description": f"threads per block (baseline {found})"},
                     None, f"block = {self.written_block}")
        self.bind_launch_bounds(pname, found, add=named is None)

    def bind_launch_bounds(self, pname: str, default: int, *, add: bool) -> None:
        """An existing ``__launch_bounds__(default[, ...])`` gets ``pname`` as its first
        argument; with ``add`` and none, ``__launch_bounds__(pname)`` is added."""
        fn = self.plan.source.function_node(self.plan.kernel)
        bounds = next((c for c in fn.children if c.type == "launch_bounds"), None)
        entry = self.plan.kernel.name
        if bounds is not None and bounds.named_children:
            first = bounds.named_children[0]
            if int_value(first) != default:
                self.plan.note(TRANSFORM, False, f"__launch_bounds__({text(first)}) on {entry} "
                               f"differs from the block size {default}; left as it is", bounds)
                return
            self.plan.rw.replace(first, pname)
            self.plan.note(TRANSFORM, True, f"__launch_bounds__ of {entry} now follows {pname}")
        elif add:
            decl = next(n for n in fn.children if n.type == "function_declarator")
            self.plan.rw.insert(decl.start_byte, f"__launch_bounds__({pname}) ")
            self.plan.note(TRANSFORM, True, f"{pname} bounds the launch: "
                           f"__launch_bounds__({pname}) added to {entry}")


def lift_named(plan: Plan, macros: dict[str, IntegerMacro], smem_bytes: str) -> str:
    """Lift the constants the kernel names (see the module doc) where no transform before
    this one lifted anything, else bind its named block constants to the lifted block size
    (:func:`bind_block_constants`) and lift its ``#pragma unroll N`` alone (an unroll factor
    changes no result, so it is a knob next to any lift: nbody_accel's tile walk, ``#pragma
    unroll 8`` beside a lifted block, was left at 8); returns the shared-memory rule (its
    ``16 // elem_bytes`` follows VEC_BYTES)."""
    if plan.params:
        bind_block_constants(plan)
        _Named(plan, macros, smem_bytes).unroll()
        return smem_bytes
    named = _Named(plan, macros, smem_bytes)
    reads_block_dim = any(builtin(n, "blockDim") is not None for n in walk(named.root)
                          if n.type == "field_expression")
    named.unroll()
    named.vec_bytes()
    named.constants(reads_block_dim)
    named.block(reads_block_dim)
    return named.smem


def bind_block_constants(plan: Plan) -> None:
    """``constexpr int kThreads = 256`` in a kernel whose 1-D block of 256 a transform lifted
    to BLOCK_THREADS: the name says it is the block size, so it follows the parameter
    (``kThreads = BLOCK_THREADS``), and the block keeps to powers of two, since a named
    constant may drive a halving the analysis does not see. A #define has its own rule
    (:mod:`.macros`)."""
    if len(plan.block) != 1 or plan.block[0] not in plan.params:
        return
    param = plan.params[plan.block[0]]
    default = param.spec.get("default")
    bound = 0
    for node in walk(plan.source.tree.root_node):
        if node.type != "declaration" or not _constant_integral(node):
            continue
        d = node.child_by_field_name("declarator")
        value = d.child_by_field_name("value") if d is not None and \
            d.type == "init_declarator" else None
        if d is None or value is None or value.type != "number_literal" or \
                int_value(value) != default or \
                not _BLOCK_NAME.search(text(d.child_by_field_name("declarator"))):
            continue
        plan.rw.replace(value, param.name)
        bound += 1
        plan.note(TRANSFORM, True, f"`{text(node)}` names the block size: it now reads "
                  f"{param.name}", node)
    pow2 = isinstance(default, int) and default > 0 and default & (default - 1) == 0
    if bound and pow2 and param.spec.get("kind") != "pow2":
        spec = {**param.spec, "kind": "pow2", "min": 32, "max": 1024,
                "description": f"threads per block (as written: {default}; powers of two: "
                               "a named block constant follows it)"}
        spec.pop("step", None)
        plan.params[param.name] = LiftedParameter(param.name, spec, param.origin)


# A macro's body is text to the parse: ``#define VEC_ELEMS (16 / ELEM_BYTES)``, and CUDA's
# ``__align__(16)`` (a macro the parse cannot read as an attribute). Matched on the bytes of
# the body (its code, not its comments or strings) or right after ``__align__`` only.
_MACRO_RATIO = re.compile(rb"\b16(?=\s*/\s*(?:ELEM_BYTES\b|sizeof\s*\())")
_ALIGN_ARG = re.compile(rb"\s*\(\s*(16)\s*\)")


def _macro_body_spans(root: Node, pattern: re.Pattern[bytes]) -> list[tuple[int, int]]:
    """Byte spans of ``pattern`` inside the bodies of ``#define``s."""
    spans: list[tuple[int, int]] = []
    for node in walk(root):
        if node.type not in ("preproc_def", "preproc_function_def"):
            continue
        body = node.child_by_field_name("value")
        if body is not None:
            raw = body.text or b""
            mask = code_mask(raw.decode("latin-1"))  # one char per byte: offsets agree
            spans += [(body.start_byte + m.start(), body.start_byte + m.end())
                      for m in pattern.finditer(raw) if mask[m.start()]]
    return spans


def _definition_at(root: Node, offset: int) -> Node:
    """The ``#define`` whose body holds byte ``offset``."""
    return next(n for n in walk(root) if n.type in ("preproc_def", "preproc_function_def")
                and n.start_byte <= offset < n.end_byte)


def _align_macro_spans(root: Node, data: bytes) -> list[tuple[int, int]]:
    """Byte spans of the 16 in ``__align__(16)``."""
    spans = []
    for node in walk(root):
        if node.type in ("identifier", "type_identifier") and text(node) == "__align__":
            m = _ALIGN_ARG.match(data, node.end_byte)
            if m is not None:
                spans.append(m.span(1))
    return spans


def _or(new: str | None, old: str) -> str:
    return old if new is None else new


def _is_sixteen(node: Node | None) -> bool:
    return node is not None and strip(node).type == "number_literal" and \
        int_value(node) == _VEC_BYTES_UNIT


def _per_element(node: Node | None) -> bool:
    """``ELEM_BYTES`` or ``sizeof(T)``: the bytes of one element."""
    if node is None:
        return False
    node = strip(node)
    return (node.type == "identifier" and text(node) == "ELEM_BYTES") or \
        node.type == "sizeof_expression"


def _constant_integral(decl: Node) -> bool:
    qualifiers = {text(c) for c in decl.children if c.type == "type_qualifier"}
    kind = decl.child_by_field_name("type")
    return bool(qualifiers & {"constexpr", "const"}) and kind is not None and \
        " ".join(text(kind).split()) in _INTEGRAL

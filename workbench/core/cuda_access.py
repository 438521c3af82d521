"""Which pointer arguments a kernel reads and writes: the roles ``workbench init`` proposes.

A pure walk over the kernel body's tree (from :mod:`workbench.core.cuda_source`). A store
is an assignment or ``++``/``--`` whose target dereferences the argument (``y[i] = ...``,
``*(y + i) = ...``, ``out[i].x = ...``), an ``atomic*`` call, or a store intrinsic
(``__stcs``...). Local pointers initialised from an argument (``float* row = y + r * d``,
``reinterpret_cast<float4*>(y)``) are followed as aliases of it, and so are the pointer
parameters of ``__device__`` helpers defined in the same file. A pointer handed to code the
analysis cannot see (a function defined elsewhere, a pointer stored into a struct) is an
*escape*: its role is then unknown unless the argument is ``const``, and ``init`` asks.

The walk is bounded on hostile input: nodes are visited iteratively, a helper body is
followed at most once per (helper, parameter, argument, depth), helpers are followed at most
:data:`_MAX_HELPER_DEPTH` deep and for at most :data:`_HELPER_BYTES` bytes of helper bodies
in all (past that a pointer passed on counts as an escape, and ``init`` asks for its role),
and the recursive expression resolvers rely on the parser's tree-depth limit
(:data:`workbench.core.cuda_source.MAX_SYNTAX_DEPTH`).

    access = pointer_access(source, kernel)
    access["y"].role          # "out" | "inout" | "in" | None (unknown: ask the user)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node

from workbench.core.cuda_source import MAX_SOURCE_BYTES, CudaSource, KernelSignature

__all__ = ["PointerAccess", "pointer_access"]

_READ_INTRINSICS = frozenset({"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"})
_STORE_INTRINSICS = frozenset({"__stcg", "__stcs", "__stwb", "__stwt"})
_CASTS = frozenset({"reinterpret_cast", "static_cast", "const_cast"})
_MAX_HELPER_DEPTH = 4
_HELPER_BYTES = 4 * MAX_SOURCE_BYTES  # helper-body bytes followed per analysis, in all


@dataclass(frozen=True)
class PointerAccess:
    """How a kernel uses one pointer argument; lines are 1-based."""

    name: str
    is_const: bool
    read_lines: tuple[int, ...]
    write_lines: tuple[int, ...]
    escape_lines: tuple[int, ...]

    @property
    def role(self) -> str | None:
        """``in`` / ``out`` / ``inout``, or None when the analysis cannot tell."""
        if self.is_const:
            return "in"
        if self.write_lines:
            return "inout" if self.read_lines or self.escape_lines else "out"
        if self.escape_lines or not self.read_lines:
            return None
        return "in"

    @property
    def why_unknown(self) -> str:
        if self.escape_lines:
            lines = ", ".join(str(n) for n in self.escape_lines)
            return f"it is passed to code the analysis cannot follow (line {lines})"
        return "the kernel neither reads nor writes it through an expression the analysis knows"


@dataclass
class _Uses:
    reads: set[int] = field(default_factory=set)
    writes: set[int] = field(default_factory=set)
    escapes: set[int] = field(default_factory=set)


@dataclass
class _Followed:
    """What one analysis has spent on helpers, shared by its walkers."""

    done: set[tuple[int, int, str, int]] = field(default_factory=set)
    bytes_left: int = _HELPER_BYTES


class _Walker:
    """One function body: resolves expressions to the argument they point into."""

    def __init__(self, source: CudaSource, roots: dict[str, str], uses: dict[str, _Uses],
                 depth: int, followed: _Followed) -> None:
        self.source = source
        self.aliases = dict(roots)  # local or parameter name -> kernel argument name
        self.uses = uses
        self.depth = depth
        self.followed = followed
        self.store_targets: set[int] = set()  # ids of nodes a plain ``=`` stores into

    def pointer_value(self, node: Node | None) -> str | None:
        """The kernel argument a pointer-valued expression points into (``y``, ``y + i``,
        ``&y[i]``, ``reinterpret_cast<float4*>(y)``), or None."""
        if node is None:
            return None
        t = node.type
        if t == "identifier":
            return self.aliases.get(self.source.node_text(node))
        if t == "parenthesized_expression":
            return self.pointer_value(node.named_children[0] if node.named_children else None)
        if t == "cast_expression":
            return self.pointer_value(node.child_by_field_name("value"))
        if t == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is None or op.type not in ("+", "-"):
                return None
            left = self.pointer_value(node.child_by_field_name("left"))
            return left if left is not None else self.pointer_value(
                node.child_by_field_name("right"))
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            return self.target(node.child_by_field_name("argument")) \
                if op is not None and op.type == "&" else None
        if t == "call_expression" and self._callee(node) in _CASTS:
            args = node.child_by_field_name("arguments")
            return self.pointer_value(args.named_children[0]) \
                if args is not None and args.named_children else None
        return None

    def target(self, node: Node | None) -> str | None:
        """The kernel argument a dereference (``y[i]``, ``*p``, ``p->x``, ``y[i].x``) reads
        or writes, or None."""
        if node is None:
            return None
        t = node.type
        if t == "parenthesized_expression":
            return self.target(node.named_children[0] if node.named_children else None)
        if t == "subscript_expression":
            return self.pointer_value(node.child_by_field_name("argument"))
        if t == "pointer_expression":
            op = node.child_by_field_name("operator")
            return self.pointer_value(node.child_by_field_name("argument")) \
                if op is not None and op.type == "*" else None
        if t == "field_expression":
            op = node.child_by_field_name("operator")
            inner = node.child_by_field_name("argument")
            return self.pointer_value(inner) if op is not None and op.type == "->" \
                else self.target(inner)
        return None

    @staticmethod
    def _is_deref(node: Node | None) -> bool:
        """Does this lvalue store through a pointer (not just rebind a local)?"""
        while node is not None:
            if node.type == "parenthesized_expression":
                node = node.named_children[0] if node.named_children else None
            elif node.type == "subscript_expression":
                return True
            elif node.type == "pointer_expression":
                op = node.child_by_field_name("operator")
                return op is not None and op.type == "*"
            elif node.type == "field_expression":
                op = node.child_by_field_name("operator")
                if op is not None and op.type == "->":
                    return True
                node = node.child_by_field_name("argument")
            else:
                return False
        return False

    def _callee(self, call: Node) -> str:
        fn = call.child_by_field_name("function")
        if fn is None:
            return ""
        if fn.type == "template_function":
            fn = fn.child_by_field_name("name") or fn
        return self.source.node_text(fn)

    def mark(self, kind: str, name: str | None, node: Node) -> None:
        if name is not None:
            getattr(self.uses[name], kind).add(CudaSource.line_of(node))

    def walk(self, body: Node) -> None:
        for node in self.source.walk(body):
            t = node.type
            if t == "init_declarator":
                self._declare(node)
            elif t == "assignment_expression":
                self._note_store_targets(node)
                self._assign(node)
            elif t == "update_expression":
                arg = node.child_by_field_name("argument")
                if arg is not None and self._is_deref(arg):
                    self.mark("writes", self.target(arg), node)
                    self.mark("reads", self.target(arg), node)
            elif t == "call_expression":
                self._call(node)
            elif t in ("subscript_expression", "pointer_expression", "field_expression") and \
                    self._is_deref(node) and not self._is_store_target(node):
                self.mark("reads", self.target(node), node)

    def _note_store_targets(self, assignment: Node) -> None:
        """Remember the dereferences a plain ``=`` stores into (``y[i]`` of ``y[i] = v``,
        ``a[i]`` of ``a[i].x = v``); the walk meets the assignment before them. Looking up
        from each dereference instead would cost the tree's depth per ``parent`` step."""
        op = assignment.child_by_field_name("operator")
        if op is None or op.type != "=":
            return
        node = assignment.child_by_field_name("left")
        while node is not None:
            self.store_targets.add(node.id)
            if node.type == "field_expression":
                node = node.child_by_field_name("argument")
            elif node.type == "parenthesized_expression":
                node = node.named_children[0] if node.named_children else None
            else:
                node = None

    def _is_store_target(self, node: Node) -> bool:
        """Is ``node`` (a dereference) the target of a plain ``=`` or inside one (a[i].x)?
        A dereference nested inside another one's index is a read of its own."""
        return node.id in self.store_targets

    def _declare(self, decl: Node) -> None:
        target = decl.child_by_field_name("declarator")
        value = decl.child_by_field_name("value")
        while target is not None and target.type in ("pointer_declarator", "reference_declarator"):
            target = target.child_by_field_name("declarator") or (
                target.named_children[-1] if target.named_children else None)
        if target is None or target.type != "identifier" or value is None:
            return
        name = self.pointer_value(value)
        if name is not None:
            self.aliases[self.source.node_text(target)] = name

    def _assign(self, node: Node) -> None:
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        op = node.child_by_field_name("operator")
        if left is None:
            return
        stored = self.pointer_value(right)
        if self._is_deref(left):
            self.mark("writes", self.target(left), node)
            if op is not None and op.type != "=":
                self.mark("reads", self.target(left), node)
            self.mark("escapes", stored, node)  # a pointer stored into memory
        elif left.type == "identifier" and stored is not None:
            self.aliases[self.source.node_text(left)] = stored

    def _call(self, call: Node) -> None:
        callee = self._callee(call)
        args_node = call.child_by_field_name("arguments")
        args = list(args_node.named_children) if args_node is not None else []
        if callee in _CASTS:
            return
        for i, arg in enumerate(args):
            name = self.pointer_value(arg)
            if name is None:
                continue  # values (y[i]) are reads, marked where the dereference is
            if callee.startswith("atomic") and i == 0:
                self.mark("writes", name, call)
                self.mark("reads", name, call)
            elif callee in _STORE_INTRINSICS and i == 0:
                self.mark("writes", name, call)
            elif callee in _READ_INTRINSICS and i == 0:
                self.mark("reads", name, call)
            elif not self._helper(callee, i, name):
                self.mark("escapes", name, call)

    def _helper(self, callee: str, index: int, name: str) -> bool:
        """Follow a pointer into a ``__device__`` helper defined in this file."""
        if self.depth >= _MAX_HELPER_DEPTH:
            return False
        fn = self.source.function_definitions().get(callee)
        if fn is None:
            return False
        decl = fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        plist = decl.child_by_field_name("parameters") if decl is not None else None
        params = [p for p in (plist.named_children if plist is not None else [])
                  if p.type == "parameter_declaration"]
        body = fn.child_by_field_name("body")
        if index >= len(params) or body is None:
            return False
        pname = _declared_name(self.source, params[index])
        if pname is None:
            return False
        key = (fn.id, index, name, self.depth + 1)
        if key in self.followed.done:
            return True  # the same walk again would mark the same lines
        size = body.end_byte - body.start_byte
        if size > self.followed.bytes_left:
            return False  # past the budget: an escape, and init asks for the role
        self.followed.done.add(key)
        self.followed.bytes_left -= size
        _Walker(self.source, {pname: name}, self.uses, self.depth + 1, self.followed).walk(body)
        return True


def _declared_name(source: CudaSource, pdecl: Node) -> str | None:
    for n in source.walk(pdecl):
        if n.type == "identifier":
            return source.node_text(n)
    return None


def _iter_params(kernel: KernelSignature) -> Iterator[tuple[str, bool]]:
    for p in kernel.pointer_params:
        yield p.name, p.is_const


def pointer_access(source: CudaSource, kernel: KernelSignature) -> dict[str, PointerAccess]:
    """Read/write/escape lines of every pointer argument of ``kernel``."""
    params = dict(_iter_params(kernel))
    uses = {name: _Uses() for name in params}
    _Walker(source, {n: n for n in params}, uses, 0, _Followed()).walk(source.body(kernel))
    return {name: PointerAccess(name, params[name], tuple(sorted(u.reads)),
                                tuple(sorted(u.writes)), tuple(sorted(u.escapes)))
            for name, u in uses.items()}

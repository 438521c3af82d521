"""CUDA source parsing: the one home of "what does this .cu file say".

A source is parsed once with tree-sitter's CUDA grammar into a :class:`CudaSource`, which
lists the file's ``__global__`` kernels as typed :class:`KernelSignature` records (name,
parameters with pointer-ness, const, ``__restrict__`` and workbench dtype, launch bounds,
line numbers) and keeps the tree, so that later analysis (argument roles, the templater's
dependency analysis) walks the same tree instead of re-reading text.

    source = parse_cuda(text, file="baseline.cu")
    kernel = source.kernel("silu_and_mul")      # or source.kernel(None): the only kernel
    body = source.body(kernel)                  # the tree-sitter node of its { ... }

Unparseable input is refused with :class:`CudaSourceError`, naming the file and the line:
a kernel whose text the grammar cannot read (an unresolved macro in its signature or
body), a file with no ``__global__`` function, a ``__global__`` produced by a macro, or
several kernels with no entry named. Problems outside every kernel (host code the grammar
does not know) are kept as :attr:`CudaSource.outside_problems` rather than refused.

Lines are 1-based, as an editor shows them; byte offsets index the UTF-8 encoded source.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Tree

from workbench.core.errors import CudaSourceError

__all__ = [
    "CUDA_SCALAR_DTYPES",
    "CudaSource",
    "KernelParam",
    "KernelSignature",
    "LaunchBounds",
    "SourceProblem",
    "parse_cuda",
]

# CUDA / C type spellings -> workbench argument dtype names (core/dtypes.py ARG_DTYPES).
# "T" is the kernel folder's element dtype: a template type parameter, or the project's
# SCALAR_T macro (and any typedef of it), which the workbench defines per element dtype.
CUDA_SCALAR_DTYPES: MappingProxyType[str, str] = MappingProxyType({
    "float": "f32", "__half": "fp16", "half": "fp16",
    "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16",
    "__nv_fp8_e4m3": "fp8_e4m3", "__nv_fp8_e5m2": "fp8_e5m2",
    "int8_t": "i8", "char": "i8", "signed char": "i8",
    "uint8_t": "u8", "unsigned char": "u8",
    "int16_t": "i16", "short": "i16", "short int": "i16", "signed short": "i16",
    "uint16_t": "u16", "unsigned short": "u16", "unsigned short int": "u16",
    "int": "i32", "int32_t": "i32", "signed": "i32", "signed int": "i32",
    "uint32_t": "u32", "unsigned": "u32", "unsigned int": "u32",
    "int64_t": "i64", "long long": "i64", "long long int": "i64", "long": "i64",
    "signed long long": "i64",
    "SCALAR_T": "T",
})
_PARSE_ERROR_TYPES = ("ERROR",)


@dataclass(frozen=True)
class SourceProblem:
    """A stretch of the source the grammar could not read (1-based line and column)."""

    line: int
    column: int
    excerpt: str

    def __str__(self) -> str:
        return f"line {self.line}, column {self.column}: {self.excerpt!r}"


@dataclass(frozen=True)
class KernelParam:
    """One kernel parameter as declared.

    ``base_type`` is the type with qualifiers and ``*`` removed (``"float"``,
    ``"unsigned char"``, ``"scalar_t"``); ``dtype`` is its workbench name (``"f32"``,
    ``"u8"``, ``"T"``), or ``None`` when the type has no workbench dtype (``float4``, a
    struct, ``double``). For a pointer, ``is_const`` says the pointee is const (the kernel
    promises not to write through it).
    """

    name: str
    index: int
    type_text: str
    base_type: str
    dtype: str | None
    is_pointer: bool
    is_const: bool
    is_restrict: bool
    line: int

    @property
    def is_scalar(self) -> bool:
        return not self.is_pointer


@dataclass(frozen=True)
class LaunchBounds:
    """``__launch_bounds__(max_threads[, min_blocks[, max_blocks_per_cluster]])`` as written."""

    max_threads: str
    min_blocks: str | None
    line: int


@dataclass(frozen=True)
class KernelSignature:
    """A ``__global__`` function definition: where it is and what it takes.

    ``start_byte``/``end_byte`` span the whole definition (template header included);
    ``body_line`` is the line of its opening brace.
    """

    name: str
    params: tuple[KernelParam, ...]
    launch_bounds: LaunchBounds | None
    extern_c: bool
    template_params: tuple[str, ...]
    line: int
    end_line: int
    body_line: int
    start_byte: int
    end_byte: int

    def param(self, name: str) -> KernelParam:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def pointer_params(self) -> tuple[KernelParam, ...]:
        return tuple(p for p in self.params if p.is_pointer)


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_cuda.language()))


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _walk(node: Node) -> Iterator[Node]:
    """Every node below ``node`` (itself included), in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _problems(node: Node) -> list[SourceProblem]:
    out = []
    for n in _walk(node):
        if n.type in _PARSE_ERROR_TYPES or n.is_missing:
            shown = _text(n).splitlines()[0][:80] if _text(n) else f"missing {n.type!r}"
            out.append(SourceProblem(n.start_point.row + 1, n.start_point.column + 1, shown))
    return out


class CudaSource:
    """A parsed CUDA file: its text, its tree and its ``__global__`` kernels."""

    def __init__(self, text: str, file: str, tree: Tree) -> None:
        self.text = text
        self.file = file
        self.tree = tree
        self.data = text.encode("utf-8")
        self._typedefs = self._collect_typedefs()
        self._functions: dict[str, Node] = {}
        kernels = []
        for fn, extern_c in self._global_definitions():
            sig = self._signature(fn, extern_c)
            if sig.name not in self._functions:
                self._functions[sig.name] = fn
                kernels.append(sig)
        self.kernels: tuple[KernelSignature, ...] = tuple(kernels)
        inside = [(k.start_byte, k.end_byte) for k in self.kernels]
        self.outside_problems: tuple[SourceProblem, ...] = tuple(
            p for p in _problems(tree.root_node)
            if not any(a <= self._offset(p) < b for a, b in inside))

    # ---- kernels ---------------------------------------------------------------------------

    def kernel(self, entry: str | None = None) -> KernelSignature:
        """The kernel named ``entry``, or the only kernel when ``entry`` is None.

        Raises CudaSourceError when there is no kernel, when ``entry`` names none of them,
        when several exist and no entry is given (listing them), and when the chosen
        kernel's text has parts the grammar could not read (naming the first line)."""
        if not self.kernels:
            raise self._no_kernel_error()
        names = [k.name for k in self.kernels]
        if entry is None:
            if len(self.kernels) > 1:
                raise CudaSourceError(
                    f"{self.file} defines {len(names)} __global__ kernels ({', '.join(names)}); "
                    "name the one to tune with --entry NAME",
                    file=self.file, line=self.kernels[1].line, choices=names)
            chosen = self.kernels[0]
        else:
            found = [k for k in self.kernels if k.name == entry]
            if not found:
                raise CudaSourceError(
                    f"{self.file} has no __global__ kernel named {entry!r}; "
                    f"expected one of {names}", file=self.file, line=0, value=entry,
                    choices=names)
            chosen = found[0]
        bad = _problems(self._functions[chosen.name])
        if bad:
            first = bad[0]
            raise CudaSourceError(
                f"{self.file}:{first.line}: cannot parse kernel {chosen.name!r} near "
                f"{first.excerpt!r} (an unresolved macro or a construct the CUDA grammar "
                "does not know); expand the macro or rewrite the line in plain CUDA",
                file=self.file, line=first.line, column=first.column, excerpt=first.excerpt)
        return chosen

    def function_node(self, kernel: KernelSignature | str) -> Node:
        """The kernel's ``function_definition`` node."""
        return self._functions[kernel if isinstance(kernel, str) else kernel.name]

    def body(self, kernel: KernelSignature | str) -> Node:
        """The kernel's body: its ``compound_statement`` node."""
        body = self.function_node(kernel).child_by_field_name("body")
        assert body is not None  # definitions are only collected with a body
        return body

    def node_text(self, node: Node) -> str:
        return _text(node)

    @staticmethod
    def line_of(node: Node) -> int:
        """1-based line of a node's first character."""
        return node.start_point.row + 1

    def walk(self, node: Node) -> Iterator[Node]:
        """Every node below ``node`` (itself included), in source order."""
        return _walk(node)

    # ---- construction ----------------------------------------------------------------------

    def _offset(self, problem: SourceProblem) -> int:
        lines = self.data.split(b"\n")
        return sum(len(x) + 1 for x in lines[:problem.line - 1]) + problem.column - 1

    def _no_kernel_error(self) -> CudaSourceError:
        for n in _walk(self.tree.root_node):
            if _text(n) == "__global__" or (n.child_count == 0 and "__global__" in _text(n)):
                parent = n.parent
                where = parent.type if parent is not None else ""
                if where.startswith("preproc"):
                    why = "is inside a macro definition; the workbench reads kernels as written"
                elif parent is not None and parent.type == "declaration":
                    continue  # a prototype: look on for the definition
                else:
                    why = "could not be parsed (an unresolved macro or unknown construct)"
                line = n.start_point.row + 1
                return CudaSourceError(
                    f"{self.file}:{line}: the __global__ function {why}; write the kernel "
                    "in plain CUDA (expand the macro)", file=self.file, line=line)
        return CudaSourceError(
            f"{self.file} has no __global__ function definition; expected a CUDA kernel "
            "such as: __global__ void my_kernel(const float* x, float* y, int n) { ... }",
            file=self.file, line=0)

    def _global_definitions(self) -> Iterator[tuple[Node, bool]]:
        def visit(node: Node, extern_c: bool) -> Iterator[tuple[Node, bool]]:
            for child in node.children:
                if child.type == "function_definition":
                    if any(c.type == "__global__" for c in child.children) and \
                            child.child_by_field_name("body") is not None:
                        yield child, extern_c
                elif child.type == "linkage_specification":
                    value = child.child_by_field_name("value")
                    yield from visit(child, extern_c or (value is not None and
                                                         _text(value) == '"C"'))
                elif child.type in ("declaration_list", "template_declaration",
                                    "namespace_definition", "preproc_ifdef", "preproc_if",
                                    "preproc_else", "preproc_elif"):
                    yield from visit(child, extern_c)
        yield from visit(self.tree.root_node, False)

    def _collect_typedefs(self) -> dict[str, str]:
        """``typedef X name;`` at any level: name -> X as written."""
        out: dict[str, str] = {}
        for n in _walk(self.tree.root_node):
            if n.type == "type_definition":
                typ = n.child_by_field_name("type")
                decl = n.child_by_field_name("declarator")
                if typ is not None and decl is not None and decl.type == "type_identifier":
                    out[_text(decl)] = " ".join(_text(typ).split())
        return out

    def _dtype(self, base: str, template_params: tuple[str, ...]) -> str | None:
        seen: set[str] = set()
        while base not in CUDA_SCALAR_DTYPES and base in self._typedefs and base not in seen:
            seen.add(base)
            base = self._typedefs[base]
        if base in template_params:
            return "T"
        return CUDA_SCALAR_DTYPES.get(base)

    def _signature(self, fn: Node, extern_c: bool) -> KernelSignature:
        template_params: tuple[str, ...] = ()
        outer = fn
        if fn.parent is not None and fn.parent.type == "template_declaration":
            outer = fn.parent
            plist = outer.child_by_field_name("parameters")
            if plist is not None:
                template_params = tuple(
                    _text(c) for n in plist.children for c in n.children
                    if n.type == "type_parameter_declaration" and c.type == "type_identifier")
        declarator = fn.child_by_field_name("declarator")
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        assert declarator is not None
        name_node = declarator.child_by_field_name("declarator")
        name = _text(name_node) if name_node is not None else "?"
        bounds = None
        for c in fn.children:
            if c.type == "launch_bounds":
                vals = [_text(a) for a in c.named_children]
                bounds = LaunchBounds(vals[0] if vals else "", vals[1] if len(vals) > 1 else None,
                                      c.start_point.row + 1)
        params: list[KernelParam] = []
        plist_node = declarator.child_by_field_name("parameters")
        for pdecl in (plist_node.named_children if plist_node is not None else []):
            if pdecl.type == "parameter_declaration":
                params.append(self._param(pdecl, len(params), template_params))
        body = fn.child_by_field_name("body")
        assert body is not None
        return KernelSignature(
            name=name, params=tuple(params), launch_bounds=bounds, extern_c=extern_c,
            template_params=template_params, line=fn.start_point.row + 1,
            end_line=fn.end_point.row + 1, body_line=body.start_point.row + 1,
            start_byte=outer.start_byte, end_byte=outer.end_byte)

    def _param(self, pdecl: Node, index: int, template_params: tuple[str, ...]) -> KernelParam:
        typ = pdecl.child_by_field_name("type")
        base = " ".join(_text(typ).split()) if typ is not None else ""
        const_before = any(c.type == "type_qualifier" and _text(c) == "const"
                           for c in pdecl.children)
        pointer = restrict = False
        node = pdecl.child_by_field_name("declarator")
        name = ""
        while node is not None:
            if node.type in ("pointer_declarator", "array_declarator"):
                pointer = True
                restrict = restrict or any(
                    c.type == "type_qualifier" and _text(c) in ("__restrict__", "__restrict",
                                                                 "restrict")
                    for c in node.children)
            elif node.type in ("identifier", "field_identifier"):
                name = _text(node)
                break
            nxt = node.child_by_field_name("declarator")
            if nxt is None:
                nxt = next((c for c in node.named_children
                            if c.type.endswith("declarator") or c.type == "identifier"), None)
            node = nxt
        type_text = " ".join(_text(pdecl).split())
        if name and type_text.endswith(name):
            type_text = type_text[: -len(name)].rstrip()
        return KernelParam(name=name, index=index, type_text=type_text, base_type=base,
                           dtype=self._dtype(base, template_params), is_pointer=pointer,
                           is_const=pointer and const_before, is_restrict=restrict,
                           line=pdecl.start_point.row + 1)


def parse_cuda(text: str, file: str = "<source>") -> CudaSource:
    """Parse CUDA source text. Never raises for odd text: errors surface when a kernel is
    asked for (:meth:`CudaSource.kernel`), naming the file and line."""
    tree = _parser().parse(text.encode("utf-8"))
    return CudaSource(text, file, tree)

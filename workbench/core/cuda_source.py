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

Hostile input is refused before it can cost much, each limit named in the error:

- a source over :data:`MAX_SOURCE_BYTES` (1 MiB of UTF-8) is refused before parsing;
- bytes are decoded as strict UTF-8 (:func:`decode_cuda`): a UTF-16 byte-order mark, a NUL
  byte or an undecodable byte is refused naming the file, the byte offset and the line;
- brackets (``(``, ``[``, ``{``) or ``#if`` blocks nested deeper than :data:`MAX_NESTING`
  are refused from the raw text, naming the line, before tree-sitter sees them;
- parsing stops after :data:`PARSE_DEADLINE_S` seconds (tree-sitter's progress callback);
- a syntax tree deeper than :data:`MAX_SYNTAX_DEPTH` (``a+a+a...``, ``****p``, long
  ``else if`` chains) is refused naming the line, so that every walker may recurse once per
  level without reaching Python's recursion limit.

Lines are 1-based, as an editor shows them; byte offsets index the UTF-8 encoded source.
"""

from __future__ import annotations

import re
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType

import tree_sitter_cuda
from tree_sitter import Language, Node, Parser, Tree

from workbench.core.errors import CudaSourceError

__all__ = [
    "CUDA_SCALAR_DTYPES",
    "MAX_NESTING",
    "MAX_SOURCE_BYTES",
    "MAX_SYNTAX_DEPTH",
    "PARSE_DEADLINE_S",
    "CudaSource",
    "KernelParam",
    "KernelSignature",
    "LaunchBounds",
    "SourceProblem",
    "check_source_size",
    "decode_cuda",
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

# Limits on what is parsed. Real kernels are a few kilobytes, nest brackets fewer than 20
# deep and give trees about 25 levels deep; these bounds leave wide room above that while
# keeping tree-sitter's memory (about 100 bytes per source byte), its error recovery
# (quadratic on some garbage) and the recursive walkers bounded.
MAX_SOURCE_BYTES = 1 << 20  # 1 MiB of UTF-8
MAX_NESTING = 64  # brackets ( [ { together, and #if/#ifdef/#ifndef blocks, each
MAX_SYNTAX_DEPTH = 256  # levels of the syntax tree
PARSE_DEADLINE_S = 10.0  # wall seconds tree-sitter may spend on one source
_MAX_PROBLEMS = 1000  # unreadable stretches kept per source (the first is what is shown)

# Tokens that open or close a nesting level; comments and string/char literals are matched
# so that brackets inside them are skipped. An unterminated comment runs to the end and an
# unterminated literal to the end of its line, so every match attempt succeeds: linear time.
_NESTING_TOKENS = re.compile(
    r"""//[^\n]*|/\*(?:[^*]|\*(?!/))*(?:\*/|\Z)"""
    r"""|"(?:\\.|[^"\\\n])*(?:"|(?=\n)|\Z)|'(?:\\.|[^'\\\n])*(?:'|(?=\n)|\Z)"""
    r"|(?P<open>[(\[{])|(?P<close>[)\]}])"
    r"|^[ \t]*\#[ \t]*(?:(?P<if>if|ifdef|ifndef)|(?P<endif>endif))\b",
    re.DOTALL | re.MULTILINE)


def _line_at(data: bytes | str, offset: int) -> int:
    if isinstance(data, bytes):
        return data.count(b"\n", 0, offset) + 1
    return data.count("\n", 0, offset) + 1


def decode_cuda(data: bytes, file: str) -> str:
    """The text of a CUDA source read as bytes: strict UTF-8 (a UTF-8 byte-order mark is
    dropped), at most :data:`MAX_SOURCE_BYTES`.

    Raises CudaSourceError naming the file and, for bad bytes, the byte offset and line: a
    source over the limit, UTF-16 or UTF-32 (by byte-order mark), a NUL byte (UTF-16 without
    a mark, or a binary file), a byte sequence that is not UTF-8 (Latin-1, say)."""
    check_source_size(len(data), file)
    for mark, name in ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
                       (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16")):
        if data.startswith(mark):
            raise CudaSourceError(
                f"{file}: the file is {name} (byte-order mark {mark.hex(' ').upper()} at "
                "offset 0); save it as UTF-8", file=file, line=1, offset=0, encoding=name)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    nul = data.find(b"\x00")
    if nul >= 0:
        raise CudaSourceError(
            f"{file}:{_line_at(data, nul)}: a NUL byte at byte offset {nul} (UTF-16 without "
            "a byte-order mark, or not a text file); save it as UTF-8 text", file=file,
            line=_line_at(data, nul), offset=nul)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_at(data, exc.start)
        raise CudaSourceError(
            f"{file}:{line}: not UTF-8: byte 0x{data[exc.start]:02X} at byte offset "
            f"{exc.start} cannot be decoded ({exc.reason}); save the file as UTF-8",
            file=file, line=line, offset=exc.start) from None


def check_source_size(size: int, file: str) -> None:
    """Refuse a source of ``size`` bytes over :data:`MAX_SOURCE_BYTES`."""
    if size > MAX_SOURCE_BYTES:
        raise CudaSourceError(
            f"{file}: {size} bytes is over the limit of {MAX_SOURCE_BYTES} bytes (1 MiB) for "
            "a CUDA source; a kernel file is usually a few kilobytes", file=file, line=0,
            size_bytes=size, limit_bytes=MAX_SOURCE_BYTES)


def _check_nesting(text: str, file: str) -> None:
    """Refuse brackets or ``#if`` blocks nested deeper than :data:`MAX_NESTING`."""
    brackets = ifs = 0
    for m in _NESTING_TOKENS.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue  # a comment or a literal
        if kind == "open":
            brackets += 1
            if brackets > MAX_NESTING:
                _too_deep(text, file, m.start(), f"brackets ( [ {{ nested more than "
                                                 f"{MAX_NESTING} deep")
        elif kind == "close":
            brackets = max(brackets - 1, 0)
        elif kind == "if":
            ifs += 1
            if ifs > MAX_NESTING:
                _too_deep(text, file, m.start(), f"#if blocks nested more than {MAX_NESTING} "
                                                 "deep")
        else:
            ifs = max(ifs - 1, 0)


def _too_deep(text: str, file: str, offset: int, what: str) -> None:
    line = _line_at(text, offset)
    raise CudaSourceError(f"{file}:{line}: {what}; the workbench reads kernels nested at "
                          f"most {MAX_NESTING} deep", file=file, line=line,
                          limit=MAX_NESTING)


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
def _language() -> Language:
    return Language(tree_sitter_cuda.language())


def _parser() -> Parser:
    """A fresh parser (a parser halted by the deadline would resume, and one parser must
    not serve two threads)."""
    return Parser(_language())


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", errors="replace")


def _walk(node: Node) -> Iterator[Node]:
    """Every node below ``node`` (itself included), in source order."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.children))


def _problem(node: Node, data: bytes) -> SourceProblem:
    # Sliced from the source bytes: an ERROR node may span the whole file.
    head = data[node.start_byte:min(node.end_byte, node.start_byte + 400)]
    shown = head.decode("utf-8", errors="replace").splitlines()[0][:80] if head.strip() \
        else f"missing {node.type!r}"
    return SourceProblem(node.start_point.row + 1, node.start_point.column + 1, shown)


def _problems(node: Node, data: bytes, limit: int = _MAX_PROBLEMS) -> list[tuple[int, SourceProblem]]:
    """(byte offset, problem) of the first ``limit`` unreadable stretches below ``node``."""
    out = []
    for n in _walk(node):
        if n.type in _PARSE_ERROR_TYPES or n.is_missing:
            out.append((n.start_byte, _problem(n, data)))
            if len(out) >= limit:
                break
    return out


class CudaSource:
    """A parsed CUDA file: its text, its tree and its ``__global__`` kernels.

    Construction refuses (CudaSourceError naming the line) a tree deeper than
    :data:`MAX_SYNTAX_DEPTH`; every walk here is iterative."""

    def __init__(self, text: str, file: str, tree: Tree) -> None:
        self.text = text
        self.file = file
        self.tree = tree
        self.data = text.encode("utf-8")
        self._typedefs: dict[str, str] = {}
        self._definitions: dict[str, Node] | None = None
        problems = self._survey()
        self._problems = problems
        self._functions: dict[str, Node] = {}
        kernels = []
        for fn, outer, extern_c in self._global_definitions():
            sig = self._signature(fn, outer, extern_c)
            if sig.name not in self._functions:
                self._functions[sig.name] = fn
                kernels.append(sig)
        self.kernels: tuple[KernelSignature, ...] = tuple(kernels)
        spans = sorted((k.start_byte, k.end_byte) for k in self.kernels)
        starts = [a for a, _ in spans]

        def inside(offset: int) -> bool:
            i = bisect_right(starts, offset) - 1
            return i >= 0 and spans[i][0] <= offset < spans[i][1]

        self.outside_problems: tuple[SourceProblem, ...] = tuple(
            p for at, p in problems if not inside(at))

    def _survey(self) -> list[tuple[int, SourceProblem]]:
        """One walk over the tree: refuse one deeper than MAX_SYNTAX_DEPTH, collect the
        typedefs (``typedef X name;`` at any level: name -> X as written) and the first
        unreadable stretches (byte offset, problem)."""
        problems: list[tuple[int, SourceProblem]] = []
        stack = [(self.tree.root_node, 1)]
        while stack:
            n, depth = stack.pop()
            if depth > MAX_SYNTAX_DEPTH:
                line = n.start_point.row + 1
                raise CudaSourceError(
                    f"{self.file}:{line}: the syntax nests more than {MAX_SYNTAX_DEPTH} levels "
                    "deep here (a very long chain of operators, casts or else-ifs); the "
                    "workbench reads kernels nested less deeply", file=self.file, line=line,
                    limit=MAX_SYNTAX_DEPTH)
            t = n.type
            if t in _PARSE_ERROR_TYPES or n.is_missing:
                if len(problems) < _MAX_PROBLEMS:
                    problems.append((n.start_byte, _problem(n, self.data)))
            elif t == "type_definition":
                typ = n.child_by_field_name("type")
                decl = n.child_by_field_name("declarator")
                if typ is not None and decl is not None and decl.type == "type_identifier":
                    self._typedefs[_text(decl)] = " ".join(_text(typ).split())
            stack.extend((c, depth + 1) for c in reversed(n.children))
        return problems

    # ---- kernels ---------------------------------------------------------------------------

    def launches_by_name(self, entry: str) -> bool:
        """Whether ``entry`` is an ``extern "C"`` kernel of this source: the worker looks a
        kernel up by its plain name, so a kernel folder's entry must be one."""
        return any(k.name == entry and k.extern_c for k in self.kernels)

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
        fn = self._functions[chosen.name]
        bad = [p for at, p in self._problems if fn.start_byte <= at < fn.end_byte][:1]
        if not bad and (len(self._problems) >= _MAX_PROBLEMS or any(
                at == fn.end_byte for at, _ in self._problems)):
            # the survey stopped counting, or a zero-width (missing) node sits at the end
            bad = [p for _, p in _problems(fn, self.data, limit=1)]
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

    def _no_kernel_error(self) -> CudaSourceError:
        marker = b"__global__"
        for n in _walk(self.tree.root_node):
            size = n.end_byte - n.start_byte
            # Only leaves are read, and nodes exactly as long as the keyword: reading every
            # node's text would cost the file's size times the tree's depth.
            if size < len(marker) or (n.child_count and size != len(marker)):
                continue
            if marker in self.data[n.start_byte:n.end_byte]:
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

    def _global_definitions(self) -> Iterator[tuple[Node, Node, bool]]:
        """(definition, its outer node: the template declaration or itself, extern "C"?) of
        every ``__global__`` function with a body, in source order; iterative."""
        containers = ("declaration_list", "template_declaration", "namespace_definition",
                      "preproc_ifdef", "preproc_if", "preproc_else", "preproc_elif",
                      "linkage_specification")
        root = self.tree.root_node
        stack: list[tuple[Node, Node, bool]] = [(root, root, False)]
        while stack:
            node, parent, extern_c = stack.pop()
            if node.type == "function_definition":
                if any(c.type == "__global__" for c in node.children) and \
                        node.child_by_field_name("body") is not None:
                    outer = parent if parent.type == "template_declaration" else node
                    yield node, outer, extern_c
                continue
            if node.type == "linkage_specification":
                value = node.child_by_field_name("value")
                extern_c = extern_c or (value is not None and _text(value) == '"C"')
            stack.extend((child, node, extern_c) for child in reversed(node.children)
                         if child.type == "function_definition" or child.type in containers)

    def function_definitions(self) -> dict[str, Node]:
        """Every ``function_definition`` in the file by its declared name (the first one of
        a name wins), built once: helpers are looked up here, not by walking the tree."""
        if self._definitions is None:
            found: dict[str, Node] = {}
            for name, fn in function_definitions(self.tree.root_node):
                found.setdefault(name, fn)
            self._definitions = found
        return self._definitions

    def _dtype(self, base: str, template_params: tuple[str, ...]) -> str | None:
        seen: set[str] = set()
        while base not in CUDA_SCALAR_DTYPES and base in self._typedefs and base not in seen:
            seen.add(base)
            base = self._typedefs[base]
        if base in template_params:
            return "T"
        return CUDA_SCALAR_DTYPES.get(base)

    def _signature(self, fn: Node, outer: Node, extern_c: bool) -> KernelSignature:
        template_params: tuple[str, ...] = ()
        if outer.type == "template_declaration":
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


def parse_cuda(text: str, file: str = "<source>", *, deadline_s: float = PARSE_DEADLINE_S,
               clock: Callable[[], float] = time.monotonic) -> CudaSource:
    """Parse CUDA source text. Odd text is not refused here: its errors surface when a
    kernel is asked for (:meth:`CudaSource.kernel`), naming the file and line.

    Hostile text is refused here with CudaSourceError naming the limit (and the line where
    there is one): over :data:`MAX_SOURCE_BYTES`, a NUL character, brackets or ``#if``
    blocks nested deeper than :data:`MAX_NESTING`, a tree deeper than
    :data:`MAX_SYNTAX_DEPTH`, or parsing that takes longer than ``deadline_s`` seconds of
    ``clock``."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate: not text any file can hold
        line = _line_at(text, exc.start)
        raise CudaSourceError(f"{file}:{line}: character {exc.start} is a lone surrogate "
                              f"{text[exc.start]!a}, not text; save the file as UTF-8",
                              file=file, line=line, offset=exc.start) from None
    check_source_size(len(data), file)
    nul = text.find("\x00")
    if nul >= 0:
        line = _line_at(text, nul)
        raise CudaSourceError(f"{file}:{line}: a NUL character (character {nul}); a CUDA "
                              "source is text without NUL", file=file, line=line, offset=nul)
    _check_nesting(text, file)
    start = clock()

    def read(offset: int, _point: object) -> bytes:
        # The tree keeps this reader for Node.text, which reads a node's span chunk by
        # chunk: small chunks keep the text of a small node cheap.
        return data[offset:offset + 1024]

    def halt(*_state: object) -> bool:
        return clock() - start > deadline_s

    # A shared array's alignment the grammar cannot read is parsed as blanks (_unaligned_shared);
    # two readings it gets wrong are repaired by parsing a same-length shadow of the text
    # (see _misreadings). Every node's text still reads the source as written.
    shadow = _unaligned_shared(data)
    if shadow is data:
        tree = _parse(read, halt, file, deadline_s)
    else:
        first = [shadow]

        def read_first(offset: int, _point: object, shown: list[bytes] = first) -> bytes:
            return shown[0][offset:offset + 1024]

        tree = _parse(read_first, halt, file, deadline_s)
        first[0] = data  # Node.text reads through this reader: the text as written
    for _ in range(_MAX_REPAIR_ROUNDS):
        fixes = _misreadings(tree, data)
        if not fixes:
            break
        edited = bytearray(shadow)
        for at, replacement in fixes:
            edited[at:at + len(replacement)] = replacement
        shadow = bytes(edited)
        shown = [shadow]

        def read_shadow(offset: int, _point: object, shown: list[bytes] = shown) -> bytes:
            return shown[0][offset:offset + 1024]

        tree = _parse(read_shadow, halt, file, deadline_s)
        shown[0] = data  # Node.text reads through this reader: the text as written
    return CudaSource(text, file, tree)


def _parse(read: Callable[[int, object], bytes], halt: Callable[..., bool], file: str,
           deadline_s: float) -> Tree:
    try:
        tree = _parser().parse(read, progress_callback=halt)
    except ValueError:
        tree = None
    if tree is None:
        raise CudaSourceError(
            f"{file}: parsing took longer than {deadline_s:g} s and was stopped (text the "
            "CUDA grammar cannot read makes its error recovery slow); the workbench reads "
            "plain CUDA kernels", file=file, line=0, deadline_s=deadline_s)
    return tree


# -- a shared array's alignment -------------------------------------------------------------

#: CUDA's ``__align__(n)`` (a macro of the CUDA headers) and GCC's ``__attribute__((aligned(n)))``
#: (arguments with one level of parentheses: ``__align__(sizeof(float4))``)
_ALIGNMENT = re.compile(rb"__align__\s*\((?:[^()]|\([^()]*\))*\)|"
                        rb"__attribute__\s*\(\(\s*aligned\s*(?:\((?:[^()]|\([^()]*\))*\))?"
                        rb"\s*\)\)")


def _unaligned_shared(data: bytes) -> bytes:
    """``data`` with each alignment of a ``__shared__`` declaration (``extern __shared__
    __align__(16) float tile[];``, ``__shared__ float t[64] __attribute__((aligned(16)));``)
    blanked to spaces of the same length, for the parse only: the grammar reads neither, and
    a declaration without them declares the same array (its alignment only ever larger than
    the element's). ``data`` itself where there is none. A declaration is the text between
    the ``;``, ``{`` or ``}`` before the alignment and the ``;`` after it."""
    spans = []
    for m in _ALIGNMENT.finditer(data):
        start = max(data.rfind(b";", 0, m.start()), data.rfind(b"{", 0, m.start()),
                    data.rfind(b"}", 0, m.start())) + 1
        end = data.find(b";", m.end())
        if re.search(rb"\b__shared__\b", data[start:end if end >= 0 else len(data)]):
            spans.append(m.span())
    if not spans:
        return data
    out = bytearray(data)
    for a, b in spans:
        out[a:b] = bytes(c if c in b"\r\n" else 32 for c in data[a:b])
    return bytes(out)


# -- repairs of two misreadings of the grammar -------------------------------------------------

_MAX_REPAIR_ROUNDS = 8  # each round fixes every misreading found; nested ones need another
# Template functions a kernel calls with explicit arguments without declaring them itself.
_KNOWN_TEMPLATES = frozenset({"static_cast", "reinterpret_cast", "const_cast",
                              "dynamic_cast", "tiled_partition", "make_tuple", "get"})
_LOGICAL = frozenset({"&&", "||", "and", "or"})


def _misreadings(tree: Tree, data: bytes) -> list[tuple[int, bytes]]:
    """Same-length byte replacements (offset, bytes) that make the grammar read ``data`` as
    a C++ compiler does, for two known misreadings:

    - a comparison read as a template call: in ``r >= 0 && r < h && c >= 0`` the grammar
      may take ``r<h && c>`` for template arguments (``>=`` split into ``>`` and ``=``). A
      ``name<...>`` whose name is a variable of the file, or whose arguments hold ``&&`` /
      ``||``, and that no template of the file declares, is a comparison: its ``<`` is
      parsed as ``>`` (the same precedence; the node's text still reads ``<``);
    - a ``#pragma`` between a loop or ``if`` header and its brace-less body (``for (...)``
      / ``#pragma unroll`` / ``acc += x[t];``) ends the statement early (a missing ``;``):
      the pragma line is parsed as a comment of the same length, so the body is the
      statement after it (the pragma stays in the text, as a ``comment`` node)."""
    templates: set[str] = set()
    variables: set[str] = set()
    candidates: list[Node] = []
    pragmas: list[Node] = []
    for n in _walk(tree.root_node):
        t = n.type
        if t == "template_declaration":
            # the declared name: one level down (a walk of nested templates is quadratic)
            for c in n.named_children:
                name = c.child_by_field_name("name")
                decl = c.child_by_field_name("declarator")
                if decl is not None and decl.type == "function_declarator":
                    name = decl.child_by_field_name("declarator")
                if name is not None:
                    templates.add(_text(name))
        elif t in ("init_declarator", "parameter_declaration", "declaration"):
            for d in n.children_by_field_name("declarator"):
                while d.type in ("init_declarator", "pointer_declarator", "array_declarator",
                                 "reference_declarator") and d.child_by_field_name(
                                     "declarator") is not None:
                    inner = d.child_by_field_name("declarator")
                    assert inner is not None
                    d = inner
                if d.type == "identifier":
                    variables.add(_text(d))
        elif t == "template_function" and (n.parent is None or
                                           n.parent.type != "qualified_identifier"):
            candidates.append(n)
        elif t == "preproc_call":
            directive = n.child_by_field_name("directive")
            if directive is not None and _text(directive) == "#pragma":
                pragmas.append(n)
    fixes: list[tuple[int, bytes]] = []
    for n in candidates:
        name, args = n.child_by_field_name("name"), n.child_by_field_name("arguments")
        if name is None or args is None or name.type != "identifier" or \
                _text(name) in templates or _text(name) in _KNOWN_TEMPLATES:
            continue
        logical = any(c.type == "binary_expression" and (op := c.child_by_field_name(
            "operator")) is not None and _text(op) in _LOGICAL for c in args.named_children)
        opener = args.children[0] if args.children else None
        if (logical or _text(name) in variables) and opener is not None and \
                data[opener.start_byte:opener.end_byte] == b"<":
            fixes.append((opener.start_byte, b">"))
    for n in pragmas:
        before = n.prev_sibling
        if before is None or not (before.type == "ERROR" or _ends_missing(before)):
            continue
        end = data.find(b"\n", n.start_byte)
        end = len(data) if end < 0 else end
        line = data[n.start_byte:end]
        if len(line) >= 4 and not line.rstrip().endswith(b"\\"):
            fixes.append((n.start_byte, b"/*" + b" " * (len(line) - 4) + b"*/"))
    return fixes


def _ends_missing(node: Node) -> bool:
    """The node's last leaf is one the grammar inserted (a missing ``;``)."""
    while node.children:
        node = node.children[-1]
    return node.is_missing


def function_definitions(root: Node) -> Iterator[tuple[str, Node]]:
    """Each ``function_definition`` under ``root`` with its declared name, in file order
    (a name defined twice, as overloads are, comes twice)."""
    for fn in _walk(root):
        if fn.type != "function_definition":
            continue
        decl = fn.child_by_field_name("declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        ident = decl.child_by_field_name("declarator") if decl is not None else None
        if ident is not None:
            yield _text(ident), fn

"""A kernel whose body lives in a ``__device__`` function, inlined before the analysis.

Authors often write the work of a kernel once, as a function template, and export one
instance: ``template <int TILE> __device__ void rbf_tile(...) { ... }`` called as
``rbf_tile<16>(G, X, ...)`` by an ``extern "C" __global__`` entry. Every family reads the
kernel's own body (its thread indices, shared tiles, loops, launch constants), so such a
kernel offers them nothing. This pass writes the callee's body into the entry in place of
the call, the way the compiler inlines it, and the template parameters bound at the call
become the named constants the families already read (``#define TILE 16``).

Which calls: those of the entry to a function defined in the file that carries the launch
(reads ``threadIdx``/``blockIdx``/``blockDim``/``gridDim``, declares ``__shared__`` memory
or synchronises, itself or through what it calls), when the entry reads no thread or block
index itself: the kernel's decomposition then lives in the callee. Value helpers (``sq(x)``,
``dist2(a, b)``), and helpers of a kernel that indexes its threads itself (a block
reduction), stay calls, as the families already read them.

Legal only when (else refused with the reason and the line): the callee is defined once, at
file scope (no overloads or specialisations), not recursive, called once by the entry;
called as a statement (a ``void`` callee; a ``return`` in it then must end the kernel too,
so the call must be the kernel's last statement) or as one variable's initializer (its only
``return`` its last statement); each template argument named at the call or defaulted (not
deduced); pointer and reference parameters bound to plain identifiers; and its names
neither captured by the entry's nor capturing them (:mod:`.inline_bind` binds them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace

from tree_sitter import Node

from workbench.core.cuda_source import function_definitions, parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.templater.analysis import inside, text, walk
from workbench.templater.inline_bind import (
    CallParam,
    Refused,
    TemplateParam,
    call_params,
    declared,
    declared_types,
    fresh,
    integer_literal,
    names_in,
    signed_int,
    template_params,
    type_key,
    written,
)
from workbench.templater.records import Finding, LiftedParameter, LiftedSource

TRANSFORM = "INLINE"
_GEOMETRY = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_SYNCS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                    "__syncthreads_or", "__syncwarp"})
_NOTE_LINE = re.compile(r"\(line (\d+)\)$")


@dataclass(frozen=True)
class InlinedSource:
    """The source the analysis reads (the callee written into the entry), what was inlined
    or refused, and the baseline line each of its lines comes from (empty: the baseline)."""

    text: str
    file: str
    findings: tuple[Finding, ...] = ()
    origin: tuple[int, ...] = ()

    def baseline_line(self, line: int) -> int:
        """The baseline's line of ``text``'s ``line`` (1-based; 0 stays 0)."""
        if not self.origin or not 0 < line <= len(self.origin):
            return line
        return self.origin[line - 1]

    def restore(self, lifted: LiftedSource) -> LiftedSource:
        """``lifted`` (the lift of :attr:`text`) with its lines told in the baseline's and
        this pass's findings first."""
        if not self.findings and not self.origin:
            return lifted
        origin = re.compile(rf"^{re.escape(self.file)}:(\d+):")

        def param(p: LiftedParameter) -> LiftedParameter:
            return replace(p, origin=origin.sub(
                lambda m: f"{self.file}:{self.baseline_line(int(m[1]))}:", p.origin))

        findings = tuple(replace(f, line=self.baseline_line(f.line)) for f in lifted.findings)
        notes = tuple(_NOTE_LINE.sub(lambda m: f"(line {self.baseline_line(int(m[1]))})", n)
                      for n in lifted.notes)
        return replace(lifted, params=tuple(param(p) for p in lifted.params),
                       findings=self.findings + findings,
                       notes=tuple(str(f) for f in self.findings) + notes)


def inline_calls(source_text: str, entry: str | None, file: str) -> InlinedSource:
    """``source_text`` with the ``__device__`` functions that carry ``entry``'s launch
    written into it (see the module doc); unchanged where there are none or the source
    does not parse (the analysis then reports that itself)."""
    try:
        source = parse_cuda(source_text, file)
        kernel = source.kernel(entry)
    except CudaSourceError:
        return InlinedSource(source_text, file)
    fn = source.function_node(kernel)
    current = InlinedSource(source_text, file)
    if fn.parent is not None and fn.parent.type == "template_declaration" and \
            any(not p.is_type for p in _safe_template_params(fn.parent)):
        return replace(current, findings=(Finding(
            TRANSFORM, False, f"the kernel {kernel.name} is itself a function template "
            f"({text(fn.parent.child_by_field_name('parameters'))}): its instances have "
            "mangled names, and the workbench launches a kernel by its name; write it as an "
            f'extern "C" __global__ kernel that calls the template as a __device__ function '
            f"({kernel.name}_body<...>(...)), which is inlined", kernel.line),))
    for name in launch_callees(source.function_definitions(), source.body(kernel)):
        current = _step(current, kernel.name, name)
    return current


def _safe_template_params(outer: Node) -> list[TemplateParam]:
    try:
        return template_params(outer)
    except Refused:
        return []


def launch_callees(defs: dict[str, Node], body: Node) -> list[str]:
    """The functions ``body`` calls that carry its launch, in call order; none when the
    body reads a thread or block index itself (see the module doc)."""
    if any(text(n) in _GEOMETRY for n in walk(body) if n.type == "identifier"):
        return []
    found: list[str] = []
    for n in walk(body):
        name = callee_name(n) if n.type == "call_expression" else ""
        fn = defs.get(name)
        if fn is not None and name not in found and not _is_kernel(fn) and \
                _carries_launch(defs, name, set()):
            found.append(name)
    return found


def callee_name(call: Node) -> str:
    """The called function's plain name (``f`` of ``f(x)`` and of ``f<16>(x)``)."""
    function = call.child_by_field_name("function")
    if function is not None and function.type == "template_function":
        function = function.child_by_field_name("name")
    return text(function) if function is not None and function.type == "identifier" else ""


def _is_kernel(fn: Node) -> bool:
    return any(c.type == "__global__" for c in fn.children)


def _carries_launch(defs: dict[str, Node], name: str, seen: set[str]) -> bool:
    fn = defs.get(name)
    if fn is None or name in seen:
        return False
    seen.add(name)
    for n in walk(fn):
        if (n.type == "identifier" and text(n) in _GEOMETRY) or \
                (n.type == "declaration" and any(text(c) == "__shared__" for c in n.children)):
            return True
        if n.type == "call_expression" and (callee_name(n) in _SYNCS or
                                            _carries_launch(defs, callee_name(n), seen)):
            return True
    return False


def _step(current: InlinedSource, entry: str, name: str) -> InlinedSource:
    """``current`` with ``name`` inlined into ``entry``, or with the refusal recorded."""
    source = parse_cuda(current.text, current.file)
    kernel = source.kernel(entry)
    try:
        done = _Inlining(source.data, source.tree.root_node, source.function_node(kernel),
                         entry, name).write()
        parse_cuda(done.text, current.file).kernel(entry)
    except Refused as refused:
        return replace(current, findings=(*current.findings, Finding(
            TRANSFORM, False, f"{name} is not inlined into {entry}: {refused.reason}",
            current.baseline_line(refused.line))))
    except CudaSourceError as error:  # a bug of this pass: keep the kernel as written
        return replace(current, findings=(*current.findings, Finding(
            TRANSFORM, False, f"{name} is not inlined into {entry}: the inlined kernel does "
            f"not parse ({error})", current.baseline_line(done.line))))
    origin = tuple(current.baseline_line(k) for k in done.origin)
    return replace(current, text=done.text, origin=origin, findings=(
        *current.findings, Finding(TRANSFORM, True, done.summary,
                                   current.baseline_line(done.line))))


@dataclass(frozen=True)
class _Written:
    text: str
    origin: tuple[int, ...]  # the line of the text before of each line
    summary: str
    line: int  # the call's


@dataclass(frozen=True)
class _Edit:
    start: int
    end: int
    text: str = ""
    origin: int = 0  # the line its text is told to come from (its first line's, when copied)
    copied: bool = False  # text's lines are consecutive lines from ``origin`` on


@dataclass
class _Inlining:
    """One callee inlined into one entry: the analysis (raising :class:`Refused`) and the
    rewritten text."""

    data: bytes
    root: Node
    entry: Node  # the entry's function_definition
    entry_name: str
    name: str
    subs: dict[str, str] = field(default_factory=dict)  # the callee's name -> its text inlined
    defines: list[tuple[str, str]] = field(default_factory=list)
    copies: list[CallParam] = field(default_factory=list)
    args: dict[str, str] = field(default_factory=dict)  # a copied parameter -> its argument
    told: list[str] = field(default_factory=list)

    def write(self) -> _Written:
        fn = self._definition()
        outer = fn.parent if fn.parent is not None and \
            fn.parent.type == "template_declaration" else fn
        self._at_file_scope(outer)
        self._not_recursive(fn)
        call = self._only_call()
        site, init = self._site(call)
        body = fn.child_by_field_name("body")
        assert body is not None  # function_definitions lists definitions only
        self._returns(fn, body, site, init)
        self._bind_templates(outer, call)
        self._bind_params(fn, body, call)
        self._rename_locals(fn, body, outer)
        self._not_captured(fn, body, outer)
        return self._render(outer, body, call, site, init)

    # -- the analysis -----------------------------------------------------------------------

    def _definition(self) -> Node:
        defs = [fn for n, fn in function_definitions(self.root) if n == self.name]
        if len(defs) != 1:
            lines = ", ".join(str(d.start_point.row + 1) for d in defs)
            raise Refused(f"it is defined {len(defs)} times (lines {lines}): an overload or a "
                          "specialisation, which one a call reaches is the compiler's choice",
                          defs[-1])
        return defs[0]

    def _at_file_scope(self, outer: Node) -> None:
        """The callee is declared where the entry is (the file, or the same namespace, or an
        anonymous namespace in it): its free names then resolve alike inlined."""
        scope, home = _scope(outer), _scope(self.entry)
        while scope is not None and scope != home and scope.type == "namespace_definition" \
                and scope.child_by_field_name("name") is None:
            scope = _scope(scope)  # its names are the enclosing scope's too (an ambiguity
            # with one there does not compile: it cannot silently read another)
        if scope != home:
            raise Refused(f"it is defined {_scope_name(scope)} and the kernel "
                          f"{_scope_name(home)}: its names would resolve otherwise", outer)

    def _not_recursive(self, fn: Node) -> None:
        defs = dict(function_definitions(self.root))
        todo, seen = [fn], set()
        while todo:
            f = todo.pop()
            for n in walk(f):
                callee = callee_name(n) if n.type == "call_expression" else ""
                if callee == self.name:
                    raise Refused(f"it calls itself{'' if f is fn else ' through ' + callee}"
                                  " (recursion has no inlined form)", n)
                if callee in defs and callee not in seen:
                    seen.add(callee)
                    todo.append(defs[callee])

    def _only_call(self) -> Node:
        body = self.entry.child_by_field_name("body")
        assert body is not None
        calls = [n for n in walk(body) if n.type == "call_expression" and
                 callee_name(n) == self.name]
        if len(calls) == 1:
            return calls[0]
        where = ", ".join(f"{_targs(c) or '()'} at line {c.start_point.row + 1}" for c in calls)
        if len({_targs(c) for c in calls}) > 1:
            raise Refused(f"it is called {len(calls)} times with different template arguments "
                          f"({where}): one inlined body takes one set", calls[1])
        raise Refused(f"it is called {len(calls)} times ({where}): each call would need its "
                      "own copy, and its __shared__ memory is one per block; inlined only "
                      "where the kernel calls it once", calls[-1])

    def _site(self, call: Node) -> tuple[Node, Node | None]:
        """The statement the body replaces, and the init declarator of a result's variable."""
        parent = call.parent
        if parent is not None and parent.type == "expression_statement":
            return parent, None
        if parent is not None and parent.type == "init_declarator" and \
                parent.child_by_field_name("value") == call and parent.parent is not None and \
                parent.parent.type == "declaration" and \
                len(parent.parent.children_by_field_name("declarator")) == 1:
            return parent.parent, parent
        raise Refused(f"its result is used in an expression (`{_flat(parent or call)}`); "
                      "inlined only as a statement or as one variable's initializer", call)

    def _returns(self, fn: Node, body: Node, site: Node, init: Node | None) -> None:
        returns = [n for n in walk(body) if n.type == "return_statement"]
        declarator = fn.child_by_field_name("declarator")
        void = text(fn.child_by_field_name("type")) == "void" and \
            declarator is not None and declarator.type == "function_declarator"
        statements = _statements(body)
        if init is None:
            if not void:
                raise Refused(f"it returns {text(fn.child_by_field_name('type'))} and the "
                              "call discards it", site)
            last = _statements(self.entry.child_by_field_name("body"))  # type: ignore[arg-type]
            if returns and (not last or last[-1] != site):
                raise Refused("it returns early (line "
                              f"{returns[0].start_point.row + 1}), and the call is not the "
                              "kernel's last statement: inlined, that return would end the "
                              "kernel", site)
            return
        if void:
            raise Refused("its void result initialises a variable", site)
        if len(returns) != 1 or not statements or statements[-1] != returns[0] or \
                returns[0].named_child_count != 1:
            raise Refused(f"it returns at line {returns[0].start_point.row + 1} before its "
                          "end: a result is inlined only from one final return", returns[0]) \
                if returns else Refused("it has no return", fn)

    def _bind_templates(self, outer: Node, call: Node) -> None:
        params = template_params(outer)
        function = call.child_by_field_name("function")
        given = function.child_by_field_name("arguments") if function is not None and \
            function.type == "template_function" else None
        args = list(given.named_children) if given is not None else []
        if len(args) > len(params):
            raise Refused(f"the call names {len(args)} template arguments for "
                          f"{len(params)} parameters", call)
        outside = self._names_outside(outer)
        ints = self._int_constants()
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None:
                raise Refused(f"its template parameter {p.name} is deduced from the call's "
                              f"arguments; name it at the call ({self.name}<...>(...))", call)
            raw = _words(" ".join(text(arg).split()), self.subs)
            if p.is_type:
                self.subs[p.name] = raw
                self.told.append(f"{p.name} = {raw}")
                continue
            literal = integer_literal(raw, p.type_key)
            if literal is None and raw in ints and signed_int(p.type_key):
                self.subs[p.name] = raw  # the author's constant names it: its lifts follow
                self.told.append(f"{p.name} is {raw}")
                continue
            value = literal or (f"({raw})" if signed_int(p.type_key) else
                                f"(({text(p.node.child_by_field_name('type'))})({raw}))")
            name = p.name if p.name not in outside else \
                fresh(f"{self.name.upper()}_{p.name}", outside)
            outside.add(name)
            self.defines.append((name, value))
            if name != p.name:
                self.subs[p.name] = name
            if signed_int(p.type_key) and literal is not None:
                ints.add(name)
            self.told.append(f"{p.name} = {raw}" + (f" (as {name})" if name != p.name else ""))

    def _bind_params(self, fn: Node, body: Node, call: Node) -> None:
        params = call_params(fn)
        given = call.child_by_field_name("arguments")
        args = list(given.named_children) if given is not None else []
        if len(args) > len(params):
            raise Refused(f"the call passes {len(args)} arguments for {len(params)} "
                          "parameters", call)
        caller = declared_types(self.entry)
        for i, p in enumerate(params):
            arg = args[i] if i < len(args) else p.default
            if arg is None:
                raise Refused(f"the call gives no argument for {p.name}", call)
            raw, want = " ".join(text(arg).split()), _words(p.type_key, self.subs)
            has = caller.get(raw) if arg.type == "identifier" else None
            if p.indirect:
                kind = "reference" if p.reference else "pointer"
                if arg.type != "identifier":
                    raise Refused(f"its {kind} parameter {p.name} is bound to the expression "
                                  f"`{raw}`: pointers and references are bound by name only "
                                  "(a plain identifier of the kernel)", arg)
                if has is not None and has.rstrip("*&") != want.rstrip("*&"):
                    raise Refused(f"its {kind} parameter {p.name} ({want}) is bound to {raw} "
                                  f"({has}): renamed, its element type would change", arg)
                if p.reference or not written(body, p.name):
                    self.subs[p.name] = raw
                    continue
            elif has == want and not written(body, p.name):
                self.subs[p.name] = raw
                continue
            self.copies.append(p)
            self.args[p.name] = raw

    def _rename_locals(self, fn: Node, body: Node, outer: Node) -> None:
        locals_ = declared(body)
        params = {p.name for p in call_params(fn)}
        for name, nodes in locals_.items():
            if name in params:
                raise Refused(f"it declares {name} again, over its parameter", nodes[0])
        avoid = {text(n) for n in names_in(self.entry)} | set(self.subs.values()) | \
            {d for d, _ in self.defines}
        taken = {text(n) for n in names_in(self.root)} | avoid
        file_names = _file_scope_names(self.root)
        for name in [*locals_, *(p.name for p in self.copies)]:
            if name not in avoid:
                continue
            if name in file_names:
                raise Refused(f"its local {name} collides with the kernel's and also names a "
                              "file-scope declaration it may read: not renamed", outer)
            self.subs[name] = fresh(f"{self.name}_{name}", taken)
        renamed = [f"{k} as {v}" for k, v in self.subs.items()
                   if k in locals_ or k in self.args]
        if renamed:
            self.told.append(f"renamed {', '.join(renamed)} (the kernel names them too)")

    def _not_captured(self, fn: Node, body: Node, outer: Node) -> None:
        own = set(declared(body)) | {p.name for p in call_params(fn)} | \
            {p.name for p in template_params(outer)}
        kernel_names = set(declared(self.entry))
        for n in names_in(body):
            if text(n) not in own and text(n) in kernel_names:
                raise Refused(f"it reads {text(n)}, a name the kernel declares too: inlined, "
                              "it would read the kernel's", n)

    def _int_constants(self) -> set[str]:
        """Names of ``int`` constants: integer macros spelled without a suffix, and
        ``const``/``constexpr int`` with a literal value at file scope or in the entry."""
        ints = _int_macros(self.root)
        for decl in walk(self.root):
            if decl.type != "declaration" or not {"const", "constexpr"} & {
                    text(c) for c in decl.children}:
                continue
            for d in decl.children_by_field_name("declarator"):
                value = d.child_by_field_name("value") if d.type == "init_declarator" else None
                if value is not None and value.type == "number_literal" and \
                        text(value).isdigit() and \
                        type_key(decl.child_by_field_name("type"), d) == "int":
                    ints.add(text(d.child_by_field_name("declarator")))
        return ints

    def _names_outside(self, outer: Node) -> set[str]:
        """Names the file uses outside the callee (a macro's text included): a ``#define`` of
        a template parameter must not change them."""
        spans = [outer, *self._prototypes()]
        names = {text(n) for n in names_in(self.root) if not any(inside(n, s) for s in spans)}
        for n in walk(self.root):
            if n.type == "preproc_arg":
                names |= set(re.findall(r"[A-Za-z_]\w*", text(n)))
        return names

    def _prototypes(self) -> list[Node]:
        """The callee's declarations without a body (with their ``template <...>``)."""
        out: list[Node] = []
        for n in walk(self.root):
            if n.type != "declaration" or n.parent is None or n.parent.type not in (
                    "translation_unit", "template_declaration", "declaration_list"):
                continue
            d = n.child_by_field_name("declarator")
            if d is not None and d.type == "function_declarator" and \
                    text(d.child_by_field_name("declarator")) == self.name:
                out.append(n.parent if n.parent.type == "template_declaration" else n)
        return out

    # -- the text -----------------------------------------------------------------------

    def _render(self, outer: Node, body: Node, call: Node, site: Node,
                init: Node | None) -> _Written:
        indent = _indent(self.data, site)
        lines = [f"// {_flat(call)}: {self.name}'s body, inlined"]
        for p in self.copies:
            decl = self.data[p.node.start_byte:p.declarator.end_byte].decode()
            decl = _words(" ".join(decl.split()), self.subs)
            const = "" if written(body, p.name) or "const" in decl.split() or p.indirect \
                else "const "
            lines.append(f"{const}{decl} = {self.args[p.name]};")
        head = "".join(f"{line}\n{indent}" for line in lines)
        inner = _statements(body, comments=True)
        edits = [_Edit(site.start_byte, site.end_byte, head, site.start_point.row + 1)]
        if inner:
            text_ = self._body_text(body, inner, site, init, call)
            edits.append(_Edit(site.end_byte, site.end_byte,
                               _reindent(text_, _indent(self.data, inner[0]), indent),
                               inner[0].start_point.row + 1, copied=True))
        else:
            edits[0] = replace(edits[0], text=head.rstrip())
        edits += self._callee_edits(outer)
        out, origin = _assemble(self.data, edits)
        targs = _targs(call)
        summary = f"{self.name}{targs} inlined into {self.entry_name}"
        if self.told:
            summary += ": " + "; ".join(self.told)
        return _Written(out, tuple(origin), summary, call.start_point.row + 1)

    def _body_text(self, body: Node, inner: list[Node], site: Node, init: Node | None,
                   call: Node) -> str:
        start, end = inner[0].start_byte, inner[-1].end_byte
        edits: list[tuple[int, int, str]] = []
        for n in names_in(body):
            if text(n) in self.subs:
                edits.append((n.start_byte, n.end_byte, self.subs[text(n)]))
        for n in walk(body):
            if n.type in ("preproc_arg", "preproc_call") and n.named_child_count == 0:
                edits.append((n.start_byte, n.end_byte, _words(text(n), self.subs)))
        if init is not None:
            ret = inner[-1] if inner[-1].type == "return_statement" else \
                next(s for s in reversed(inner) if s.type == "return_statement")
            value = ret.named_children[0]
            before = self.data[site.start_byte:call.start_byte].decode()
            after = self.data[call.end_byte:site.end_byte].decode()
            wrap = value.type == "comma_expression"
            edits.append((ret.start_byte, value.start_byte, before + ("(" if wrap else "")))
            edits.append((value.end_byte, ret.end_byte, (")" if wrap else "") + after))
        pieces, pos = [], start
        for a, b, t in sorted(edits):
            if a < pos:
                continue
            pieces += [self.data[pos:a].decode(), t]
            pos = b
        pieces.append(self.data[pos:end].decode())
        return "".join(pieces)

    def _callee_edits(self, outer: Node) -> list[_Edit]:
        """The callee's definition and prototypes removed (where nothing else calls it) and
        the template parameters' ``#define`` lines put where it was (before the entry when it
        is defined after it, or kept)."""
        defines = "\n".join(f"#define {n} {v}" for n, v in self.defines)
        line = outer.start_point.row + 1
        others = [n for n in names_in(self.root) if text(n) == self.name and not
                  inside(n, self.entry) and not inside(n, outer) and
                  not any(inside(n, p) for p in self._prototypes())]
        edits: list[_Edit] = []
        before = outer.start_byte < self.entry.start_byte
        if not others:
            for p in self._prototypes():
                edits.append(_Edit(p.start_byte, _line_end(self.data, p.end_byte)))
            if before and defines:
                edits.append(_Edit(outer.start_byte, outer.end_byte, defines, line))
            else:
                end = _line_end(self.data, outer.end_byte)
                if self.data[end:end + 1] == b"\n" and \
                        self.data[:outer.start_byte].endswith(b"\n\n"):
                    end += 1  # one blank line where it stood between two
                edits.append(_Edit(outer.start_byte, end))
        if defines and (others or not before):
            top = self.entry
            while top.parent is not None and top.parent.type != "translation_unit":
                top = top.parent
            at = self.data.rfind(b"\n", 0, top.start_byte) + 1
            edits.append(_Edit(at, at, defines + "\n", line))
        return edits


def _int_macros(root: Node) -> set[str]:
    """The file's macros defined once as a plain ``int`` literal (``#define BS 256``)."""
    values: dict[str, list[str]] = {}
    for n in walk(root):
        if n.type == "preproc_def":
            value = re.sub(r"//[^\n]*|/\*.*?\*/", "", text(n.child_by_field_name("value")),
                           flags=re.S).strip().strip("()").strip()
            values.setdefault(text(n.child_by_field_name("name")), []).append(value)
    return {k for k, v in values.items()
            if len(v) == 1 and re.fullmatch(r"0[xX][0-9a-fA-F]+|\d+", v[0])}


def _scope(node: Node) -> Node | None:
    """The namespace, class or file ``node`` is declared in."""
    scope = node.parent
    while scope is not None and scope.type not in (
            "translation_unit", "namespace_definition", "class_specifier", "struct_specifier",
            "function_definition"):
        scope = scope.parent
    return scope


def _scope_name(scope: Node | None) -> str:
    if scope is None or scope.type == "translation_unit":
        return "at file scope"
    name = scope.child_by_field_name("name")
    kind = scope.type.split("_")[0]
    return f"in {kind} {text(name)}" if name is not None else f"in an anonymous {kind}"


def _file_scope_names(root: Node) -> set[str]:
    names: set[str] = set()
    for top in root.children:
        for n in walk(top):
            if n.type in ("preproc_def", "preproc_function_def"):
                names.add(text(n.child_by_field_name("name")))
        if top.type == "declaration":
            names |= set(declared(top))
    names |= {n for n, _ in function_definitions(root)}
    return names


def _statements(body: Node, comments: bool = False) -> list[Node]:
    return [c for c in body.children if c.type not in ("{", "}") and
            (comments or c.type != "comment")]


def _targs(call: Node) -> str:
    function = call.child_by_field_name("function")
    args = function.child_by_field_name("arguments") if function is not None and \
        function.type == "template_function" else None
    return "" if args is None else " ".join(text(args).split())


def _flat(node: Node) -> str:
    return " ".join(text(node).split())


def _words(raw: str, subs: dict[str, str]) -> str:
    """``raw`` with each whole word in ``subs`` replaced (a type's or a macro's text)."""
    if not subs:
        return raw
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, subs)) + r")\b")
    return pattern.sub(lambda m: subs[m[1]], raw)


def _indent(data: bytes, node: Node) -> str:
    start = data.rfind(b"\n", 0, node.start_byte) + 1
    lead = data[start:node.start_byte].decode()
    return lead if not lead.strip() else ""


def _reindent(body: str, old: str, new: str) -> str:
    lines = body.split("\n")
    return "\n".join([lines[0], *(new + line[len(old):] if line.startswith(old) else line
                                  for line in lines[1:])])


def _line_end(data: bytes, pos: int) -> int:
    """``pos``, or past the newline when only blanks follow it on its line."""
    end = data.find(b"\n", pos)
    return end + 1 if end >= 0 and not data[pos:end].strip() else pos


def _assemble(data: bytes, edits: Iterable[_Edit]) -> tuple[str, list[int]]:
    """``data`` with ``edits`` applied, and the line of ``data`` each output line is told to
    come from (its first non-blank text's)."""
    pieces: list[tuple[str, Iterator[int]]] = []
    pos = 0
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        pieces.append((data[pos:e.start].decode(), _count_from(data, pos)))
        pieces.append((e.text, _count_from(data, -1, e.origin, e.copied)))
        pos = e.end
    pieces.append((data[pos:].decode(), _count_from(data, pos)))
    out: list[str] = []
    origin: list[int] = []
    line_origin, has_text = 0, False
    for piece, lines in pieces:
        for i, segment in enumerate(piece.split("\n")):
            if i:
                origin.append(line_origin)
                line_origin, has_text = 0, False
            at = next(lines)
            if segment.strip() and not has_text:
                line_origin, has_text = at, True
            elif not line_origin:
                line_origin = at
        out.append(piece)
    origin.append(line_origin)
    return "".join(out), origin


def _count_from(data: bytes, pos: int, origin: int = 0, copied: bool = True) -> Iterator[int]:
    """The lines a piece's segments come from: consecutive from ``pos``'s line (or from
    ``origin``), or ``origin`` for each when the text is written, not copied."""
    line = data.count(b"\n", 0, pos) + 1 if pos >= 0 else origin
    while True:
        yield line
        if copied:
            line += 1

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
reduction), stay calls, as the families already read them; a helper whose loop walks a
coordinate, reads a window around it, tests state it steps from it (an escape-time
count, a Newton solve: the loop the items of :mod:`.ilp` share), or carries such state from
trip to trip with no early exit (a recurrence, a series' sum: called by every item, changing
only its locals, :func:`_carries_point`) is inlined, and so is one that exchanges values
between a warp's lanes (``s = warp_sum(s);``: the warp families read the shuffles in the
kernel's body).

Legal only when (else refused with the reason and the line): the callee is defined once, at
file scope (no overloads or specialisations), not recursive, called once by the entry
(or, where it keeps no ``__shared__`` or ``static`` state, inlined at each of its calls in
turn: each call a copy of its own, :func:`.inline_site._only_call`);
called as a statement (a ``void`` callee; a ``return`` in it then must end the kernel too,
so the call must be the kernel's last statement), as one variable's initializer or as the
value a statement assigns (``out[i] = f(..)``, or an operand of casts and arithmetic in that
value: ``y[i] = (float)f(..)``; its only ``return`` its last statement); each template
argument named at the call, defaulted, or (a type) deduced from arguments of known type;
pointer and reference parameters bound to plain identifiers; and its names neither captured
by the entry's nor capturing them (:mod:`.inline_site` binds them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from tree_sitter import Node

from workbench.core.cuda_source import parse_cuda
from workbench.core.errors import CudaSourceError
from workbench.templater.analysis import declared_name, mentions, text, walk
from workbench.templater.inline_bind import (
    CallParam,
    Refused,
    TemplateParam,
    call_params,
    callee_name,
    template_params,
)
from workbench.templater.inline_members import free_members
from workbench.templater.inline_namespaces import open_namespaces
from workbench.templater.inline_site import bind, find_site
from workbench.templater.inline_text import write
from workbench.templater.item_state import assigned_names, declarator_name, item_names
from workbench.templater.purity import PURE_CALLS
from workbench.templater.records import Finding, LiftedParameter, LiftedSource
from workbench.templater.warp_shuffles import WARP_COLLECTIVES

TRANSFORM = "INLINE"
_GEOMETRY = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim"})
_SYNCS = frozenset({"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                    "__syncthreads_or", "__syncwarp"})
#: A line a note names, in its text or at its end (``the loop at line 44 ... (line 39)``).
_NOTE_LINE = re.compile(r"\bline (\d+)\b")


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

    def edited(self, edits: list[tuple[int, int, str]]) -> InlinedSource:
        """This source with each edit (start byte, end byte, new text) made, the last first
        (the edits do not overlap)."""
        data = self.text.encode()
        for start, end, new in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
            data = data[:start] + new.encode() + data[end:]
        return replace(self, text=data.decode())

    def note(self, notes: dict[tuple[int, str], Finding], transform: str, applied: bool,
             reason: str, at: int) -> None:
        """Record ``transform``'s finding at this source's line ``at`` in ``notes`` once (by
        the baseline's line and the reason)."""
        finding = Finding(transform, applied, reason, self.baseline_line(at))
        notes.setdefault((finding.line, reason), finding)

    def restore(self, lifted: LiftedSource) -> LiftedSource:
        """``lifted`` (the lift of :attr:`text`) with its lines told in the baseline's and
        this pass's findings first."""
        if not self.findings and not self.origin:
            return lifted
        origin = re.compile(rf"^{re.escape(self.file)}:(\d+):")

        def param(p: LiftedParameter) -> LiftedParameter:
            return replace(p, origin=origin.sub(
                lambda m: f"{self.file}:{self.baseline_line(int(m[1]))}:", p.origin))

        def lines(note: str) -> str:
            return _NOTE_LINE.sub(lambda m: f"line {self.baseline_line(int(m[1]))}", note)

        findings = tuple(replace(f, line=self.baseline_line(f.line), reason=lines(f.reason))
                         for f in lifted.findings)
        notes = tuple(lines(n) for n in lifted.notes)
        return replace(lifted, params=tuple(param(p) for p in lifted.params),
                       findings=self.findings + findings,
                       notes=tuple(str(f) for f in self.findings) + notes)


def inline_calls(source_text: str, entry: str | None, file: str, *,
                 block_stages: bool = False) -> InlinedSource:
    """``source_text`` with the ``__device__`` functions that carry ``entry``'s launch
    written into it (see the module doc); unchanged where there are none or the source
    does not parse (the analysis then reports that itself). The file's namespaces are
    opened first (:mod:`.inline_namespaces`), then a class's static members read as free
    functions (:mod:`.inline_members`)."""
    source_text, opened = open_namespaces(source_text, entry, file)
    source_text, members = free_members(source_text, entry, file)
    members = opened + members
    try:
        source = parse_cuda(source_text, file)
        kernel = source.kernel(entry)
    except CudaSourceError:
        return InlinedSource(source_text, file)
    fn = source.function_node(kernel)
    current = InlinedSource(source_text, file, members)
    if fn.parent is not None and fn.parent.type == "template_declaration" and \
            any(not p.is_type for p in _safe_template_params(fn.parent)):
        return replace(current, findings=(Finding(
            TRANSFORM, False, f"the kernel {kernel.name} is itself a function template "
            f"({text(fn.parent.child_by_field_name('parameters'))}): its instances have "
            "mangled names, and the workbench launches a kernel by its name; write it as an "
            f'extern "C" __global__ kernel that calls the template as a __device__ function '
            f"({kernel.name}_body<...>(...)), which is inlined", kernel.line),))
    for name in launch_callees(source.function_definitions(), source.body(kernel),
                               block_stages):
        current = _step(current, kernel.name, name)
        # a callee called again (one that keeps no state: inline_site._only_call) is
        # inlined call by call, while each step leaves one call fewer
        calls = _calls(current, kernel.name, name)
        while calls > 0 and current.findings and current.findings[-1].applied:
            current = _step(current, kernel.name, name)
            left = _calls(current, kernel.name, name)
            if left >= calls:
                break
            calls = left
    return current


def _calls(current: InlinedSource, entry: str, name: str) -> int:
    """How many times ``entry`` calls ``name`` in ``current``."""
    source = parse_cuda(current.text, current.file)
    body = source.body(source.kernel(entry))
    return sum(1 for n in walk(body) if n.type == "call_expression" and callee_name(n) == name)


def _safe_template_params(outer: Node) -> list[TemplateParam]:
    try:
        return template_params(outer)
    except Refused:
        return []


def launch_callees(defs: dict[str, Node], body: Node, block_stages: bool = False) -> list[str]:
    """The functions ``body`` calls that carry its launch, in call order: when the body
    reads no thread or block index itself, those that read one (see the module doc);
    otherwise those that walk a coordinate the body passes them (:func:`_walks_coordinate`)
    or combine a warp's lanes (:func:`_combines_lanes`), and, with ``block_stages``, those
    that hold a block's shared stage (:func:`block_stage`: ``block_sum<256>(s)``, read by
    the reduction family once in the body; the lift tries that reading where it lifts
    more, :func:`.semantic.lift_kernel`)."""
    indexed = any(text(n) in _GEOMETRY for n in walk(body) if n.type == "identifier")
    coordinates = _coordinates(body) if indexed else frozenset()
    found: list[str] = []
    for n in walk(body):
        name = callee_name(n) if n.type == "call_expression" else ""
        fn = defs.get(name)
        if fn is None or name in found or _is_kernel(fn):
            continue
        if _walks_coordinate(fn, n, coordinates) or _combines_lanes(defs, name, set()) or \
                (block_stages and block_stage(fn)) \
                if indexed else _carries_launch(defs, name, set()):
            found.append(name)
    return found


def block_stage(fn: Node) -> bool:
    """Whether ``fn`` itself declares ``__shared__`` memory and synchronises the block (a
    block's reduction stage written as a helper)."""
    shared = any(n.type == "declaration" and any(text(c) == "__shared__" for c in n.children)
                 for n in walk(fn))
    return shared and any(n.type == "call_expression" and callee_name(n) in _SYNCS
                          for n in walk(fn))


def _combines_lanes(defs: dict[str, Node], name: str, seen: set[str]) -> bool:
    """Whether ``name`` (itself or through what it calls) exchanges values between a warp's
    lanes (a shuffle, a vote): the warp families read those exchanges in the kernel's body
    and refuse a kernel that leaves them in a call (``s = warp_sum(s);`` with the shuffles
    in ``warp_sum``), so such a callee is inlined like one that walks a coordinate."""
    fn = defs.get(name)
    if fn is None or name in seen:
        return False
    seen.add(name)
    return any(n.type == "call_expression" and (
        callee_name(n).startswith(WARP_COLLECTIVES) or _combines_lanes(defs, callee_name(n), seen))
        for n in walk(fn))


def _coordinates(body: Node, seed: frozenset[str] = _GEOMETRY) -> frozenset[str]:
    """The locals of ``body`` whose value reads a thread or block index (or a name of
    ``seed``), directly or through another such local (``lane = threadIdx.x``, ``row =
    blockIdx.x * 8 + ..``)."""
    values = [(name, value) for d in walk(body) if d.type == "declaration"
              for name, _, value in [declared_name(d)] if value is not None]
    found: set[str] = set(seed)
    grown = True
    while grown:
        grown = False
        for name, value in values:
            if name not in found and mentions(value, found):
                found.add(name)
                grown = True
    return frozenset(found)


def _walks_coordinate(fn: Node, call: Node, coordinates: frozenset[str]) -> bool:
    """Whether ``fn`` (called at ``call``) holds the thread's walk of the kernel: a loop
    of it starts, ends or steps by a parameter the call binds to a thread coordinate, or by
    a local computed from one (``for (int w = lane; w < n; w += 32)``, ``int c = first;
    while (c < n)`` with ``lane``, ``first`` passed from ``threadIdx.x``). The
    families read a walk in the kernel's body, so such a callee is inlined like one that
    reads the launch itself; a value helper given an index (``f(x, i)``) loops over no
    parameter that way and stays a call. A loop that reads a window around a coordinate
    (:func:`_window_read`) holds the kernel's work too: a per-pixel filter helper
    (``bilateral_pixel(img, x, y, ..)``) is inlined so the window families read its taps."""
    given = call.child_by_field_name("arguments")
    args = list(given.named_children) if given is not None else []
    try:
        params = call_params(fn)
    except Refused:
        return False
    walked = _coordinates(fn, frozenset(p.name for p, a in zip(params, args, strict=False)
                                        if mentions(a, coordinates)))
    for loop in walk(fn):
        if loop.type == "for_statement":
            header = [loop.child_by_field_name(f) for f in ("initializer", "condition",
                                                             "update")]
        elif loop.type in ("while_statement", "do_statement"):
            header = [loop.child_by_field_name("condition")]
        else:
            continue
        carried = _carries_point(loop, walked) and _every_item_calls(call, coordinates) and \
            _changes_only_locals(fn, params)
        if any(h is not None and mentions(h, walked) for h in header) or \
                _window_read(loop, walked) or _steps_point(loop, header, walked) or carried:
            return True
    return False


def _changes_only_locals(fn: Node, params: list[CallParam]) -> bool:
    """Whether ``fn`` writes only its own scalar locals, value parameters and local arrays'
    elements, and calls only pure math. Inlined into a loop the items share, a statement no
    item's value decides runs once a thread: a write to memory there (a call counter) would
    run once a thread where the thread as written ran it once an item."""
    scalars = {p.name for p in params if not p.indirect}
    arrays: set[str] = set()
    for decl in walk(fn):
        if decl.type != "declaration" or any(text(c) in ("static", "__shared__")
                                             for c in decl.children):
            continue
        for d in decl.children_by_field_name("declarator"):
            inner = d.child_by_field_name("declarator") if d.type == "init_declarator" else d
            kind = inner.type if inner is not None else ""
            if kind == "array_declarator":
                arrays.add(declarator_name(d))
            elif kind != "pointer_declarator":
                scalars.add(declarator_name(d))
    for n in walk(fn):
        target = n.child_by_field_name("left") if n.type == "assignment_expression" else \
            n.child_by_field_name("argument") if n.type == "update_expression" else None
        owned = scalars
        while target is not None and target.type == "subscript_expression":
            target, owned = target.child_by_field_name("argument"), arrays  # its array
        if target is not None and (target.type != "identifier" or text(target) not in owned):
            return False
        if n.type == "call_expression" and callee_name(n) not in PURE_CALLS:
            return False
    return True


def _every_item_calls(call: Node, coordinates: frozenset[str]) -> bool:
    """Whether every thread reaching the kernel's last statement makes ``call``: no branch,
    loop or ``?:`` around it tests a thread coordinate, but for the bounds check that is
    the kernel's last statement (``if (i < n) y[i] = f(..);``, an item's ``live`` flag to
    :mod:`.ilp`). Only there can the items share the loop inlined (under a test of the
    item's own value, each item would run it alone in its turn, as the call did)."""
    node = call.parent
    while node is not None and node.type != "function_definition":
        tested = node.child_by_field_name("condition")
        if tested is not None and mentions(tested, coordinates) and not (
                node.type == "if_statement" and
                node.child_by_field_name("alternative") is None and
                node.parent is not None and node.parent.parent is not None and
                node.parent.parent.type == "function_definition" and
                node.parent.named_children[-1] == node):
            return False
        node = node.parent
    return True


def _carries_point(loop: Node, walked: frozenset[str]) -> bool:
    """Whether ``loop`` carries state computed from a thread coordinate from one trip to
    the next, every trip: its body assigns, from the coordinate, a local declared outside it
    (Clenshaw's ``b2 = b1; b1 = 2 * t * b1 - b2 + c[j]`` from the point ``t``, a series'
    running sum) and leaves by no ``break``, ``return`` or ``goto``. The loop is the item's
    work, a chain of dependent steps whatever its counter walks; the thread's items
    interleave their chains once it is in the kernel's body (:mod:`.ilp`), where each item's
    call runs its loop whole in its turn. A loop an item may leave early (a solve's
    convergence test) stays a call unless its test reads the state (:func:`_steps_point`)."""
    body = loop.child_by_field_name("body")
    if not walked or body is None or any(
            n.type in ("break_statement", "return_statement", "goto_statement")
            for n in walk(body)):
        return False
    inside = {declarator_name(d) for n in walk(body) if n.type == "declaration"
              for d in n.children_by_field_name("declarator")}
    state = item_names([body], next(iter(walked)), frozenset(), walked)
    return bool(assigned_names(body) & state - inside)


def _steps_point(loop: Node, header: list[Node | None], walked: frozenset[str]) -> bool:
    """Whether ``loop``'s test reads state its body computes from a thread coordinate
    (``z = z * z + c`` with ``c`` the pixel's point, until ``|z| > 2``; a Newton step from
    the element's value until it converges): a loop on the item's own state, whose trips
    the thread's items share once it is in the kernel's body (:mod:`.ilp_loops`); as a
    call, each item's loop runs whole in its turn."""
    if not walked:
        return False
    state = item_names([loop], next(iter(walked)), frozenset(), walked)
    return any(h is not None and mentions(h, state) for h in header)


def _window_read(loop: Node, walked: frozenset[str]) -> bool:
    """Whether ``loop`` (a ``for``) reads memory at an index that combines a thread
    coordinate with its own counter (``img[(y + dy) * w + x + dx]``, through locals too):
    a window around the thread's point, the work a window family reads in the kernel."""
    init = loop.child_by_field_name("initializer")
    counter = {declared_name(init)[0]} if init is not None and init.type == "declaration" \
        else set()
    body = loop.child_by_field_name("body")
    if not counter or body is None:
        return False
    moved = _coordinates(body, frozenset(counter))
    for n in walk(body):
        index = n.child_by_field_name("index") or n.child_by_field_name("indices") \
            if n.type == "subscript_expression" else None
        if index is not None and mentions(index, walked) and mentions(index, moved):
            return True
    return False


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
        site = find_site(source.data, source.tree.root_node, source.function_node(kernel),
                         entry, name)
        done = write(site, bind(site))
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

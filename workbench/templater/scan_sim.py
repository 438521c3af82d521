"""A block of a kernel run on symbols: what a scan kernel computes, whatever its spelling.

The scan family (:mod:`.scan`) recognises a per-row prefix scan by running the kernel's
body for one block on the parse, every thread a Python generator, ``__syncthreads`` a
barrier of the block and the warp shuffles an exchange among a warp's 32 lanes (each lane
must reach the same shuffle). Integers (indices, loop counters, the row length) are
concrete; each element the kernel loads is a symbol, and what the scan operator makes of
symbols is a :class:`Part`: which elements it combines, each exactly once. So a
Hillis-Steele pass, a double-buffered one, a Blelloch up/down sweep or a warp-shuffle scan
over warp totals all end in the same parts at the same outputs, and a dropped, doubled or
misplaced element shows as a different part. Two threads touching one shared word between
barriers (one of them writing) is a race the GPU would not order: refused, never guessed.

Only the subset a block scan needs is followed (declarations, assignments, ``for`` /
``while`` / ``if``, the arithmetic of indices, ``+`` ``*`` ``fmaxf`` ``fminf`` ``max``
``min`` on scanned values, shuffles); anything else raises :class:`~.regtile.Refused` with
its line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import text
from workbench.templater.regtile import Refused

#: The scan operators followed: the C spellings of each.
OPERATORS = {"+": "+", "*": "*", "fmaxf": "max", "fmax": "max", "max": "max",
             "fminf": "min", "fmin": "min", "min": "min"}
#: Named values an index or identity may read.
_NAMED = {"warpSize": 32, "INFINITY": math.inf, "HUGE_VALF": math.inf,
          "FLT_MAX": 3.4028234663852886e38, "DBL_MAX": 1.7976931348623157e308,
          "INT_MAX": 2**31 - 1, "INT_MIN": -2**31, "UINT_MAX": 2**32 - 1}
_SHUFFLES = ("__shfl_up_sync", "__shfl_down_sync", "__shfl_sync", "__shfl_xor_sync")
_INTEGRAL = ("int", "unsigned", "long", "short", "char", "size_t", "int32_t", "int64_t",
             "uint32_t", "uint64_t")
#: Statements the interpreter gives up on after this many (a loop that never ends).
_STEP_LIMIT = 5_000_000


class Lite:
    """A parse node copied once into plain Python (the interpreter visits each many times
    a block; reading tree-sitter's nodes again each time was most of its cost)."""

    __slots__ = ("children", "fields", "key", "many", "named", "node", "reads", "shuffles", "text",
                 "type")

    def __init__(self, node: Node) -> None:
        self.node, self.type, self.text = node, node.type, text(node)
        self.key = (node.start_byte, node.end_byte)
        self.children = [Lite(c) for c in node.children]
        self.named = [c for c, n in zip(self.children, node.children, strict=True)
                      if n.is_named]
        self.fields: dict[str, Lite] = {}
        self.many: dict[str, list[Lite]] = {}
        for i, c in enumerate(self.children):
            name = node.field_name_for_child(i)
            if name is not None:
                self.fields.setdefault(name, c)
                self.many.setdefault(name, []).append(c)
        # post-order: the innermost shuffle first, a read's own reads before it
        self.shuffles: list[Lite] = [n for c in self.children for n in c.shuffles]
        self.reads: list[Lite] = [n for c in self.children for n in c.reads]
        if self.type == "call_expression" and _fn(self) in _SHUFFLES:
            self.shuffles.append(self)
        if _is_read(self):
            self.reads.append(self)

    def get(self, name: str) -> Lite | None:
        return self.fields.get(name)


@dataclass(frozen=True)
class Part:
    """Elements combined by the scan operator: sorted disjoint closed ranges of their keys
    (an element's key is its offset in the loaded array)."""

    spans: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Ptr:
    """A kernel pointer argument plus an element offset."""

    name: str
    offset: int


def identity_of(op: str, value: float) -> bool:
    """Whether ``value`` leaves every value alone under ``op``."""
    if op == "+":
        return value == 0
    if op == "*":
        return value == 1
    if op == "max":
        return value <= -_NAMED["FLT_MAX"] or value == _NAMED["INT_MIN"]
    return value >= _NAMED["FLT_MAX"] or value in (_NAMED["INT_MAX"], _NAMED["UINT_MAX"])


def _merge(a: Part, b: Part, node: Lite) -> Part:
    spans = sorted(a.spans + b.spans)
    out: list[tuple[int, int]] = []
    for lo, hi in spans:
        if out and lo <= out[-1][1]:
            raise _no(f"`{_short(node)}` combines element {lo} twice", node)
        if out and lo == out[-1][1] + 1:
            out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return Part(tuple(out))


def _short(node: Lite) -> str:
    return " ".join(_t(node).split())[:60]


class _Exit(WorkbenchError):
    """A thread's run left the block early (``return``, ``break``, ``continue``): control
    flow inside the simulation, caught there; a WorkbenchError as every error of the tree."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"the simulated thread left its block by {kind}", kind=kind)
        self.kind = kind


@dataclass
class Thread:
    """One thread's locals and the shuffle results it is owed."""

    index: int
    env: dict[str, Any] = field(default_factory=dict)
    shuffled: dict[tuple[int, int], Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Store:
    """One write to global memory: where, what, by which thread."""

    ptr: Ptr
    value: Any
    thread: int


class Block:
    """One block of ``threads`` threads running ``body`` on symbols. ``args`` gives each
    kernel argument its value (a :class:`Ptr` for pointers); ``elements`` are the element
    expressions (their nodes' (start, end) bytes): each evaluates to the :class:`Part` of
    the element its first global read addresses."""

    def __init__(self, threads: int, block_index: int, grid: int, args: Mapping[str, Any],
                 constants: Mapping[str, int], elements: set[tuple[int, int]]) -> None:
        self.threads, self.block_index, self.grid = threads, block_index, grid
        self.args, self.constants, self.elements = dict(args), dict(constants), elements
        self.shared: dict[str, list[Any]] = {}
        self.access: dict[tuple[str, int], tuple[int | None, set[int]]] = {}
        self.op: str | None = None
        self.spelling: str | None = None  # the operator as first written
        self.stores: list[Store] = []
        self.loaded: list[tuple[Ptr, int]] = []  # (first read of an element, thread)
        self.steps = 0

    def prologue_env(self, statements: list[Node]) -> dict[str, Any]:
        """Thread 0's locals after ``statements`` (which must not synchronise)."""
        thread = Thread(0)
        for _event in self._body([Lite(s) for s in statements], thread):
            raise _no("the statements before the scan synchronise")
        return thread.env

    def place(self, node: Node, env: Mapping[str, Any]) -> Any:
        """Where the subscript or ``*p`` ``node`` points with thread 0's ``env``."""
        return self._place(Lite(node), Thread(0, dict(env)))

    def constant(self, node: Node) -> Any:
        """``node``'s value where it reads no local."""
        return self.value(Lite(node), Thread(0))

    # -- running -------------------------------------------------------------------------

    def run(self, statements: list[Node]) -> None:
        """Every thread runs ``statements``; barriers and shuffles as on the GPU."""
        threads = [Thread(i) for i in range(self.threads)]
        lite = [Lite(s) for s in statements]
        gens = [self._body(lite, th) for th in threads]
        waiting: dict[int, Any] = {}
        reply: dict[int, Any] = {i: None for i in range(self.threads)}
        live = set(range(self.threads))
        while live:
            for i in sorted(reply):
                try:
                    waiting[i] = gens[i].send(reply[i])
                except StopIteration:
                    live.discard(i)
            reply = {}
            if not live:
                break
            shuffles = {i for i in live if waiting[i][0] == "shfl"}
            for warp in sorted({i // 32 for i in shuffles}):
                lanes = [i for i in live if i // 32 == warp]
                if any(i not in shuffles for i in lanes) or len(lanes) < 32:
                    raise _no("the lanes of a warp do not all reach the same shuffle",
                                  waiting[min(lanes)][1])
                reply.update(self._exchange(warp, waiting))
            if reply:
                continue
            nodes = {i: waiting[i][1] for i in live}
            if len(live) < self.threads or any(waiting[i][0] != "sync" for i in live):
                raise _no("a barrier that not every thread of the block reaches",
                              nodes[min(live)])
            self.access.clear()
            reply = {i: None for i in live}

    def _exchange(self, warp: int, waiting: Mapping[int, Any]) -> dict[int, Any]:
        values = {i - 32 * warp: waiting[i][2] for i in range(32 * warp, 32 * warp + 32)}
        out = {}
        for i in range(32 * warp, 32 * warp + 32):
            _kind, node, _v, name, arg, width = waiting[i]
            lane = i - 32 * warp
            base = lane - lane % width
            if name == "__shfl_up_sync":
                src = lane - arg if lane % width >= arg else lane
            elif name == "__shfl_down_sync":
                src = lane + arg if lane % width + arg < width else lane
            elif name == "__shfl_xor_sync":
                src = lane ^ arg if (lane ^ arg) // width == lane // width else lane
            else:
                src = base + arg % width
            if not 0 <= src < 32:
                raise _no("a shuffle reads outside its warp", node)
            out[i] = values[src]
        return out

    def _body(self, statements: list[Lite], th: Thread) -> Generator[Any, Any, None]:
        try:
            for s in statements:
                yield from self.statement(s, th)
        except _Exit as done:
            if done.kind != "return":
                raise _no(f"`{done.kind}` outside a loop") from None

    # -- statements ----------------------------------------------------------------------

    def statement(self, node: Lite, th: Thread) -> Generator[Any, Any, None]:
        self.steps += 1
        if self.steps > _STEP_LIMIT:
            raise _no("the block did not finish within the interpreter's step limit",
                          node)
        kind = node.type
        if kind in ("comment", ";", "{", "}") or kind.startswith("preproc"):
            return
        if kind == "compound_statement":
            for s in node.named:
                yield from self.statement(s, th)
        elif kind == "declaration":
            yield from self._declaration(node, th)
        elif kind == "expression_statement":
            expr = node.named[0] if node.named else None
            if expr is not None:
                if _is_call(expr, "__syncthreads"):
                    yield ("sync", node)
                else:
                    yield from self._shuffles(expr, th)
                    self.value(expr, th)
        elif kind == "if_statement":
            yield from self._if(node, th)
        elif kind in ("for_statement", "while_statement", "do_statement"):
            yield from self._loop(node, th)
        elif kind == "return_statement":
            raise _Exit("return")
        elif kind in ("break_statement", "continue_statement"):
            raise _Exit(kind.split("_")[0])
        else:
            raise _no(f"`{_short(node)}`: a {kind.replace('_', ' ')} the scan analysis "
                          "does not follow", node)

    def _declaration(self, node: Lite, th: Thread) -> Generator[Any, Any, None]:
        shared = any(_t(c) == "__shared__" for c in node.children)
        integral = any(w in _INTEGRAL for w in _t(node.get("type")).split())
        for d in node.many.get("declarator", []):
            value = d.get("value") if d.type == "init_declarator" else None
            inner = d.get("declarator") if d.type == "init_declarator" else d
            sizes: list[int] = []
            while inner is not None and inner.type in ("array_declarator",
                                                       "pointer_declarator"):
                if inner.type == "array_declarator":
                    size = inner.get("size")
                    extent = None if size is None else self.value(size, th)
                    if not isinstance(extent, int) or extent <= 0:
                        raise _no(f"`{_short(node)}`: an array extent that is not a "
                                      "known integer", node)
                    sizes.insert(0, extent)
                inner = inner.get("declarator")
            name = _t(inner)
            if sizes:
                if value is not None:
                    raise _no(f"`{_short(node)}`: an initialised array", node)
                if shared:
                    self.shared.setdefault(name, [None] * math.prod(sizes))
                    th.env[name] = ("shared", name, tuple(sizes))
                else:
                    th.env[name] = ("local", [None] * math.prod(sizes), tuple(sizes))
                continue
            if shared:
                self.shared.setdefault(name, [None])
                th.env[name] = ("shared", name, ())
                continue
            if value is not None:
                yield from self._shuffles(value, th)
                got = self.value(value, th)
                th.env[name] = int(got) if integral and isinstance(got, float) else got
            else:
                th.env[name] = None

    def _if(self, node: Lite, th: Thread) -> Generator[Any, Any, None]:
        cond = node.get("condition")
        assert cond is not None
        if cond.type == "condition_clause":
            cond = cond.get("value") or cond.named[0]
        yield from self._shuffles(cond, th)
        if self._truth(cond, th):
            yield from self.statement(_field(node, "consequence"), th)
        else:
            other = node.get("alternative")
            if other is not None:
                body = other.named[0] if other.type == "else_clause" else other
                yield from self.statement(body, th)

    def _loop(self, node: Lite, th: Thread) -> Generator[Any, Any, None]:
        init, cond = node.get("initializer"), node.get("condition")
        update, body = node.get("update"), _field(node, "body")
        if init is not None:
            if init.type == "declaration":
                yield from self._declaration(init, th)
            else:
                self.value(init, th)
        first = node.type == "do_statement"
        while True:
            if cond is not None and not first:
                c = cond.named[0] if cond.type == "parenthesized_expression" and \
                    node.type != "for_statement" else cond
                if not self._truth(c, th):
                    return
            first = False
            try:
                yield from self.statement(body, th)
            except _Exit as done:
                if done.kind == "break":
                    return
                if done.kind != "continue":
                    raise
            if update is not None:
                self.value(update, th)
            self.steps += 1
            if self.steps > _STEP_LIMIT:
                raise _no("a loop that does not end", node)

    def _truth(self, node: Lite, th: Thread) -> bool:
        got = self.value(node, th)
        if not isinstance(got, (int, float)):
            raise _no(f"`{_short(node)}` branches on a scanned value", node)
        return bool(got)

    def _shuffles(self, node: Lite, th: Thread) -> Generator[Any, Any, None]:
        """Each shuffle in ``node`` (innermost first) exchanged with the warp, its result
        kept for :meth:`value`."""
        for call in node.shuffles:
            args = _args(call)
            if len(args) not in (3, 4):
                raise _no(f"`{_short(call)}`: a shuffle with {len(args)} arguments", call)
            mask = self.value(args[0], th)
            if mask not in (0xFFFFFFFF, -1):
                raise _no(f"`{_short(call)}`: a shuffle of part of a warp", call)
            value = self.value(args[1], th)
            arg = self.value(args[2], th)
            width = self.value(args[3], th) if len(args) == 4 else 32
            if not isinstance(arg, int) or width not in (1, 2, 4, 8, 16, 32):
                raise _no(f"`{_short(call)}`: a shuffle the analysis cannot follow", call)
            name = _t(call.get("function"))
            th.shuffled[_key(call)] = yield ("shfl", call, value, name, arg, width)

    # -- expressions ---------------------------------------------------------------------

    def value(self, node: Lite, th: Thread) -> Any:
        kind = node.type
        if _key(node) in self.elements:
            return self._element(node, th)
        if kind == "number_literal":
            return _number(node)
        if kind in ("true", "false"):
            return int(kind == "true")
        if kind == "identifier":
            return self._name(node, th)
        if kind == "field_expression":
            return self._builtin(node, th)
        if kind == "parenthesized_expression":
            return self.value(node.named[-1], th)
        if kind == "cast_expression":
            got = self.value(_field(node, "value"), th)
            integral = any(w in _INTEGRAL for w in _t(node.get("type")).split())
            return int(got) if integral and isinstance(got, float) else got
        if kind == "binary_expression":
            return self._binary(node, th)
        if kind == "unary_expression":
            return self._unary(node, th)
        if kind == "conditional_expression":
            branch = "consequence" if self._truth(_field(node, "condition"), th) else \
                "alternative"
            return self.value(_field(node, branch), th)
        if kind == "subscript_expression":
            return self._read(self._place(node, th), node, th)
        if kind == "pointer_expression" and _t(node.get("operator")) == "*":
            return self._read(self._place(node, th), node, th)
        if kind == "assignment_expression":
            return self._assign(node, th)
        if kind == "update_expression":
            return self._update(node, th)
        if kind == "call_expression":
            return self._call(node, th)
        if kind == "comma_expression":
            self.value(_field(node, "left"), th)
            return self.value(_field(node, "right"), th)
        raise _no(f"`{_short(node)}`: a {kind.replace('_', ' ')} the scan analysis does "
                      "not follow", node)

    def _element(self, node: Lite, th: Thread) -> Part:
        # every read's index evaluated (an index that loads, a gather, refuses); the key is
        # the first read's in the text
        places = {r.key: self._place(r, th) for r in node.reads}
        first = places[min(places)]
        if not isinstance(first, Ptr):
            raise _no(f"`{_short(node)}` does not read a kernel array", node)
        self.loaded.append((first, th.index))
        return Part(((first.offset, first.offset),))

    def _name(self, node: Lite, th: Thread) -> Any:
        name = _t(node)
        shared = _shared_scalar(th.env.get(name))
        if shared is not None:
            return self._read(shared, node, th)
        for scope in (th.env, self.args, self.constants, _NAMED):
            if name in scope:
                got = scope[name]
                if got is None:
                    raise _no(f"`{name}` is read before it is set", node)
                return got
        raise _no(f"`{name}` is a name the scan analysis does not know", node)

    def _builtin(self, node: Lite, th: Thread) -> int:
        field_ = _t(node.get("field"))
        values = {"threadIdx": (None, 0, 0), "blockIdx": (self.block_index, 0, 0),
                  "blockDim": (self.threads, 1, 1), "gridDim": (self.grid, 1, 1)}
        base = _t(node.get("argument"))
        if base not in values or field_ not in ("x", "y", "z"):
            raise _no(f"`{_short(node)}`: not a launch built-in", node)
        got = values[base]["xyz".index(field_)]
        return th.index if got is None else got

    def _binary(self, node: Lite, th: Thread) -> Any:
        op = _t(node.get("operator"))
        left = self.value(_field(node, "left"), th)
        if op in ("&&", "||"):
            if bool(left) == (op == "||"):
                return int(bool(left))
            return int(bool(self._truth(_field(node, "right"), th)))
        right = self.value(_field(node, "right"), th)
        if isinstance(left, Part) or isinstance(right, Part):
            if op in ("+", "*"):
                return self.combine(op, left, right, node)
            why = " (not associative)" if op in ("-", "/") else ""
            raise _no(f"`{_short(node)}` applies `{op}` to a scanned value{why}", node)
        if isinstance(left, Ptr) or isinstance(right, Ptr):
            return _pointer_arith(op, left, right, node)
        return _arith(op, left, right, node)

    def combine(self, op: str, a: Any, b: Any, node: Lite) -> Any:
        """``a op b`` where either is a scanned value: the parts merged, an identity dropped."""
        name = OPERATORS[op]
        if self.op is None:
            self.op, self.spelling = name, op
        elif self.op != name:
            raise _no(f"`{_short(node)}` combines with `{op}`, the scan elsewhere with "
                          f"`{self.op}`", node)
        if isinstance(a, Part) and isinstance(b, Part):
            return _merge(a, b, node)
        scanned, other = (a, b) if isinstance(a, Part) else (b, a)
        if not isinstance(other, (int, float)) or not identity_of(name, other):
            raise _no(f"`{_short(node)}` combines a scanned value with {other!r}, which "
                          f"is not the identity of `{op}`", node)
        return scanned

    def _unary(self, node: Lite, th: Thread) -> Any:
        op = _t(node.get("operator"))
        got = self.value(_field(node, "argument"), th)
        if not isinstance(got, (int, float)):
            raise _no(f"`{_short(node)}` applies `{op}` to a scanned value", node)
        return {"-": lambda v: -v, "+": lambda v: v, "!": lambda v: int(not v),
                "~": lambda v: ~int(v)}[op](got)

    def _call(self, node: Lite, th: Thread) -> Any:
        name = _t(node.get("function"))
        if name in _SHUFFLES:
            return th.shuffled.pop(_key(node))
        args = [self.value(a, th) for a in _args(node)]
        if name in OPERATORS and name not in "+*" and len(args) == 2:
            a, b = args
            if isinstance(a, Part) or isinstance(b, Part):
                return self.combine(name, a, b, node)
            return max(a, b) if OPERATORS[name] == "max" else min(a, b)
        if name.startswith("static_cast<") and len(args) == 1:
            return args[0]
        raise _no(f"`{_short(node)}`: a call the scan analysis does not follow", node)

    # -- memory --------------------------------------------------------------------------

    def _place(self, node: Lite, th: Thread) -> Any:
        """Where a subscript or ``*p`` points: a :class:`Ptr`, or (array, flat index)."""
        if node.type == "pointer_expression":
            got = self.value(_field(node, "argument"), th)
            if not isinstance(got, Ptr):
                raise _no(f"`{_short(node)}` dereferences what is not a kernel array",
                              node)
            return got
        if node.type != "subscript_expression":
            raise _no(f"`{_short(node)}` is not an element of an array", node)
        indices = _field(node, "indices").named
        if len(indices) != 1:
            raise _no(f"`{_short(node)}`: a multi-index subscript", node)
        index = self.value(indices[0], th)
        if not isinstance(index, int):
            raise _no(f"`{_short(node)}` indexes by a scanned value", node)
        base_node = _field(node, "argument")
        if base_node.type == "subscript_expression":  # buf[2][n]: row-major
            outer = self._place(base_node, th)
            if not isinstance(outer, tuple) or len(outer[2]) != 2:
                raise _no(f"`{_short(node)}`: a subscript the analysis does not follow",
                              node)
            return (outer[0], outer[1] * outer[2][1] + index, outer[2][1:])
        base = self.value(base_node, th)
        if isinstance(base, Ptr):
            return Ptr(base.name, base.offset + index)
        if isinstance(base, tuple) and base[0] in ("shared", "local"):
            return (base, index, base[2])
        raise _no(f"`{_short(node)}` indexes what is not an array", node)

    def _cell(self, place: Any, node: Lite) -> tuple[list[Any], int, str | None]:
        array, index, sizes = place
        storage = self.shared[array[1]] if array[0] == "shared" else array[1]
        if len(sizes) > 1 or not 0 <= index < len(storage):
            raise _no(f"`{_short(node)}` indexes outside its array", node)
        return storage, index, array[1] if array[0] == "shared" else None

    def _read(self, place: Any, node: Lite, th: Thread) -> Any:
        if isinstance(place, Ptr):
            raise _no(f"`{_short(node)}` reads global memory outside the element it "
                          "loads", node)
        storage, index, shared = self._cell(place, node)
        if shared is not None:
            writer, readers = self.access.setdefault((shared, index), (None, set()))
            if writer is not None and writer != th.index:
                raise _no(f"`{_short(node)}` reads a shared word another thread wrote "
                              "with no barrier between", node)
            readers.add(th.index)
        if storage[index] is None:
            raise _no(f"`{_short(node)}` reads a word nothing wrote", node)
        return storage[index]

    def _write(self, place: Any, value: Any, node: Lite, th: Thread) -> None:
        if isinstance(place, Ptr):
            self.stores.append(Store(place, value, th.index))
            return
        storage, index, shared = self._cell(place, node)
        if shared is not None:
            writer, readers = self.access.get((shared, index), (None, set()))
            if (writer is not None and writer != th.index) or readers - {th.index}:
                raise _no(f"`{_short(node)}` writes a shared word another thread uses "
                              "with no barrier between", node)
            self.access[(shared, index)] = (th.index, readers)
        storage[index] = value

    def _assign(self, node: Lite, th: Thread) -> Any:
        op = _t(node.get("operator"))
        left, right = _field(node, "left"), _field(node, "right")
        value = self.value(right, th)
        if op != "=":
            old = self.value(left, th)
            value = self._binary_values(op[:-1], old, value, node)
        shared = _shared_scalar(th.env.get(_t(left))) if left.type == "identifier" else None
        if shared is not None:
            self._write(shared, value, node, th)
        elif left.type == "identifier":
            if _t(left) not in th.env:
                raise _no(f"`{_short(node)}` assigns `{_t(left)}`, which is not a "
                              "local", node)
            th.env[_t(left)] = value
        else:
            self._write(self._place(left, th), value, node, th)
        return value

    def _update(self, node: Lite, th: Thread) -> Any:
        target = _field(node, "argument")
        old = self.value(target, th)
        new = self._binary_values("+" if "++" in _t(node) else "-", old, 1, node)
        shared = _shared_scalar(th.env.get(_t(target)))
        if shared is not None:
            self._write(shared, new, node, th)
        elif target.type != "identifier" or _t(target) not in th.env:
            raise _no(f"`{_short(node)}` steps what is not a local", node)
        else:
            th.env[_t(target)] = new
        return new if _t(node).startswith(("++", "--")) else old

    def _binary_values(self, op: str, a: Any, b: Any, node: Lite) -> Any:
        if isinstance(a, Part) or isinstance(b, Part):
            if op in ("+", "*"):
                return self.combine(op, a, b, node)
            raise _no(f"`{_short(node)}` applies `{op}` to a scanned value", node)
        if isinstance(a, Ptr) or isinstance(b, Ptr):
            return _pointer_arith(op, a, b, node)
        return _arith(op, a, b, node)


def _field(node: Lite, name: str) -> Lite:
    got = node.get(name)
    if got is None:
        raise _no(f"`{_short(node)}` has no {name}", node)
    return got


def _args(call: Lite) -> list[Lite]:
    args = call.get("arguments")
    return [] if args is None else list(args.named)


def _key(node: Lite) -> tuple[int, int]:
    return node.key


def _is_call(node: Lite, name: str) -> bool:
    return node.type == "call_expression" and _t(node.get("function")) == name


def _is_read(node: Lite) -> bool:
    return node.type == "subscript_expression" or (
        node.type == "pointer_expression" and _t(node.get("operator")) == "*")


def _post_order(node: Lite) -> list[Lite]:
    out: list[Lite] = []

    def visit(n: Lite) -> None:
        for c in n.children:
            visit(c)
        out.append(n)
    visit(node)
    return out


def _number(node: Lite) -> int | float:
    raw = _t(node).replace("'", "")
    lowered = raw.lower()
    if lowered.startswith("0x"):
        return int(lowered.rstrip("ul"), 16)
    if any(c in lowered for c in ".e") or lowered.endswith("f"):
        return float(lowered.rstrip("fl"))
    return int(lowered.rstrip("ul"), 0 if not lowered.startswith("0") or lowered == "0"
               else 8)


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b,
}


def _arith(op: str, a: Any, b: Any, node: Lite) -> Any:
    if op in ("/", "%"):
        if b == 0:
            raise _no(f"`{_short(node)}` divides by zero", node)
        if isinstance(a, int) and isinstance(b, int):
            q = _c_div(a, b)
            return q if op == "/" else a - q * b
        if op == "/":
            return a / b
    if op in _ARITH and (op in "+-*<=>=!=" or (isinstance(a, int) and isinstance(b, int))):
        return _ARITH[op](a, b)
    raise _no(f"`{_short(node)}`: `{op}` on these values is not followed", node)


def _pointer_arith(op: str, a: Any, b: Any, node: Lite) -> Ptr:
    if op == "+" and isinstance(a, Ptr) and isinstance(b, int):
        return Ptr(a.name, a.offset + b)
    if op == "+" and isinstance(b, Ptr) and isinstance(a, int):
        return Ptr(b.name, b.offset + a)
    if op == "-" and isinstance(a, Ptr) and isinstance(b, int):
        return Ptr(a.name, a.offset - b)
    raise _no(f"`{_short(node)}`: pointer arithmetic the analysis does not follow", node)


def _t(node: Lite | None) -> str:
    return "" if node is None else node.text


def _fn(call: Lite) -> str:
    return _t(call.get("function"))


def _no(reason: str, node: Lite | None = None) -> Refused:
    return Refused(reason, None if node is None else node.node)


def _shared_scalar(bound: Any) -> tuple[Any, int, tuple[int, ...]] | None:
    """The place of a ``__shared__`` scalar a local name is bound to, else None."""
    if isinstance(bound, tuple) and bound[:1] == ("shared",) and bound[2] == ():
        return (bound, 0, ())
    return None

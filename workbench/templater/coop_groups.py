"""A kernel's cooperative groups written as the CUDA built-ins they stand for, before the
analysis (issue 28: a kernel spelling its thread indexing, barriers and shuffles through
``cooperative_groups`` offered the families nothing to read).

Every family reads ``threadIdx``/``blockIdx``/``blockDim``, ``__syncthreads()`` and the
``__shfl_*_sync`` intrinsics. A thread block and the static tiles of up to a warp that
``<cooperative_groups.h>`` builds on it are those same built-ins (the header's own
definitions, CUDA 13.0): this pass writes them so.

Modelled objects (a declaration statement of the entry's body, any spelling of the type:
``thread_block``, ``thread_group``, ``thread_block_tile<S>``, ``auto``, ``const``; the
namespace written in full, through an alias, or opened by ``using namespace``):

* the block, ``= this_thread_block()``;
* a tile of S threads, ``= tiled_partition<S>(B)`` or ``tiled_partition(B, S)`` of the block
  (B the block's name or ``this_thread_block()``), S a literal power of two up to 32.

Their uses, in place (T the block's flat rank: ``threadIdx.x`` in a 1-D launch block;
``threadIdx.x + blockDim.x * threadIdx.y`` in a 2-D one, its z extent 1 or absent, where the
header's ``threadIdx.z`` is 0 and ``blockDim.z`` 1; else ``threadIdx.x + blockDim.x *
(threadIdx.y + blockDim.y * threadIdx.z)``; the block's size the product of as many extents;
where the launch block's x extent is a literal multiple of S, a tile's rank is ``threadIdx.x
% S``, and in a (S, F) block its index is ``threadIdx.y``: the same numbers, as the families
read them):

* block: ``sync()`` (and ``sync(block)``) -> ``__syncthreads()``; ``thread_rank()`` -> T;
  ``group_index()`` / ``thread_index()`` / ``group_dim()`` / ``dim_threads()`` ->
  ``blockIdx`` / ``threadIdx`` / ``blockDim``; ``size()`` / ``num_threads()`` -> the
  product of ``blockDim``;
* tile: ``thread_rank()`` -> ``T % S``; ``meta_group_rank()`` -> ``T / S``;
  ``meta_group_size()`` -> the tiles of the block; ``size()`` / ``num_threads()`` -> ``Su``;
  ``sync()`` -> ``__syncwarp(mask)``; ``shfl`` / ``shfl_down`` / ``shfl_up`` / ``shfl_xor``
  -> ``__shfl*_sync(mask, v, d[, S])`` (the mask the header builds: every lane for 32, the
  tile's own lanes otherwise); ``ballot(p)`` -> ``__ballot_sync(mask, p)`` (shifted down to
  the tile's first lane under 32), ``any(p)`` / ``all(p)`` -> that ballot ``!= 0`` / ``==
  mask`` (the header's static tile, round 31b's row_firsthits_warp_cg);
* ``reduce(tile, v, plus<U>() | less<U>() | greater<U>())`` as a statement's value (``U r =
  reduce(..)``, ``r = reduce(..)``), v of type U: the header's butterfly, ``r = op(r,
  shfl_xor(r, o))`` for o = S / 2 .. 1, written as statements (``r += __shfl_xor_sync(..);``
  for a sum: the unrolled tree the warp family reads).

Anything else (a grid or cluster group, ``coalesced_threads()``, a tile of a run-time size,
a tile of a tile, a group passed to a function or copied, a member not listed) refuses the
pass with its line; the kernel then stays as written. Every edit keeps its line; the header
and the namespace's alias are blanked where nothing in the file names the namespace after.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from tree_sitter import Node

from workbench.core.errors import WorkbenchError
from workbench.templater.analysis import line, text, walk
from workbench.templater.inline_bind import flat
from workbench.templater.inline_calls import InlinedSource, inline_calls
from workbench.templater.point_split import entry_body
from workbench.templater.records import Finding

TRANSFORM = "COOP_GROUPS"

#: What ``<cooperative_groups.h>`` declares that a kernel may name (a name of these left in
#: the body after the rewrite is something the pass does not model).
_CG_NAMES = frozenset({
    "this_thread_block", "this_grid", "this_cluster", "this_multi_grid", "grid_group",
    "thread_block", "thread_group", "thread_block_tile", "tiled_partition", "coalesced_group",
    "coalesced_threads", "labeled_partition", "binary_partition", "reduce", "reduce_store_async",
    "inclusive_scan", "exclusive_scan", "sync", "memcpy_async", "wait", "wait_prior",
    "cluster_group", "multi_grid_group", "invoke_one", "invoke_one_broadcast", "plus", "less",
    "greater", "bit_and", "bit_or", "bit_xor", "block_tile_memory"})

_BLOCK_MEMBERS = {"group_index": "blockIdx", "thread_index": "threadIdx",
                  "group_dim": "blockDim", "dim_threads": "blockDim"}
_SHUFFLES = {"shfl": "__shfl_sync", "shfl_down": "__shfl_down_sync",
             "shfl_up": "__shfl_up_sync", "shfl_xor": "__shfl_xor_sync"}
_REDUCE_OPS = ("plus", "less", "greater")
#: A tile's votes (one predicate each), as the header's static tile spells them.
_VOTES = ("ballot", "any", "all")


class Refused(WorkbenchError):
    """A cooperative-groups use the pass does not model, with its line (caught inside the
    pass and recorded as a finding)."""

    def __init__(self, reason: str, at: int) -> None:
        super().__init__(reason, reason=reason, line=at)
        self.reason, self.line = reason, at


@dataclass(frozen=True)
class Group:
    """One modelled group object: its name, its size (0: the block) and its declaration."""

    name: str
    size: int
    statement: Node


@dataclass(frozen=True)
class _Spelling:
    """How the file names the namespace: its qualifiers and whether it is opened."""

    qualifiers: tuple[str, ...]
    opened: bool

    def names(self, node: Node, name: str) -> bool:
        """Whether ``node`` (an identifier, a qualified one or a template's) is ``name`` of
        the namespace."""
        spelled = re.sub(r"\s+", "", text(node))
        spelled = spelled.split("<", 1)[0]
        if spelled == name:
            return self.opened
        return any(spelled == f"{q}::{name}" for q in self.qualifiers)

    def pattern(self) -> str:
        """A regex prefix matching the namespace's qualifier as the file may write it."""
        alts = [re.escape(q) + r"\s*::\s*" for q in self.qualifiers]
        return "(?:" + "|".join(alts) + ")" + ("?" if self.opened else "")


def coop_groups(current: InlinedSource, entry: str | None,
                block: Sequence[str]) -> InlinedSource:
    """``current`` with ``entry``'s cooperative groups written as built-ins (unchanged, with
    a finding naming the line, where a use is not modelled; unchanged and silent where the
    kernel names none, or cannot be found)."""
    body = entry_body(current, entry)
    if body is None or "cooperative_groups" not in current.text:
        return current
    spelling = _spelling(current.text)
    try:
        edits, told = _rewrite(body, spelling, _launch(block))
    except Refused as why:
        return replace(current, findings=(*current.findings, Finding(
            TRANSFORM, False, f"{why.reason}; the kernel's cooperative groups are kept as "
            "written (no family reads them)", current.baseline_line(why.line))))
    if not edits:
        return current
    out = current.edited(edits)
    out = _drop_header(out, spelling)
    return replace(out, findings=(*out.findings, Finding(
        TRANSFORM, True, f"cooperative groups written as built-ins: {told}",
        current.baseline_line(line(body)))))


def inlined_after_groups(source_text: str, entry: str | None, file: str,
                         block: Sequence[str], *, block_stages: bool = False) -> InlinedSource:
    """:func:`.inline_calls.inline_calls` of ``source_text`` with its cooperative groups
    written as built-ins first (:func:`coop_groups`; every line keeps
    its number), this pass's finding told before the inliner's: a ``__device__`` function the
    kernel passes its tile to then shuffles through the built-ins, which the inliner reads as
    work to inline. ``block_stages``: helpers holding a block's shared stage are inlined too
    (:func:`.inline_calls.launch_callees`)."""
    grouped = coop_groups(InlinedSource(source_text, file), entry, block)
    inlined = inline_calls(grouped.text, entry, file, block_stages=block_stages)
    return replace(inlined, findings=(*grouped.findings, *inlined.findings))


def _spelling(source: str) -> _Spelling:
    aliases = re.findall(r"\bnamespace\s+(\w+)\s*=\s*(?:::)?\s*cooperative_groups\s*;", source)
    opened = re.search(r"\busing\s+namespace\s+(?:::)?\s*cooperative_groups\s*;", source)
    return _Spelling(("cooperative_groups", *aliases), opened is not None)


@dataclass(frozen=True)
class Launch:
    """The launch block as the rewrite reads it: its flat thread rank, whether it is 1-D (its
    trailing extents written as 1 do not count), its x extent where a literal, and how many
    dimensions it has."""

    flat: str
    one_d: bool
    block_x: int | None
    dims: int

    @property
    def product(self) -> str:
        if self.dims <= 2:
            return "blockDim.x" if self.one_d else "(blockDim.x * blockDim.y)"
        return "(blockDim.x * blockDim.y * blockDim.z)"

    def tile_rank(self, size: int) -> str:
        """The rank in its tile of ``size``: ``threadIdx.x % S`` where the block's x extent is
        a multiple of S (the rows above add multiples of S to the flat rank)."""
        x = "threadIdx.x" if self._x_multiple(size) else self.flat
        return f"({x} % {size})"

    def tile_index(self, size: int) -> str:
        """The tile's index in the block: in a (S, ..) block the row of threads itself."""
        if self.block_x == size and not self.one_d:
            return "threadIdx.y" if self.dims == 2 else "(threadIdx.y + blockDim.y * threadIdx.z)"
        return f"({self.flat} / {size})"

    def lane(self) -> str:
        """The thread's lane of its warp, as far as a tile's mask reads it (bits below 32)."""
        return "threadIdx.x" if self._x_multiple(32) else self.flat

    def _x_multiple(self, size: int) -> bool:
        return self.one_d or (self.block_x is not None and self.block_x % size == 0)


def _launch(block: Sequence[str]) -> Launch:
    dims = [d.strip() for d in block]
    while len(dims) > 1 and dims[-1] == "1":
        dims.pop()
    x = int(dims[0]) if dims and dims[0].isdigit() else None
    if len(dims) == 1:
        return Launch("threadIdx.x", True, x, 1)
    if len(dims) == 2:  # no z extent: threadIdx.z is 0 and blockDim.z 1
        return Launch("(threadIdx.x + blockDim.x * threadIdx.y)", False, x, 2)
    return Launch("(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))",
                  False, x, len(dims))


def _rewrite(body: Node, spelling: _Spelling,
             rank: Launch) -> tuple[list[tuple[int, int, str]], str]:
    groups = _groups(body, spelling)
    edits: list[tuple[int, int, str]] = []
    done: set[int] = set()
    for g in groups.values():
        edits.append((g.statement.start_byte, g.statement.end_byte,
                      "\n" * text(g.statement).count("\n")))
        done.update(n.id for n in walk(g.statement))
    told = [f"{g.name} ({'the block' if not g.size else f'a tile of {g.size}'})"
            for g in groups.values()]
    for callee in _followed(body, groups, spelling):
        for arg in callee.arguments:
            edits.append(_dropped(arg))
            done.update(n.id for n in walk(arg))
        edits.append(_dropped(callee.group.statement))
        inner = callee.function.child_by_field_name("body")
        assert inner is not None  # a definition
        edits += _uses(inner, {callee.group.name: callee.group}, spelling, rank, set())
        told.append(f"{callee.group.name} of {callee.name}, followed into it")
    edits += _uses(body, groups, spelling, rank, done)
    return edits, ", ".join(told)


def _uses(scope: Node, groups: dict[str, Group], spelling: _Spelling, rank: Launch,
          done: set[int]) -> list[tuple[int, int, str]]:
    """The edits writing ``groups``' uses in ``scope`` as built-ins (``done``: nodes already
    taken care of); refused where ``scope`` holds a use or a group not modelled."""
    spans: dict[tuple[int, int], str] = {}  # a call's bytes -> its built-in spelling
    for n in sorted((c for c in walk(scope) if c.type == "call_expression" and c.id not in done),
                    key=lambda c: c.end_byte - c.start_byte):  # the innermost first
        new = _call(n, groups, spelling, rank, scope, partial(_render, spans=spans))
        if new is not None:
            spans = {k: t for k, t in spans.items()
                     if not (new[0].start_byte <= k[0] and k[1] <= new[0].end_byte)}
            spans[(new[0].start_byte, new[0].end_byte)] = new[1]
            done = done | {c.id for c in walk(new[0])}
    for n in walk(scope):
        if n.id in done:
            continue
        if n.type == "identifier" and text(n) in groups:
            raise Refused(f"the group `{text(n)}` is used as `{flat(_user(n))}`, not one of "
                          "its modelled members (a group copied, or passed to a function the "
                          "pass cannot follow, is not read)", line(n))
        if n.type in ("identifier", "qualified_identifier", "type_identifier",
                      "namespace_identifier") and _cg_name(n, spelling):
            raise Refused(f"`{flat(_user(n))}` is a cooperative group the pass does not "
                          "model (a block and static tiles of up to 32 only)", line(n))
    return [(a, b, t) for (a, b), t in spans.items()]


@dataclass(frozen=True)
class _Callee:
    """A ``__device__`` function the entry passes one of its groups to: its definition, its
    name, the group as its parameter names it (the parameter its statement) and the
    arguments at its calls."""

    function: Node
    name: str
    group: Group
    arguments: tuple[Node, ...]


def _followed(body: Node, groups: dict[str, Group], spelling: _Spelling) -> list[_Callee]:
    """The functions of the file the entry passes a group to that the pass follows: one
    group parameter of a group type (thread_group takes the argument's), every call of the
    function in the entry's body passing the same group there (a function the file calls
    elsewhere is not followed: its signature changes)."""
    root = body
    while root.parent is not None:
        root = root.parent
    kernel = body.parent
    found: dict[str, _Callee] = {}
    for fn in (c for c in root.children if c.type == "function_definition" and c != kernel):
        decl = fn.child_by_field_name("declarator")
        name = decl.child_by_field_name("declarator") if decl is not None else None
        params = decl.child_by_field_name("parameters") if decl is not None else None
        if name is None or params is None or name.type != "identifier":
            continue
        typed = [(i, m) for i, p in enumerate(params.named_children)
                 if (m := re.fullmatch(
                     rf"(?:const\s+)?{spelling.pattern()}(thread_block|thread_group|"
                     rf"thread_block_tile\s*<\s*(\d+)\s*>)\s*(?:const\s*)?&?\s*(\w+)",
                     " ".join(text(p).split()))) is not None]
        calls = [c for c in walk(root) if c.type == "call_expression" and
                 text(c.child_by_field_name("function")) == text(name)]
        if len(typed) != 1 or not calls:
            continue
        index, m = typed[0]
        args = []
        for call in calls:
            values = [a for a in call.child_by_field_name("arguments").named_children  # type: ignore[union-attr]
                      if a.type != "comment"]
            arg = values[index] if index < len(values) else None
            if not (body.start_byte <= call.start_byte < body.end_byte) or arg is None or \
                    text(arg) not in groups:
                break
            args.append(arg)
        sizes = {groups[text(a)].size for a in args}
        want = 0 if m.group(1) == "thread_block" else \
            int(m.group(2)) if m.group(2) is not None else None
        if len(args) != len(calls) or len(sizes) != 1 or \
                (want is not None and sizes != {want}):
            continue
        found[text(name)] = _Callee(fn, text(name), Group(m.group(3), sizes.pop(),
                                                          params.named_children[index]),
                                    tuple(args))
    return list(found.values())


def _dropped(item: Node) -> tuple[int, int, str]:
    """The edit taking ``item`` (a parameter or an argument) out of its list with its comma,
    its lines kept."""
    siblings = [c for c in item.parent.named_children if c.type != "comment"] \
        if item.parent is not None else [item]
    at = siblings.index(item)
    if len(siblings) == 1:
        start, end = item.start_byte, item.end_byte
    elif at + 1 < len(siblings):
        start, end = item.start_byte, siblings[at + 1].start_byte
    else:
        start, end = siblings[at - 1].end_byte, item.end_byte
    parent = item.parent if item.parent is not None else item
    gone = (parent.text or b"")[start - parent.start_byte:end - parent.start_byte]
    return start, end, "\n" * gone.count(b"\n")


def _cg_name(n: Node, spelling: _Spelling) -> bool:
    if n.type == "namespace_identifier":
        return text(n) in spelling.qualifiers
    base = re.sub(r"\s+", "", text(n)).split("<", 1)[0].rsplit("::", 1)[-1]
    if base not in _CG_NAMES:
        return False
    if n.type == "qualified_identifier":
        return spelling.names(n, base)
    # an unqualified name is the namespace's where it is opened and the name is not a member
    # (``s.sync``) or one the kernel declares itself
    return spelling.opened and (n.parent is None or n.parent.type != "field_expression")


def _user(n: Node) -> Node:
    """The smallest expression or statement around ``n`` worth quoting."""
    p = n
    while p.parent is not None and p.parent.type not in (
            "expression_statement", "declaration", "compound_statement"):
        if p.parent.type == "argument_list" and p.parent.parent is not None:
            return p.parent.parent  # the call it is passed to
        p = p.parent
    return p


def _groups(body: Node, spelling: _Spelling) -> dict[str, Group]:
    """The modelled group objects the body declares, by name."""
    ns = spelling.pattern()
    type_re = (rf"(?:const\s+)?(?:auto|{ns}(?:thread_block|thread_group|"
               rf"thread_block_tile\s*<\s*(\d+)\s*>))\s+(?:const\s+)?(\w+)\s*=\s*(.*);")
    found: dict[str, Group] = {}
    for s in walk(body):
        if s.type not in ("declaration", "expression_statement") or s.parent is None or \
                s.parent.type != "compound_statement":
            continue
        m = re.fullmatch(type_re, " ".join(text(s).split()))
        if m is None:
            continue
        typed, name, init = m.group(1), m.group(2), m.group(3).strip()
        size = _initial_size(init, ns, found, line(s))
        if size is None:
            continue
        if typed is not None and int(typed) != size:
            raise Refused(f"`{name}` is a thread_block_tile<{typed}> made of a tile of "
                          f"{size}", line(s))
        found[name] = Group(name, size, s)
    return found


def _initial_size(init: str, ns: str, found: dict[str, Group], at: int) -> int | None:
    """The size a group's initializer makes (0: the block), None where it names no group;
    refused where it makes one the pass does not model."""
    if re.fullmatch(rf"{ns}this_thread_block\s*\(\s*\)", init):
        return 0
    m = re.fullmatch(rf"{ns}tiled_partition\s*(?:<\s*([^>]*)>)?\s*\((.*)\)", init)
    if m is None:
        return None
    parts = [p.strip() for p in m.group(2).split(",")]
    parent, size_text = (parts[0], m.group(1)) if m.group(1) is not None else \
        (parts[0], parts[1] if len(parts) == 2 else "")
    if len(parts) != (1 if m.group(1) is not None else 2):
        raise Refused(f"`{init}` is not a tiled_partition of one group", at)
    is_block = re.fullmatch(rf"{ns}this_thread_block\s*\(\s*\)", parent) or \
        (parent in found and found[parent].size == 0)
    if not is_block:
        raise Refused(f"`{init}` partitions `{parent}`, not the thread block (a tile of a "
                      "tile or of a coalesced group is not modelled)", at)
    size = int(size_text.strip().rstrip("uU")) if re.fullmatch(r"\s*\d+[uU]?\s*", size_text
                                                               ) else 0
    if size not in (1, 2, 4, 8, 16, 32):
        raise Refused(f"`{init}` makes a tile of {size_text.strip()!r} threads: only a "
                      "literal power of two up to 32 (a warp's tile) is modelled", at)
    return size


def _render(node: Node, spans: dict[tuple[int, int], str]) -> str:
    """``node``'s text with the calls inside it already rewritten (``spans``) as rewritten."""
    inner = sorted(((a, b), t) for (a, b), t in spans.items()
                   if node.start_byte <= a and b <= node.end_byte)
    data, out, at = node.text or b"", [], node.start_byte
    for (a, b), t in inner:
        out.append(data[at - node.start_byte:a - node.start_byte].decode() + t)
        at = b
    return "".join(out) + data[at - node.start_byte:].decode()


Render = Callable[[Node], str]


def _call(n: Node, groups: dict[str, Group], spelling: _Spelling, rank: Launch,
          body: Node, render: Render) -> tuple[Node, str] | None:
    """(the node to replace, its built-in spelling) for a modelled call ``n``, else None."""
    fn = n.child_by_field_name("function")
    args = n.child_by_field_name("arguments")
    if fn is None or args is None:
        return None
    values = [render(a) for a in args.named_children if a.type != "comment"]
    if fn.type == "field_expression":
        obj, member = fn.child_by_field_name("argument"), fn.child_by_field_name("field")
        if obj is None or member is None:
            return None
        group = groups.get(text(obj)) if obj.type == "identifier" else \
            _block_call(obj, spelling)
        if group is None:
            return None
        return n, _member(group, text(member), values, rank, n)
    if spelling.names(fn, "sync") and len(values) == 1 and values[0] in groups:
        return n, _member(groups[values[0]], "sync", [], rank, n)
    if spelling.names(fn, "reduce"):
        return _reduce(n, values, groups, spelling, rank, body)
    return None


def _block_call(obj: Node, spelling: _Spelling) -> Group | None:
    """The block where ``obj`` is ``this_thread_block()`` itself."""
    fn, args = obj.child_by_field_name("function"), obj.child_by_field_name("arguments")
    if obj.type == "call_expression" and fn is not None and args is not None and \
            spelling.names(fn, "this_thread_block") and not args.named_children:
        return Group("this_thread_block()", 0, obj)
    return None


def _mask(size: int, rank: Launch) -> str:
    """The lanes of a tile of ``size`` as the header's build_mask() gives them: its lanes of
    the warp (the block's flat rank's low five bits, rounded down to the tile)."""
    if size == 32:
        return "0xffffffff"
    return f"(0x{(1 << size) - 1:x}u << ({rank.lane()} & {32 - size}u))"


def _member(g: Group, member: str, values: list[str], rank: Launch,
            call: Node) -> str:
    arity = 2 if member in _SHUFFLES else 1 if member in _VOTES else 0
    if len(values) != arity:
        raise Refused(f"`{flat(call)}`: {member} with {len(values)} argument(s) is not "
                      "modelled", line(call))
    product = rank.product
    if g.size == 0:
        spelled = {"sync": "__syncthreads()", "thread_rank": rank.flat, "size": product,
                   "num_threads": product, **_BLOCK_MEMBERS}.get(member)
    else:
        s, mask = g.size, _mask(g.size, rank)
        spelled = {"sync": f"__syncwarp({mask})", "thread_rank": rank.tile_rank(s),
                   "meta_group_rank": rank.tile_index(s), "size": f"{s}u",
                   "num_threads": f"{s}u",
                   "meta_group_size": f"(({product} + {s - 1}) / {s})"}.get(member)
        if member in _SHUFFLES:
            width = "" if s == 32 else f", {s}"
            spelled = f"{_SHUFFLES[member]}({mask}, {values[0]}, {values[1]}{width})"
        if member in _VOTES:
            spelled = _vote(member, s, mask, values[0], rank)
    if spelled is None:
        what = "the block" if g.size == 0 else f"a tile of {g.size}"
        raise Refused(f"`{flat(call)}`: {member}() of {what} is not modelled", line(call))
    return spelled


def _vote(member: str, size: int, mask: str, predicate: str, rank: Launch) -> str:
    """A tile's ``ballot`` / ``any`` / ``all`` of ``predicate`` as the header's static tile
    computes it: the warp's ballot over the tile's lanes, shifted down to the tile's first
    lane (a ballot of a tile under 32), compared with nothing or every lane (any, all)."""
    votes = f"__ballot_sync({mask}, {predicate})"
    if member == "any":
        return f"({votes} != 0)"
    if member == "all":
        return f"({votes} == {mask})"
    return votes if size == 32 else f"({votes} >> ({rank.lane()} & {32 - size}u))"


def _reduce(n: Node, values: list[str], groups: dict[str, Group], spelling: _Spelling,
            rank: Launch, body: Node) -> tuple[Node, str]:
    """A ``reduce(tile, v, op<U>())`` statement as the header's butterfly, statement by
    statement."""
    at = line(n)
    if len(values) != 3 or values[0] not in groups or groups[values[0]].size == 0:
        raise Refused(f"`{flat(n)}`: only a reduce over a tile of up to 32 is modelled", at)
    tile, value = groups[values[0]], values[1]
    m = re.fullmatch(r"(.*)<\s*([\w\s]+?)\s*>\s*\(\s*\)", " ".join(values[2].split()))
    kind = next((k for k in _REDUCE_OPS if m is not None and re.fullmatch(
        spelling.pattern() + k, m.group(1).strip())), None)
    if m is None or kind is None:
        raise Refused(f"`{flat(n)}`: the operator `{values[2]}` is not plus, less or "
                      "greater of a type", at)
    unit = m.group(2)
    target, statement, declared = _reduced_into(n)
    if statement is None or target is None:
        raise Refused(f"`{flat(n)}` is not the value of a statement `r = reduce(..);`", at)
    if not (re.fullmatch(r"\w+", value) and _declared_type(body, value) == unit):
        raise Refused(f"`{flat(n)}`: the value is not a variable of type {unit} (the "
                      "header's accumulator takes the value's own type)", at)
    r = text(target)
    if declared is not None:
        kept = _type_text(declared)
        if kept not in ("auto", unit):
            raise Refused(f"`{flat(statement)}` keeps a {unit} reduction in a {kept}", at)
        head = f"{unit} {r} = {value};"
    else:
        if _declared_type(body, r) != unit:
            raise Refused(f"`{r}` is not declared a {unit} here", at)
        head = "" if value == r else f"{r} = {value};"  # r = reduce(tile, r, ..): in place
    mask, width = _mask(tile.size, rank), "" if tile.size == 32 else f", {tile.size}"
    steps = []
    o = tile.size // 2
    while o > 0:
        shuffle = f"__shfl_xor_sync({mask}, {r}, {o}{width})"
        if kind == "plus":
            steps.append(f"{r} += {shuffle};")
        else:
            pick = f"(wb_o < {r}) ? wb_o : {r}" if kind == "less" else \
                f"({r} < wb_o) ? wb_o : {r}"
            steps.append(f"{{ {unit} wb_o = {shuffle}; {r} = {pick}; }}")
        o //= 2
    return statement, " ".join([h for h in (head,) if h] + steps) + \
        "\n" * text(statement).count("\n")


def _reduced_into(n: Node) -> tuple[Node | None, Node | None, Node | None]:
    """(the variable, the statement, its declaration if it declares it) of ``U r =
    reduce(..);`` or ``r = reduce(..);`` at the top of a block; Nones otherwise."""
    p = n.parent
    declared: Node | None = None
    target: Node | None
    statement: Node | None
    if p is not None and p.type == "init_declarator":
        declared = p.parent
        if declared is None or len(declared.children_by_field_name("declarator")) != 1:
            return None, None, None
        target, statement = p.child_by_field_name("declarator"), declared
    elif p is not None and p.type == "assignment_expression" and \
            text(p.child_by_field_name("operator")) == "=":
        target, statement = p.child_by_field_name("left"), p.parent
    else:
        return None, None, None
    if target is None or target.type != "identifier" or statement is None or \
            statement.parent is None or statement.parent.type != "compound_statement":
        return None, None, None
    return target, statement, declared


def _type_text(declaration: Node) -> str:
    """The declared type of ``declaration`` without its qualifiers."""
    parts = [text(c) for c in declaration.children
             if c.type not in ("type_qualifier", "storage_class_specifier", "init_declarator",
                               ";", ",", "identifier", "attribute_specifier")]
    return " ".join(" ".join(parts).split())


def _declared_type(body: Node, name: str) -> str | None:
    """The type the kernel declares ``name`` with (its body or its parameters), qualifiers
    dropped; None where it is not declared once, as a plain variable."""
    fn = body.parent
    scope = fn if fn is not None else body
    types = []
    for d in walk(scope):
        if d.type not in ("declaration", "parameter_declaration"):
            continue
        for decl in d.children_by_field_name("declarator"):
            inner: Node | None = decl.child_by_field_name("declarator") \
                if decl.type == "init_declarator" else decl
            if inner is not None and inner.type == "identifier" and text(inner) == name:
                types.append(_type_text(d))
    return types[0] if len(types) == 1 else None


def _drop_header(current: InlinedSource, spelling: _Spelling) -> InlinedSource:
    """``current`` without the header, its alias and ``using`` where nothing else in the
    file names the namespace (each line blanked, so every line keeps its number)."""
    kept = re.compile(r"^\s*(#\s*include\s*<cooperative_groups(\.h|/\w+\.h)>|namespace\s+\w+\s*=\s*"
                      r"(::)?\s*cooperative_groups\s*;|using\s+namespace\s+(::)?\s*"
                      r"cooperative_groups\s*;)\s*$")
    lines = current.text.split("\n")
    rest = "\n".join(x for x in lines if not kept.match(x))
    named = re.search(r"\bcooperative_groups\b", rest) or any(
        re.search(rf"\b{re.escape(q)}\s*::", rest) for q in spelling.qualifiers) or (
        spelling.opened and re.search(r"\b(" + "|".join(sorted(_CG_NAMES - {
            "sync", "reduce", "plus", "less", "greater", "wait"})) + r")\b", rest))
    if named:
        return current
    return replace(current, text="\n".join("" if kept.match(x) else x for x in lines))

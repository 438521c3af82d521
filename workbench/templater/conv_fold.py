"""A fold after each channel's taps in a window kernel (:mod:`.conv`): the channel loop's
window sum is not the output itself but is folded, channel by channel, into a few locals
the store reads (``for (d) { int cost = 0; <window>; if (cost < best) { best = cost;
arg = d; } } out[i] = arg;``: a best match over candidates, a running maximum, a count).

Read by roles: the statements after the window loop in the outermost loop of a
three-loop nest whose channel loop that is. They write only *state*: locals declared once
each, with a value that does not depend on the point, before the nest in its block or a
block around it (the kernel's body, a guard's block), and used nowhere but in the fold and
the store; they read the accumulator, the state, the channel's variable and names that do
not depend on the point, read no memory, call only pure helpers and do not leave the
loop. Each output of a thread then keeps its own copy of the state
(``best[OUT_Y][OUT_X]``) and runs the fold as written on its own accumulator after each
channel, so every output folds the same values in the same order as the kernel as written.
Anything else is refused with the line."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import inside, text, walk, write_target
from workbench.templater.regtile import Refused, render


@dataclass(frozen=True)
class State:
    """One local the fold writes: its declaration (one declarator), type and first value."""

    name: str
    decl: Node
    type: str
    init: Node


@dataclass(frozen=True)
class Fold:
    stmts: tuple[Node, ...]
    state: tuple[State, ...]

    @property
    def names(self) -> set[str]:
        return {s.name for s in self.state}


def read_fold(stmts: list[Node], acc: str, before: list[Node],
              point_names: Callable[[Node], set[str]], pure: tuple[str, ...]) -> Fold:
    """The fold ``stmts`` (after the window loop in the channel loop) of the accumulator
    ``acc``, checked; ``before`` are the statements before the nest in the blocks around it
    (where the state is declared, :func:`enclosing_before`), ``point_names(node)`` the point's coordinates and the nest's own locals
    ``node`` depends on, ``pure`` the calls a fold may make."""
    written: set[str] = set()
    for s in stmts:
        for n in walk(s):
            if n.type in ("subscript_expression", "field_expression") or (
                    n.type == "pointer_expression" and
                    text(n.child_by_field_name("operator")) == "*"):
                raise Refused(f"the fold `{text(s)}` after the taps reads memory "
                              f"(`{text(n)}`): a fold of the window sums into locals is "
                              "modelled", n)
            if n.type == "call_expression" and \
                    text(n.child_by_field_name("function")) not in pure:
                raise Refused(f"the fold after the taps calls `{text(n)}`: only pure "
                              "helpers run once per output", n)
            if n.type in ("return_statement", "break_statement", "continue_statement",
                          "goto_statement"):
                raise Refused(f"`{text(n)}` in the fold leaves the channel loop early", n)
            if n.type in ("assignment_expression", "update_expression"):
                t = write_target(n) or n
                if t.type != "identifier" or text(t) == acc:
                    raise Refused(f"the fold writes `{text(t)}`: it may write only locals "
                                  "declared before the loops (the state it keeps)", n)
                written.add(text(t))
        bad = point_names(s)
        if bad:
            raise Refused(f"the fold `{text(s)}` reads {', '.join(sorted(bad))}, which "
                          "differ(s) between the outputs of a thread", s)
    state = tuple(_state(name, before, point_names, stmts[0]) for name in sorted(written))
    if not state:
        raise Refused(f"`{text(stmts[0])}` after the taps keeps nothing: no local is written",
                      stmts[0])
    return Fold(tuple(stmts), state)


def enclosing_before(loop: Node) -> list[Node]:
    """The statements before ``loop`` in its block and in every block around it (the
    places a local the loop sees may be declared: the kernel's body, a guard's block)."""
    out: list[Node] = []
    n = loop
    while n.parent is not None:
        if n.parent.type == "compound_statement":
            out += [s for s in n.parent.named_children if s.end_byte <= n.start_byte]
        n = n.parent
    return out


def _state(name: str, before: list[Node], point_names: Callable[[Node], set[str]],
           at: Node) -> State:
    for s in before:
        if s.type != "declaration":
            continue
        for d in s.children_by_field_name("declarator"):
            if d.type != "init_declarator" or \
                    text(d.child_by_field_name("declarator")) != name:
                continue
            value = d.child_by_field_name("value")
            if len(s.children_by_field_name("declarator")) != 1 or value is None:
                raise Refused(f"`{text(s)}` declares the fold's {name} with other variables "
                              "or without a value", s)
            if point_names(value):
                raise Refused(f"the fold's {name} starts from `{text(value)}`, which depends "
                              "on the point", value)
            typ = s.child_by_field_name("type")
            assert typ is not None
            return State(name, s, text(typ), value)
    raise Refused(f"the fold writes {name}, which is not declared (once, with a value) "
                  "before the loops", at)


def check_uses(body: Node, fold: Fold, store: Node) -> None:
    """The state is used only by its declarations, the fold and the store: elsewhere each
    output's copy would be read or written as one variable."""
    own = (*fold.stmts, store, *(st.decl for st in fold.state))
    for n in walk(body):
        if n.type == "identifier" and text(n) in fold.names and \
                not any(inside(n, s) for s in own):
            raise Refused(f"the fold's {text(n)} is used outside the fold and the store: "
                          "each output keeps its own copy", n)


def per_output(data: bytes, node: Node, copies: dict[str, str]) -> str:
    """``node``'s text with each name of ``copies`` read as this output's copy (the array
    ``copies[name]`` at ``[wb_k][wb_q]``)."""
    return render(data, node, lambda m: f"{copies[text(m)]}[wb_k][wb_q]"
                  if m.type == "identifier" and text(m) in copies else None)


def state_arrays(st: State, oy: str, ox: str) -> str:
    """The declaration of ``st``, one copy per output of the thread."""
    return (f"{st.type} {st.name}[{oy}][{ox}];  // one per output of this thread\n"
            f"#pragma unroll\n  for (int wb_k = 0; wb_k < {oy}; ++wb_k)\n"
            f"#pragma unroll\n    for (int wb_q = 0; wb_q < {ox}; ++wb_q) "
            f"{st.name}[wb_k][wb_q] = {text(st.init)};")


def fold_text(data: bytes, fold: Fold, copies: dict[str, str], oy: str, ox: str) -> str:
    """The fold as written, run per output on its own accumulator and state (``copies``:
    name -> the array of its copies)."""
    body = "\n      ".join(per_output(data, s, copies) for s in fold.stmts)
    return (f"    // the fold after each channel's taps, per output\n"
            f"#pragma unroll\n    for (int wb_k = 0; wb_k < {oy}; ++wb_k)\n"
            f"#pragma unroll\n    for (int wb_q = 0; wb_q < {ox}; ++wb_q) {{\n"
            f"      {body}\n    }}\n")

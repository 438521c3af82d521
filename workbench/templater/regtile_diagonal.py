"""A tiled product whose loop over k stops at its block's diagonal tile, under the register
tile (:mod:`.regtile`; issue 28: respell round 31's trmm spellings).

``for (int t = 0; t <= blockIdx.y; ++t)`` (or through a local, ``last_tile = blockIdx.y``)
walks the k tiles up to the one on the diagonal of the block's rows (a block index of z, a
batch or a slice of k, is no row or column the tiles resize: read as written): a lower-triangular
product (trmm_lower_tiled) whose stores stage the entries past the diagonal as zero (``(row <
n && lc <= row) ? L[..] : 0.0f``). It counts k tiles in units of the block's rows, which the
written tile makes one size. The lift's k tile (BK) and rows (BM) are separate sizes: kept as
written, the loop stopped at ``(blockIdx.y + 1) * BK`` and dropped every row's terms past it
where BK < BM (the corpus kernel's lift at BM 64, BK 16: a thousand outputs wrong).

The bound becomes ``t * BK < (blockIdx.y + 1) * BM`` (columns: ``blockIdx.x``, BN): every
row of the block has its k up to itself walked. A row sums terms past its diagonal the kernel
as written did not reach only where the stores zero them: its own written tile's rows did the
same up to the tile's end. Legal only where (else the register tile is refused with the
line): the loop starts reading no block index, its test is ``t <= E`` or ``t < E + 1``
with E the block index (or a local set once from it, a cast allowed), and a tile store
compares a value read from t with one read from that block index (the triangle's test,
``lc <= row``), so the terms past the diagonal are staged as zero.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tree_sitter import Node

from workbench.templater.analysis import (
    binary,
    builtin,
    int_value,
    single_values,
    strip,
    text,
    walk,
)
from workbench.templater.plan import Plan
from workbench.templater.regtile import Refused

_TESTS = ("<", "<=", ">", ">=")


@dataclass(frozen=True)
class Diagonal:
    """The loop over k tiles bounded by a block index: its test, its variable and the
    block index's dimension (y: rows, x: columns)."""

    test: Node
    var: str
    dim: str

    def in_k(self, names: Mapping[str, str]) -> str:
        """The test read in k, ``t * BK < (blockIdx.y + 1) * BM`` (module doc), which the
        register tile renders in the test's place (``names``: its parameters' names)."""
        size = names["BM" if self.dim == "y" else "BN"]
        return f"({self.var} * {names['BK']} < ((int)blockIdx.{self.dim} + 1) * {size})"

    def note(self, plan: Plan, names: Mapping[str, str]) -> None:
        size = names["BM" if self.dim == "y" else "BN"]
        plan.note("REGISTER_TILE", True, f"the loop over k tiles stops at the block's "
                  f"diagonal tile (`{text(self.test)}`): it runs while {self.var} * "
                  f"{names['BK']} < (blockIdx.{self.dim} + 1) * {size}, every row's k up to "
                  "itself walked (the stores stage the terms past the diagonal as zero)",
                  self.test)


def diagonal(body: Node, loop: Node) -> Diagonal | None:
    """The diagonal bound of ``loop`` (the loop over k tiles of the kernel's ``body``);
    None where its header reads no block index; Refused where it reads one otherwise."""
    values = single_values(body)
    init, test = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    if not any(_block_dims(h, values) & {"x", "y"} for h in (init, test) if h is not None):
        return None  # (blockIdx.z, a batch or a slice of k, is the same for the whole grid's
        # x and y: the rows and columns the tiles resize)
    if init is not None and _block_dims(init, values) & {"x", "y"}:
        raise Refused(f"`{text(init)}`: the loop over k tiles starts at a block index", init)
    parts = binary(strip(test)) if test is not None else None
    var = text(strip(parts[0])) if parts is not None else ""
    bound = strip(parts[2]) if parts is not None else None
    if parts is not None and parts[1] == "<" and bound is not None:
        plus = binary(bound)
        bound = strip(plus[0]) if plus is not None and plus[1] == "+" and \
            int_value(plus[2]) == 1 else None
    elif parts is None or parts[1] != "<=":
        bound = None
    dim = _block_index(bound, values) if bound is not None else None
    if test is None or dim is None or dim not in ("x", "y"):
        raise Refused(f"`{text(test)}`: the loop over k tiles reads a block index other than "
                      "as `t <= blockIdx.y` (its diagonal tile)", test)
    stores = _stores(loop)
    if not any(_compares(n, var, dim, values) for s in stores for n in walk(s)):
        raise Refused(f"`{text(test)}`: the loop over k tiles stops at the block's diagonal "
                      "tile, but no tile store compares k with the block's index: the terms "
                      "past the diagonal are not shown staged as zero", test)
    return Diagonal(test, var, dim)


def bounded_by_block(body: Node, loop: Node) -> bool:
    """Whether ``loop``'s test reads a block index along x or y (``t <= blockIdx.y``) and its
    start reads none: a bound that moves with the block. The SDK's walk starts and ends at
    the block's row (``for (a = aBegin; a <= aEnd; ..)``, ``aEnd = aBegin + K - 1``): a
    whole row of tiles whatever the tile."""
    values = single_values(body)
    init, test = loop.child_by_field_name("initializer"), loop.child_by_field_name("condition")
    return test is not None and bool(_block_dims(test, values) & {"x", "y"}) and not (
        init is not None and _block_dims(init, values) & {"x", "y"})


def _block_dims(node: Node, values: Mapping[str, Node], depth: int = 0) -> set[str]:
    """The block indices ``node`` reads, through the locals it reads too."""
    out: set[str] = set()
    for m in walk(node):
        dim = builtin(m, "blockIdx")
        if dim is not None:
            out.add(dim)
        elif m.type == "identifier" and depth < 8 and (v := values.get(text(m))) is not None:
            out |= _block_dims(v, values, depth + 1)
    return out


def _reads(node: Node, name: str, values: Mapping[str, Node], depth: int = 0) -> bool:
    """``node`` reads the local ``name``, itself or through the locals it reads."""
    for m in walk(node):
        if m.type == "identifier" and text(m) == name:
            return True
        if m.type == "identifier" and depth < 8 and (v := values.get(text(m))) is not None \
                and _reads(v, name, values, depth + 1):
            return True
    return False


def _block_index(node: Node, values: Mapping[str, Node]) -> str | None:
    """The dimension of ``node`` where it is a block index (or a local set once from one)."""
    for _ in range(8):
        node = strip(node)
        dim = builtin(node, "blockIdx")
        if dim is not None:
            return dim
        value = values.get(text(node)) if node.type == "identifier" else None
        if value is None:
            return None
        node = value
    return None


def _stores(loop: Node) -> list[Node]:
    """The statements of the loop's body before its first barrier."""
    body = loop.child_by_field_name("body")
    out = []
    for s in body.named_children if body is not None else []:
        if "__syncthreads" in text(s):
            break
        out.append(s)
    return out


def _compares(n: Node, var: str, dim: str, values: Mapping[str, Node]) -> bool:
    """``n`` compares a value read from ``var`` with one read from blockIdx.``dim``."""
    parts = binary(n)
    if parts is None or parts[1] not in _TESTS:
        return False
    sides = (parts[0], parts[2])
    return any(_reads(a, var, values) and not _block_dims(a, values) and
               dim in _block_dims(b, values) for a, b in (sides, sides[::-1]))

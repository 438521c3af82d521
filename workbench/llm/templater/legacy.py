"""The named-constant lifter: the offline templater's fallback for hand-tuned kernels.

Deterministic text rewriting of hard-coded tuning constants into guarded macros
(``#ifndef NAME / #define NAME <original> / #endif``), so the template still compiles on its
own at the baseline's values:

===================================================  ======================================
found in the baseline                                 becomes
===================================================  ======================================
``#pragma unroll N``                                  ``UNROLL`` (choice 1, 2, 4, 8 and N)
``16 / ELEM_BYTES``, ``16 / sizeof(T)``, ``alignas(16)``  ``VEC_BYTES`` (choice 2..16 bytes)
``constexpr int kVec = 8`` (vec / pack / width)       ``VEC`` (choice 1, 2, 4, 8 and 8)
``constexpr int kThreads = 128``, ``#define THREADS``  ``BLOCK_THREADS`` (pow2 32..1024)
a 1024 cap or a lone 1-D block size in launch rules   ``BLOCK_THREADS`` + ``__launch_bounds__``
``constexpr int kItemsPerThread = 4``                 ``ITEMS_PER_THREAD`` (choice 1..8 and 4)
===================================================  ======================================

Launch rules are the folder's baseline rules with the lifted constants substituted;
constraints keep vector widths legal (``VEC_BYTES >= elem_bytes``, divisibility of the shape
name the baseline divides by the vector width). Comments and string literals are never
rewritten.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import Any

from workbench.core.defines import define_lines
from workbench.llm.templater.records import LiftedParameter, LiftedSource

_BLOCK_NAME = re.compile(r"(?i)(threads|block_?size|block_?dim|kblock\b)")
_VEC_NAME = re.compile(r"(?i)(vec|pack|width)")
_ITEMS_NAME = re.compile(r"(?i)(items?_?per_?thread|elems?_?per_?thread|^k?items$)")
_CONST_DECL = re.compile(
    r"\b((?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+|signed\s+)?(?:int|long|size_t|"
    r"unsigned|int32_t|uint32_t)\s+)([A-Za-z_]\w*)(\s*=\s*)(\d+)([uUlL]*\s*;)")
_DEFINE = re.compile(r"^([ \t]*#[ \t]*define[ \t]+)([A-Za-z_]\w*)([ \t]+)(\d+)[ \t]*$", re.M)
_UNROLL = re.compile(r"(#[ \t]*pragma[ \t]+unroll[ \t]*)(\(?[ \t]*)(\d+)([ \t]*\)?)")
_VEC_BYTES_DIV = re.compile(r"\b16(\s*/\s*(?:ELEM_BYTES|sizeof\s*\(\s*[A-Za-z_]\w*\s*\)))")
_ALIGN16 = re.compile(r"\b(alignas|__align__)(\s*\(\s*)16(\s*\))")


def code_mask(source: str) -> list[bool]:
    """``mask[i]`` is True where character i is code (not a comment or string literal)."""
    mask = [True] * len(source)
    i, n = 0, len(source)
    while i < n:
        two = source[i:i + 2]
        if two == "//":
            j = source.find("\n", i)
            j = n if j < 0 else j
        elif two == "/*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif source[i] in "\"'":
            quote, j = source[i], i + 1
            while j < n and source[j] != quote and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(n, j + 1)
        else:
            i += 1
            continue
        for k in range(i, j):
            mask[k] = False
        i = j
    return mask


def code_sub(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], source: str) -> str:
    """``pattern.sub`` that leaves matches starting inside comments or strings alone."""
    mask = code_mask(source)
    return pattern.sub(lambda m: repl(m) if mask[m.start()] else m.group(0), source)


def _line_of(source: str, pos: int) -> int:
    return source.count("\n", 0, pos) + 1


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


def _choice(default: int, extra: Sequence[int], description: str) -> dict[str, Any]:
    return {"kind": "choice", "values": sorted({*extra, default}), "default": default,
            "description": description}


class _Lifter:
    def __init__(self, source: str, source_name: str) -> None:
        self.original = source
        self.source = source
        self.source_name = source_name
        self.params: dict[str, LiftedParameter] = {}
        self.notes: list[str] = []
        self.decls: list[str] = []  # file-scope declarations placed after the guards

    def free_name(self, base: str) -> str:
        name, k = base, 2
        while name in self.params or _has_word(self.original, name):
            name, k = f"{base}_{k}", k + 1
        return name

    def add(self, name: str, spec: dict[str, Any], pos: int | None, snippet: str) -> None:
        """Record a parameter; ``pos`` is where it was found in the source (None: launch rules)."""
        where = ("kernel.toml [baseline]" if pos is None
                 else f"{self.source_name}:{_line_of(self.source, pos)}")
        self.params[name] = LiftedParameter(name, spec, f"{where}: {snippet.strip()}")

    def lift_unroll(self) -> None:
        # nvcc does not macro-expand the argument of #pragma unroll, but it does evaluate a
        # constant expression there: route the macro through a constexpr.
        values: dict[int, str] = {}

        def repl(m: re.Match[str]) -> str:
            n = int(m.group(3))
            if n not in values:
                values[n] = self.free_name("UNROLL")
                self.add(values[n], _choice(n, (1, 2, 4, 8), f"unroll factor (baseline {n})"),
                         m.start(), m.group(0))
                self.decls.append(f"constexpr int wb_{values[n].lower()} = {values[n]};"
                                  "  // #pragma unroll needs a constant, not a macro")
            return f"{m.group(1)}(wb_{values[n].lower()})"

        self.source = code_sub(_UNROLL, repl, self.source)

    def lift_vec_bytes(self) -> str | None:
        name = self.free_name("VEC_BYTES")
        found: list[re.Match[str]] = []

        def repl(m: re.Match[str]) -> str:
            found.append(m)
            return f"{name}{m.group(1)}"

        self.source = code_sub(_VEC_BYTES_DIV, repl, self.source)
        if not found:
            return None
        self.add(name, _choice(16, (2, 4, 8), "bytes per vector load/store (baseline 16)"),
                 found[0].start(), found[0].group(0))
        self.source = code_sub(_ALIGN16, lambda m: f"{m.group(1)}{m.group(2)}{name}{m.group(3)}",
                                self.source)
        return name

    def lift_named_constants(self) -> dict[str, tuple[str, int]]:
        """Lift block / vec / items constants. Returns category -> (param name, baseline value)."""
        lifted: dict[str, tuple[str, int]] = {}

        def classify(cname: str, value: int) -> tuple[str, str, dict[str, Any]] | None:
            if _ITEMS_NAME.search(cname) and 1 <= value <= 64:
                return ("items", "ITEMS_PER_THREAD",
                        _choice(value, (1, 2, 4, 8), f"items per thread (baseline {value})"))
            if _BLOCK_NAME.search(cname) and 32 <= value <= 1024 and value & (value - 1) == 0:
                return ("block", "BLOCK_THREADS",
                        {"kind": "pow2", "min": 32, "max": 1024, "default": value,
                         "description": f"threads per block (baseline {value})"})
            if _VEC_NAME.search(cname) and value in (1, 2, 4, 8, 16):
                return ("vec", "VEC", _choice(value, (1, 2, 4, 8),
                                              f"elements per vector access (baseline {value})"))
            return None

        def take(cname: str, value: int, pos: int, snippet: str) -> str | None:
            kind = classify(cname, value)
            if kind is None or kind[0] in lifted:
                return None
            category, base, spec = kind
            pname = base if cname == base else self.free_name(base)
            lifted[category] = (pname, value)
            self.add(pname, spec, pos, snippet)
            return pname

        def repl_decl(m: re.Match[str]) -> str:
            pname = take(m.group(2), int(m.group(4)), m.start(), m.group(0))
            if pname is None:
                return m.group(0)
            return f"{m.group(1)}{m.group(2)}{m.group(3)}{pname}{m.group(5)}"

        def repl_define(m: re.Match[str]) -> str:
            cname = m.group(2)
            pname = take(cname, int(m.group(4)), m.start(), m.group(0))
            if pname is None:
                return m.group(0)
            if pname == cname:  # already the parameter's name: guard it instead
                return f"#ifndef {cname}\n{m.group(1)}{cname}{m.group(3)}{m.group(4)}\n#endif"
            return f"{m.group(1)}{cname}{m.group(3)}{pname}"

        self.source = code_sub(_CONST_DECL, repl_decl, self.source)
        self.source = code_sub(_DEFINE, repl_define, self.source)
        return lifted

    def bind_launch_bounds(self, entry: str, pname: str, default: int, *, add: bool) -> None:
        """Tie the entry's ``__launch_bounds__`` to ``pname``.

        An existing ``__launch_bounds__(default[, ...])`` gets ``pname`` as its first argument;
        with ``add`` and no bounds, ``__launch_bounds__(pname)`` is added.
        """
        pattern = re.compile(r"(__global__\s+void\s+)"
                             r"(__launch_bounds__\s*\(\s*(\d+)\s*(,[^)]*)?\)\s*)?"
                             + re.escape(entry) + r"\s*\(")
        mask = code_mask(self.source)
        match = next((m for m in pattern.finditer(self.source) if mask[m.start()]), None)
        if match is None:
            self.notes.append(f"entry {entry} not found; __launch_bounds__ not tied to {pname}")
            return
        if match.group(2):
            if int(match.group(3)) != default:
                self.notes.append(f"__launch_bounds__({match.group(3)}) on {entry} differs from "
                                  f"the block size {default}; left as it is")
                return
            start, end = match.span(3)
            self.source = self.source[:start] + pname + self.source[end:]
            self.notes.append(f"__launch_bounds__ of {entry} now follows {pname}")
        elif add:
            at = match.end(1)
            self.source = self.source[:at] + f"__launch_bounds__({pname}) " + self.source[at:]
            self.notes.append(f"{pname} bounds the launch: __launch_bounds__({pname}) added "
                              f"to {entry}")

    def guard_block(self) -> None:
        """Insert ``#ifndef NAME / #define NAME default / #endif`` after the last #include."""
        todo = [p for p in self.params.values()
                if not re.search(rf"#\s*ifndef\s+{p.name}\b", self.source)]
        if not todo and not self.decls:
            return
        lines = ["// Tuning parameters lifted by the Kernel Workbench offline templater;",
                 "// the defaults are the baseline's values."]
        lines += define_lines([(p.name, p.spec["default"]) for p in todo], guarded=True)
        block = "\n".join([*lines, *self.decls]) + "\n"
        includes = [m for m in re.finditer(r"^[ \t]*#[ \t]*include\b.*$", self.source, re.M)
                    if code_mask(self.source)[m.start()]]
        if includes:
            at = includes[-1].end() + 1
            self.source = self.source[:at] + "\n" + block + self.source[at:]
        else:
            self.source = block + "\n" + self.source


def _launch_block_threads(grid: list[str], block: list[str], pname: str,
                          known_block: int | None) -> tuple[list[str], list[str], int | None]:
    """Substitute BLOCK_THREADS into launch rules; returns (grid, block, baseline value)."""
    found: int | None = None
    new_block = list(block)
    for i, expr in enumerate(block):
        if "min(" in expr and re.search(r"\b1024\b", expr):
            new_block[i] = re.sub(r"\b1024\b", pname, expr)
            found = 1024
    if found is None and len(block) == 1 and block[0].strip().isdigit():
        value = int(block[0])
        if 32 <= value <= 1024 and value & (value - 1) == 0:
            new_block = [pname]
            found = value
    if found is None and known_block is not None:
        for i, expr in enumerate(block):
            if expr.strip() == str(known_block):
                new_block[i] = pname
                found = known_block
    new_grid = list(grid)
    if found is not None:
        new_grid = [re.sub(rf",\s*{found}\s*\)", f", {pname})", g) for g in grid]
        new_grid = [re.sub(rf"//\s*{found}\b", f"// {pname}", g) for g in new_grid]
    return new_grid, new_block, found


def lift_source(source: str, *, entry: str, grid: Sequence[str], block: Sequence[str],
                smem_bytes: str = "0", shape_names: Sequence[str] = (),
                source_name: str = "baseline.cu") -> LiftedSource:
    """Lift tuning constants out of ``source`` (pure; see the module docstring)."""
    lifter = _Lifter(source, source_name)
    constraints: list[str] = []
    launch_grid, launch_block, smem = list(grid), list(block), str(smem_bytes)

    lifter.lift_unroll()
    vec_bytes = lifter.lift_vec_bytes()
    named = lifter.lift_named_constants()

    if vec_bytes is not None:
        constraints.append(f"{vec_bytes} >= elem_bytes")
        pattern = re.compile(r"\b16(\s*//\s*elem_bytes)\b")
        for expr in (*launch_grid, *launch_block, smem):
            for m in re.finditer(r"\b([a-z_]\w*)\s*//\s*\(\s*16\s*//\s*elem_bytes\s*\)", expr):
                if m.group(1) in shape_names:
                    c = f"{m.group(1)} % ({vec_bytes} // elem_bytes) == 0"
                    if c not in constraints:
                        constraints.append(c)
        launch_grid = [pattern.sub(rf"{vec_bytes}\1", g) for g in launch_grid]
        launch_block = [pattern.sub(rf"{vec_bytes}\1", b) for b in launch_block]
        smem = pattern.sub(rf"{vec_bytes}\1", smem)
    if "vec" in named:
        constraints.append(f"{named['vec'][0]} * elem_bytes <= 16")

    block_name = named["block"][0] if "block" in named else lifter.free_name("BLOCK_THREADS")
    known_block = named["block"][1] if "block" in named else None
    launch_grid, launch_block, found = _launch_block_threads(launch_grid, launch_block,
                                                             block_name, known_block)
    if "block" not in named and found is not None:
        lifter.add(block_name, {"kind": "pow2", "min": 32, "max": 1024, "default": found,
                                "description": f"threads per block (baseline {found})"},
                   None, f"block = {list(block)}")
        # blockDim-driven kernels do not name the block size: the bounds make it matter
        lifter.bind_launch_bounds(entry, block_name, found, add=True)
    elif "block" in named:
        lifter.bind_launch_bounds(entry, block_name, named["block"][1], add=False)
    lifter.guard_block()
    return LiftedSource(source=lifter.source, params=tuple(lifter.params.values()),
                        constraints=tuple(constraints), grid=tuple(launch_grid),
                        block=tuple(launch_block), smem_bytes=smem, notes=tuple(lifter.notes))


def unified_diff(before: str, after: str, before_name: str = "baseline.cu",
                 after_name: str = "template.cu") -> str:
    """The unified diff text from ``before`` to ``after``."""
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=before_name, tofile=after_name))

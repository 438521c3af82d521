"""The space-wide correctness gate: a template is verified across its space, not at one point.

A proposal (offline or LLM) is run on the GPU at its defaults, at every corner of its space
and at a seeded sample of it (``GATE_SAMPLE`` configs, or the whole space when smaller), at
the folder's check shape and for every dtype; each output is compared with the baseline's.
Failing configs are listed with their failure. The verdict reads "correct at N/N configs
checked"; without a GPU it says the template is unverified and how many configs would have
been checked.

At the folder's other shapes the defaults and every parameter's feasible extremes are run
too (:func:`extremes`): a config right at the check shape can be wrong at another (an
approximation whose error grows over a longer iteration, an edge that only a larger size
reaches), and a tuner measures it there.

Corners: every combination of each parameter's smallest and largest value that the
constraints allow, plus, for each parameter, its smallest and largest feasible value with
the others as near their defaults as the constraints allow (so every extreme is run even
where the box corners are infeasible).

:func:`tighten` is the repair for the offline templater: from the failing and passing
configs it derives constraints that exclude every failure and keep every pass: on one
parameter (``P < v``, ``P > v``, ``P != v``) and relations between two integer parameters
(``A == B``, ``A % B == 0``, ``A <= B``, ``A * B <= k``), a small hypothesis set each
member of which holds at every passing config; a greedy cover picks the fewest. The LLM's
repair round gets the failing configs as problems.

A template whose every non-default config fails (:attr:`GateReport.only_defaults_pass`) is
not repairable: its knobs change what the kernel computes, and a space cut down to its
defaults is no template. Without a GPU nothing is checked: :func:`unverified_notice` is the
text the CLI and the panel show beside an approval.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from workbench.core.records import Config, Status, TrialResult
from workbench.core.space import SearchSpace
from workbench.core.template import KernelTemplate

__all__ = ["GATE_SAMPLE", "GateFailure", "GateReport", "extremes", "gate_configs",
           "relation_between", "run_gate", "tighten", "unverified_notice"]

GATE_SAMPLE = 32
_MAX_BOX_PARAMS = 8  # 2**8 box corners at most; more parameters: one-at-a-time extremes only
_SHOWN_FAILURES = 8


class ConfigCheck(Protocol):
    """Runs ``template`` at ``config`` on a GPU and compares with the golden outputs."""

    def __call__(self, template: KernelTemplate, config: Config, shape: str,
                 dtype: str) -> TrialResult: ...


#: Optional batch form: every config in one runner (compiles in parallel). A check object
#: may offer it as ``check.many``.
ManyCheck = Callable[[KernelTemplate, Sequence[Config], str, str], Sequence[TrialResult]]


@dataclass(frozen=True)
class GateFailure:
    """One config that failed the gate, and how."""

    config: Config
    shape: str
    dtype: str
    status: str
    reason: str

    def __str__(self) -> str:
        cfg = ", ".join(f"{k}={v}" for k, v in sorted(self.config.items()))
        return f"{self.shape}/{self.dtype} {{{cfg}}}: {self.status}: {self.reason}"


@dataclass(frozen=True)
class GateReport:
    """What the gate checked and found. ``on_gpu`` False: nothing was run."""

    runs: tuple[tuple[str, Config], ...]  # (dtype, config), in the order checked
    kinds: Mapping[str, int]  # defaults / corners / sampled -> runs of each kind
    shape: str
    dtypes: tuple[str, ...]
    failures: tuple[GateFailure, ...]
    on_gpu: bool
    pruned: int = 0  # runs the hardware model refused before the GPU (never tuned either)
    default_config: Config | None = None
    pruned_runs: tuple[tuple[str, Config], ...] = ()
    #: (shape, dtype, config) run at the folder's other shapes: defaults and extremes
    shape_runs: tuple[tuple[str, str, Config], ...] = ()

    @property
    def only_defaults_pass(self) -> bool:
        """Run on the GPU, the defaults passed, at least one non-default config ran, and
        every one failed (a template wrong at its defaults is reported as such)."""
        if not self.on_gpu or self.default_config is None \
                or any(f.config == self.default_config for f in self.failures):
            return False
        pruned = set(self.pruned_runs)
        others = [(d, c) for d, c in self.runs
                  if c != self.default_config and (d, c) not in pruned]
        failed = {(f.dtype, f.config) for f in self.failures}
        return bool(others) and all(run in failed for run in others)

    def only_defaults_reason(self) -> str:
        """Why such a template is refused (see :attr:`only_defaults_pass`)."""
        pruned = set(self.pruned_runs)
        n = sum(1 for d, c in self.runs if c != self.default_config and (d, c) not in pruned)
        return (f"every non-default config failed the gate ({n} of {n} run on the GPU): the "
                "parameters change what the kernel computes (or a tile's extent, its loads "
                "and its indexing are not lifted together), and no constraint leaves more "
                "than the defaults; refused, nothing written")

    @property
    def checked(self) -> int:
        """Config runs made on the GPU (one per config, dtype and shape)."""
        return len(self.runs) - self.pruned + len(self.shape_runs) if self.on_gpu else 0

    def passing_configs(self, dtype: str) -> tuple[Config, ...]:
        bad = {f.config for f in self.failures if f.dtype == dtype}
        return tuple(c for d, c in self.runs if d == dtype and c not in bad)

    @property
    def other_shapes(self) -> tuple[str, ...]:
        """The folder's shapes besides the check shape where defaults and extremes ran."""
        return tuple(dict.fromkeys(shape for shape, _, _ in self.shape_runs))

    def passing_at(self, shape: str, dtype: str) -> tuple[Config, ...]:
        """The configs that ran and passed at one of :attr:`other_shapes`."""
        bad = {f.config for f in self.failures if f.shape == shape and f.dtype == dtype}
        return tuple(c for s, d, c in self.shape_runs if s == shape and d == dtype
                     and c not in bad)

    @property
    def passed(self) -> bool:
        return self.on_gpu and not self.failures

    @property
    def failing_configs(self) -> tuple[Config, ...]:
        return tuple(dict.fromkeys(f.config for f in self.failures))

    @property
    def configs(self) -> tuple[Config, ...]:
        return tuple(dict.fromkeys(c for _, c in self.runs))

    @property
    def verdict(self) -> str:
        runs = len(self.runs) - self.pruned + len(self.shape_runs)
        others = self.other_shapes
        what = (f"{self.kinds.get('defaults', 0)} defaults, {self.kinds.get('corners', 0)} "
                f"corners, {self.kinds.get('sampled', 0)} sampled; shape {self.shape}; "
                f"{', '.join(self.dtypes)}" +
                (f"; defaults and extremes at {', '.join(others)}: {len(self.shape_runs)}"
                 if others else "") +
                (f"; {self.pruned} pruned by the hardware model, not run" if self.pruned else "")
                )
        if not self.on_gpu:
            return (f"unverified: no GPU on this machine ({runs} config runs would be checked: "
                    f"{what})")
        bad = len(self.failures)
        if bad:
            return f"wrong at {bad}/{runs} configs checked ({what})"
        return f"correct at {runs}/{runs} configs checked ({what})"

    def messages(self) -> list[str]:
        shown = [str(f) for f in self.failures[:_SHOWN_FAILURES]]
        if len(self.failures) > _SHOWN_FAILURES:
            shown.append(f"... and {len(self.failures) - _SHOWN_FAILURES} more failing configs")
        return shown


def _nearest_with(space: SearchSpace, defaults: Config, name: str, value: Any) -> Config | None:
    """A feasible config with ``name == value``, the others as near their defaults as allowed
    (the fewest parameters moved, each by the fewest steps)."""
    fixed = {**defaults, name: value}
    if space.rejection(fixed) is None:
        return Config(fixed)
    best: tuple[tuple[int, int], Config] | None = None
    for config in space:
        if config[name] != value:
            continue
        moved = [p for p in space.params if p.name != name and config[p.name] != defaults[p.name]]
        steps = sum(abs(p.index(config[p.name]) - p.index(defaults[p.name])) for p in moved)
        key = (len(moved), steps)
        if best is None or key < best[0]:
            best = (key, config)
    return best[1] if best else None


def corners(space: SearchSpace, defaults: Config) -> list[Config]:
    """The feasible box corners and every parameter's feasible extremes (see module doc)."""
    out: dict[Config, None] = {}
    if len(space.params) <= _MAX_BOX_PARAMS:
        ends = [(p.values()[0], p.values()[-1]) for p in space.params]
        for combo in itertools.product(*ends):
            config = Config({p.name: v for p, v in zip(space.params, combo, strict=True)})
            if space.rejection(config) is None:
                out[config] = None
    if not out and not _feasible(space):
        return []
    for config in extremes(space, defaults):
        out[config] = None
    return list(out)


def extremes(space: SearchSpace, defaults: Config) -> list[Config]:
    """For each parameter its smallest and largest feasible value, the others as near their
    defaults as the constraints allow."""
    feasible = _feasible(space)
    out: dict[Config, None] = {}
    for p in space.params:
        values = sorted({c[p.name] for c in feasible}, key=p.index)
        for value in values[:1] + values[-1:]:
            near = _nearest_with(space, defaults, p.name, value)
            if near is not None:
                out[near] = None
    return list(out)


def _feasible(space: SearchSpace) -> list[Config]:
    return list(space) if space.size <= 50_000 else space.sample(50_000, seed=0)


def gate_configs(space: SearchSpace, defaults: Config, *, sample: int = GATE_SAMPLE,
                 seed: int = 0) -> tuple[list[Config], dict[str, int]]:
    """Defaults, corners, then a seeded sample (the whole space when it is no larger);
    distinct configs in that order, and how many of each kind."""
    chosen: dict[Config, None] = {}
    kinds = {"defaults": 0, "corners": 0, "sampled": 0}
    if space.rejection(defaults) is None:
        chosen[defaults] = None
        kinds["defaults"] = 1
    for c in corners(space, defaults):
        if c not in chosen:
            chosen[c] = None
            kinds["corners"] += 1
    drawn = list(space) if space.size <= sample else space.sample(sample, seed)
    for c in drawn:
        if c not in chosen:
            chosen[c] = None
            kinds["sampled"] += 1
    return list(chosen), kinds


def run_gate(template: KernelTemplate, spaces: Mapping[str, SearchSpace], shape: str,
             check: ConfigCheck | None, *, sample: int = GATE_SAMPLE, seed: int = 0,
             other_shapes: Mapping[str, Mapping[str, SearchSpace]] | None = None,
             ) -> GateReport:
    """Run the gate over ``spaces`` (dtype -> the template's space at ``shape``), then the
    defaults and extremes at each of ``other_shapes`` (shape -> dtype -> space);
    ``check=None`` (no GPU) returns an unverified report listing what would be checked."""
    runs: list[tuple[str, Config]] = []
    kinds = {"defaults": 0, "corners": 0, "sampled": 0}
    failures: list[GateFailure] = []
    pruned_runs: list[tuple[str, Config]] = []
    for dtype, space in spaces.items():
        configs, counts = gate_configs(space, template.default_config(), sample=sample,
                                       seed=seed)
        runs += [(dtype, c) for c in configs]
        for kind, n in counts.items():
            kinds[kind] += n
        if check is not None:
            ran = _check_all(check, template, configs, shape, dtype, failures)
            pruned_runs += [(dtype, c) for c in configs if c not in ran]
    shape_runs: list[tuple[str, str, Config]] = []
    for other, by_dtype in (other_shapes or {}).items():
        for dtype, space in by_dtype.items():
            defaults = template.default_config()
            configs = list(dict.fromkeys(
                ([defaults] if space.rejection(defaults) is None else [])
                + extremes(space, defaults)))
            if check is None:
                shape_runs += [(other, dtype, c) for c in configs]
                continue
            ran = _check_all(check, template, configs, other, dtype, failures)
            shape_runs += [(other, dtype, c) for c in configs if c in ran]
    return GateReport(tuple(runs), kinds, shape, tuple(spaces), tuple(failures),
                      on_gpu=check is not None, pruned=len(pruned_runs),
                      default_config=template.default_config(),
                      pruned_runs=tuple(pruned_runs), shape_runs=tuple(shape_runs))


def _check_all(check: ConfigCheck, template: KernelTemplate, configs: Sequence[Config],
               shape: str, dtype: str, failures: list[GateFailure]) -> set[Config]:
    """Run ``configs`` at ``shape`` (in one batch where the check offers ``many``), add the
    failures, and return the configs that ran (pruned ones, which the hardware model
    refuses before the GPU, are never run by a tuner either)."""
    many: ManyCheck | None = getattr(check, "many", None)
    results = (list(many(template, configs, shape, dtype)) if many is not None
               else [check(template, c, shape, dtype) for c in configs])
    ran: set[Config] = set()
    for config, result in zip(configs, results, strict=True):
        if result.status is Status.PRUNED:
            continue
        ran.add(config)
        if result.status.is_failure:
            failures.append(GateFailure(config, shape, dtype, result.status.value,
                                        result.reason or ""))
    return ran


def unverified_notice(folder: str) -> str:
    """What a reviewer reads beside Approve (and ``propose --write`` prints last) when no
    GPU ran the gate: the template is unverified, and what will check it."""
    return (f"unverified: no GPU on this machine ran the space-wide correctness gate on this "
            f"template, so no config other than the baseline is known to compute the right "
            f"result. What will check it: `workbench propose {folder}` on a machine with a GPU "
            f"runs the gate (the defaults, every corner and a seeded sample of the space, each "
            f"compared with the baseline's outputs), and `workbench tune {folder}` checks every "
            f"config it times against the baseline on both input sets before timing it "
            f"(wrong ones are recorded as wrong_result, never picked)")


def _rules(space: SearchSpace, bad: Sequence[Config],
           good: Sequence[Config]) -> list[tuple[str, frozenset[int]]]:
    """Candidate single-parameter constraints that keep every good config, with the
    failing configs (by index) each one excludes."""
    rules = []
    for p in space.params:
        good_values = {c[p.name] for c in good}
        good_idx = [p.index(v) for v in good_values]
        lo, hi = (min(good_idx), max(good_idx)) if good_idx else (None, None)
        values = p.values()
        ordered = all(isinstance(v, int | float) for v in values) and list(values) == sorted(values)
        if not ordered:
            lo = hi = None  # "<" and ">" only follow the value order of sorted numbers
        if hi is not None and hi + 1 < len(values):
            cut = values[hi + 1]
            rules.append((f"{p.name} < {cut}",
                          frozenset(i for i, c in enumerate(bad) if p.index(c[p.name]) > hi)))
        if lo is not None and lo > 0:
            cut = values[lo - 1]
            rules.append((f"{p.name} > {cut}",
                          frozenset(i for i, c in enumerate(bad) if p.index(c[p.name]) < lo)))
        for v in {c[p.name] for c in bad} - good_values:
            text = f"{p.name} != {int(v) if isinstance(v, bool) else v}"
            rules.append((text, frozenset(i for i, c in enumerate(bad) if c[p.name] == v)))
    return [r for r in rules if r[1]]


def _int_params(space: SearchSpace) -> list[str]:
    return [p.name for p in space.params
            if all(isinstance(v, int) and not isinstance(v, bool) for v in p.values())]


def _equal(x: int, y: int) -> bool:
    return x == y


def _at_most(x: int, y: int) -> bool:
    return x <= y


def _at_least(x: int, y: int) -> bool:
    return x >= y


def _multiple_of(x: int, y: int) -> bool:
    return y != 0 and x % y == 0


def _divides(x: int, y: int) -> bool:
    return x != 0 and y % x == 0


def _relations(space: SearchSpace, bad: Sequence[Config],
               good: Sequence[Config]) -> list[tuple[str, frozenset[int]]]:
    """Candidate relations between two integer parameters that hold at every passing config,
    with the failing configs (by index) each one excludes."""
    names = _int_params(space)
    rules: list[tuple[str, frozenset[int]]] = []

    def add(text: str, holds: Callable[[int, int], bool], a: str, b: str) -> None:
        if all(holds(int(c[a]), int(c[b])) for c in good):
            rules.append((text, frozenset(i for i, c in enumerate(bad)
                                          if not holds(int(c[a]), int(c[b])))))

    for i, a in enumerate(names):
        for b in names[i + 1:]:
            add(f"{a} == {b}", _equal, a, b)
            add(f"{a} <= {b}", _at_most, a, b)
            add(f"{b} <= {a}", _at_least, a, b)
            add(f"{a} % {b} == 0", _multiple_of, a, b)
            add(f"{b} % {a} == 0", _divides, a, b)
            if good:
                k = max(int(c[a]) * int(c[b]) for c in good)

                def within(x: int, y: int, k: int = k) -> bool:
                    return x * y <= k
                add(f"{a} * {b} <= {k}", within, a, b)
    return [r for r in rules if r[1]]


def relation_between(text: str, space: SearchSpace) -> tuple[str, str] | None:
    """The two parameters a constraint relates, or None for a one-parameter rule."""
    import re

    named = [p.name for p in space.params if re.search(rf"\b{re.escape(p.name)}\b", text)]
    return (named[0], named[1]) if len(named) == 2 else None


def tighten(space: SearchSpace, failing: Sequence[Config], passing: Sequence[Config],
            prefer: Sequence[Config] = ()) -> tuple[list[str], list[Config]]:
    """Constraints that exclude the failing configs and keep every passing one (a greedy
    cover by single-parameter rules and relations between two parameters: the rule that
    excludes the most remaining failures first, then the one that keeps the most of
    ``prefer`` (configs not known to fail), the shorter text on a tie), and the failing
    configs no such rule explains."""
    remaining = set(range(len(failing)))
    added: list[str] = []
    rules = _rules(space, failing, passing) + _relations(space, failing, passing)
    kept = {text: sum(1 for c in prefer
                      if SearchSpace(space.params, [text], space.env).rejection(c) is None)
            for text, _ in rules} if prefer else {}
    while remaining:
        best = max(rules, key=lambda r: (len(r[1] & remaining), kept.get(r[0], 0),
                                         -len(r[0])), default=None)
        if best is None or not best[1] & remaining:
            break
        added.append(best[0])
        remaining -= best[1]
    return added, [failing[i] for i in sorted(remaining)]

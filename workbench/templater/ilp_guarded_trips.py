"""CHECK_EVERY, exact: a loop the items share (``for (;;)``, ``while (true)``, or one with a
test in its header, below), left by that test or by exits ``if (C) break;`` in its body, runs
``CHECK_EVERY`` trips between its all-items-left tests, each trip's exits still tested per
item (issue 28,
set 16's collatz_steps: the expert's UNROLL, guarded steps between checks of the exit).

Where :mod:`.ilp_series_exit` lets extra trips run unguarded (their terms fall below the
result's rounding), here no extra trip changes anything: the group repeats the trip as the
items' shared loop renders it (:mod:`.ilp_exits`), so every exit test still runs per item
in its place, and an item that has left is either skipped (``if (!done)``, the guarded
form) or runs on and gets the state it left with back by a select (the straight form). A
trip after every item has left therefore changes no item's state; what else it could change
is refused, naming the line:

* a counter the items share (:func:`.ilp_series_exit.shared_counters`), stepped once a trip
  (the only statement of such a loop that is no item's): a trip after every item has left
  would step it past every trip an item ran, and a read it indexes could leave its table;
* a barrier (``__syncthreads``): the group would change how many a thread reaches.

A loop with a header test (``while (C)``, ``for (; C; )``, ``do ... while (C)``) is read too:
ilp.py's exact group (``SeriesExit.exact``) runs each item's header test after every trip of
the group, not once after it.

The loop's body as written is one trip; the knob only decides how many of those trips run
before the thread asks whether any item is still in the loop (a branch, taken once a group,
instead of once a trip). ``CHECK_EVERY = 1`` is the rendered loop unchanged.
"""

from __future__ import annotations

from workbench.templater.analysis import calls, walk
from workbench.templater.ilp_exits import SharedExit
from workbench.templater.vector import Illegal

_BARRIERS = ("__syncthreads", "__syncthreads_count", "__syncthreads_and", "__syncthreads_or")


def guarded_trips(found: SharedExit, shared: set[str]) -> None:
    """Nothing where ``found``'s loop may run CHECK_EVERY trips between its
    all-left tests with no trip changing a result (the module doc), else Illegal naming the
    line.
    ``shared``: the loop's counters the items share (:func:`.ilp_series_exit.shared_counters`,
    the only names the loop writes that are no item's: any other it writes is one)."""
    loop = found.loop
    body = loop.child_by_field_name("body")
    assert body is not None
    if shared:
        raise Illegal(f"`{', '.join(sorted(shared))}` is a counter the items share: a trip "
                      "after every item left would step it past every trip an item ran (a "
                      "read it indexes could leave its table)", loop)
    barrier = next((n for n in walk(body) if n.type == "call_expression" and
                    calls(n) & set(_BARRIERS)), None)
    if barrier is not None:
        raise Illegal("a barrier in the loop: grouped trips would change how many a thread "
                      "reaches", barrier)

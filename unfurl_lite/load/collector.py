"""The garbage collector while an ensemble is loaded, and after, for the command that
loaded it.

Its own module, apart from the parsers, because every load passes here, also one the
parse cache answers (a job after ``unfurl plan``), which then imports no parser.
"""

from __future__ import annotations

import contextlib
import gc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def no_collection() -> Iterator[None]:
    """The parse allocates a node and a value for every scalar and creates no reference
    cycles: the collector, rescanning the growing heap every few hundred allocations, cost
    as much as the parse itself at N=10,000. Off while parsing, as it was before after
    (the loader keeps it off through the checks and the model's build too: the same
    allocations without cycles, a sixth of a cold load's CPU at N=10,000 even at the
    command's higher thresholds)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            if _freezing[0]:
                gc.freeze()
                _froze[0] = True
            gc.enable()


#: callers inside :func:`loads_frozen`, and whether a load froze anything for them
_freezing, _froze = [0], [False]


@contextlib.contextmanager
def loads_frozen() -> Iterator[None]:
    """For a command that loads an ensemble, uses it and ends (validate, plan, a job): what
    a load built is moved out of the collector's generations as the load ends
    (``gc.freeze``) instead of being walked. The objects a load makes while the collector is
    off all wait in its youngest generation, so the first collection after the load walked
    every one of them and moved them on to be walked again (a seventh of validate's CPU at
    N=10,000, 0.3 s). Unfrozen as the command ends: a library caller's heap is collected as
    before, and a long-running process (a worker) does not enter this."""
    _freezing[0] += 1
    try:
        yield
    finally:
        _freezing[0] -= 1
        if not _freezing[0] and _froze[0]:
            _froze[0] = False
            gc.unfreeze()

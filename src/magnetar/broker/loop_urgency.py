"""Work another thread handed the event loop that should not wait behind a long loop callback.

The commit threads hand each round's outcome (the publishes' receipts) to the loop with
``call_soon_threadsafe``. A subscription catching up on a backlog dispatches in runs that hold the loop
up to the dispatchers' ``TURN_SECONDS``, and a receipt handed over meanwhile would wait for the rest of
the run. The committer counts the outcomes it handed over (``handed``) and the loop the ones it ran
(``ran``), each counter written by one side only, so neither needs a lock: while they differ, a
dispatch run ends after the entry it is sending (once it has run ``URGENT_MIN_RUN_SECONDS``) and goes
on behind the outcome.
"""

from __future__ import annotations

#: how long a run goes on before an outcome waiting for the loop ends it: with a commit round every
#: 0.25-1 ms under a heavy publish load, runs cut at once would be one entry each
URGENT_MIN_RUN_SECONDS = 0.0001


class LoopUrgency:
    """Counts of a thread's callbacks handed to the event loop and run by it: one waits while they differ."""

    __slots__ = ("handed", "ran")

    def __init__(self) -> None:
        #: callbacks handed to the loop (written only by the handing thread, one at a time)
        self.handed = 0
        #: of those, the ones the loop has started (written only by the loop)
        self.ran = 0

    def waiting(self) -> bool:
        """Whether a callback handed over has not started yet."""
        return self.handed != self.ran


#: the urgency of a topic whose loop callbacks come from no other thread (never raised)
NEVER_URGENT = LoopUrgency()

"""A dependency-free progress display for long jobs (stderr; silent when asked).

On a terminal it redraws one line per stage (``physical  [#####.....]  120/343``); in a log or
pipe it prints each stage once when it finishes, so CI logs stay short.
"""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """Callable as ``progress(stage, done, total)``."""

    def __init__(self, enabled: bool = True, stream=None, width: int = 30):
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.stage = None
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.ended = False       # the stage's end was said (a caller may report it twice)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        finished = total > 0 and done >= total
        if stage != self.stage or (self.ended and not finished):   # a stage (again)
            self.stage, self.t0, self.ended = stage, now, False
        if finished and self.ended:
            return
        self.ended = finished
        if self.tty and (finished or now - self.last > 0.1):
            self.last = now
            frac = done / total if total else 1.0
            bar = "#" * int(frac * self.width)
            self.stream.write(f"\r{stage:<10} [{bar:<{self.width}}] {done}/{total}"
                              f" {now - self.t0:5.1f}s")
            if finished:
                self.stream.write("\n")
            self.stream.flush()
        elif not self.tty and finished:
            self.stream.write(f"{stage:<10} {total} in {now - self.t0:.1f} s\n")
            self.stream.flush()

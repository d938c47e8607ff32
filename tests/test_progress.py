"""The progress display: one line per finished stage in a log, a redrawn bar on a terminal."""
from __future__ import annotations

import io

from physmocap.progress import Progress


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_each_stage_once_when_it_ends():
    out = io.StringIO()
    p = Progress(stream=out)
    for d in (0, 50, 100):
        p("kinematic", d, 100)
    p("physical", 343, 343)
    p("physical", 343, 343)      # the solver's last block and its loop both say the end
    lines = out.getvalue().splitlines()
    assert [ln.split()[:2] for ln in lines] == [["kinematic", "100"], ["physical", "343"]]


def test_a_stage_run_again_is_said_again():
    out = io.StringIO()
    p = Progress(stream=out)
    for _ in range(2):               # one Progress over two takes
        p("read", 1, 2)
        p("read", 2, 2)
    assert [ln.split()[:2] for ln in out.getvalue().splitlines()] == [["read", "2"]] * 2


def test_a_terminal_redraws_one_line_and_ends_it_once():
    out = _Terminal()
    p = Progress(stream=out, width=10)
    p("physical", 0, 4)
    p("physical", 4, 4)
    p("physical", 4, 4)
    text = out.getvalue()
    assert text.count("\n") == 1 and text.count("\r") == 2
    assert "[##########] 4/4" in text


def test_disabled_says_nothing():
    out = io.StringIO()
    Progress(False, stream=out)("physical", 1, 1)
    assert out.getvalue() == ""

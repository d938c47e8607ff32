"""Which speeds (and turn rates) a pose database keeps, and whether a run asks for others.

Motion matching can only play what its database holds. Asked for a speed none of its clips
moves at, the controller pulls the character's root along at the asked speed while the clip's
feet keep their own pace, so feet labelled in contact slide; and a fully physical body tracking
that reference falls (``benchmarks/RESULTS.md``, "Live coupling, fully physical": on the
benchmarks' live database, which walks at 0.9-1.3 m/s, the straight joystick walk stays up at
0.7-1.3 m/s and falls at 0.5 m/s; this module's measure covers 0.8-1.45 m/s there, so it
warns at 0.7 m/s, where the reference's feet slide twice as far as at 1.1). A walk that
*passes through* a speed (a walk start) is no cover: what counts is how long one clip keeps a
speed (measured over a second), since matching plays on only what one clip holds. Turning
faster than any clip keeps spins the root under the clip's feet the same way.
"""
from __future__ import annotations

import numpy as np

from ..errors import require_numbers, require_type
from .database import PoseDatabase

__all__ = ["database_speeds", "database_turn_rates", "longest_stretch", "covered_ranges",
           "uncovered_summary", "asked_speeds", "ranges_text", "fastest_kept_turn",
           "run_turn_rates", "turn_limit", "fast_turns", "run_coverage", "COVER_S",
           "TOLERANCE"]

#: Seconds one clip must keep a speed (within ``TOLERANCE``) to cover it.
COVER_S = 1.0
#: ``(absolute m/s, relative)``: a database frame covers speed ``v`` within
#: ``max(absolute, relative * v)``.
TOLERANCE = (0.1, 0.15)


def database_speeds(db, window_s: float = 1.0) -> np.ndarray:
    """``(N,)`` m/s: each database frame's horizontal speed of the simulation bone (its world
    velocity), averaged over ``window_s`` seconds centred on the frame, within its clip (a
    step's speed swing averaged out; shorter windows at a clip's ends)."""
    require_type("database_speeds", db, PoseDatabase, "load_database(PATH)")
    s = np.linalg.norm(np.asarray(db.lvel[:, 0, :2], float), axis=-1)
    return _window_mean(s, db.range_starts, db.range_stops, db.fps, window_s)


def database_turn_rates(db, window_s: float = 1.0) -> np.ndarray:
    """``(N,)`` rad/s: each database frame's turn rate (the simulation bone's yaw rate, its
    magnitude), averaged over ``window_s`` seconds centred on the frame, within its clip."""
    require_type("database_turn_rates", db, PoseDatabase, "load_database(PATH)")
    w = np.abs(np.asarray(db.lang[:, 0, 2], float))
    return _window_mean(w, db.range_starts, db.range_stops, db.fps, window_s)


def _window_mean(x: np.ndarray, starts, stops, fps: float, window_s: float = 1.0) -> np.ndarray:
    """``x (N,)`` averaged over ``window_s`` s centred on each frame, within each of the
    ranges ``starts[k]:stops[k]`` (shorter windows at their ends)."""
    require_numbers("coverage", ("window_s", "fps"), window_s=window_s, fps=fps)
    out = np.empty(len(x))
    half = int(round(window_s * fps / 2))
    for a, b in zip(np.asarray(starts), np.asarray(stops)):
        c = np.concatenate([[0.0], np.cumsum(x[a:b])])
        i = np.arange(b - a)
        lo, hi = np.maximum(i - half, 0), np.minimum(i + half + 1, b - a)
        out[a:b] = (c[hi] - c[lo]) / (hi - lo)
    return out


def _clip_starts(db) -> np.ndarray:
    """``(N,)``: the first frame of each frame's clip."""
    starts = np.zeros(int(db.n_frames), int)
    for a, b in zip(np.asarray(db.range_starts), np.asarray(db.range_stops)):
        starts[a:b] = a
    return starts


def longest_stretch(speeds_db: np.ndarray, clip_starts: np.ndarray, fps: float, asked,
                    tolerance: tuple = TOLERANCE) -> np.ndarray:
    """Seconds ``(len(asked),)``: for each asked speed (m/s), the longest time one clip of the
    database moves within ``max(abs, rel * v)`` of it without a break (``database_speeds``,
    ``_clip_starts``). Clips only passing through a speed (walk starts, stops) add up to
    nothing here: motion matching can play on only what one clip holds."""
    require_numbers("longest_stretch", ("fps",), fps=fps)
    s = np.asarray(speeds_db, float)
    idx = np.arange(len(s))
    v = np.round(np.asarray(asked, float), 2)            # asked speeds repeat: measure each once
    uniq, back = np.unique(v, return_inverse=True)
    out = np.empty(len(uniq))
    for k, u in enumerate(uniq):
        inside = np.abs(s - u) <= max(tolerance[0], tolerance[1] * u)
        # a run starts after the last frame outside, or at its clip's first frame
        after_out = np.maximum.accumulate(np.where(inside, 0, idx + 1)) if len(s) else idx
        run = np.where(inside, idx - np.maximum(after_out, clip_starts) + 1, 0)
        out[k] = run.max() / float(fps) if len(run) else 0.0
    return out[back.reshape(-1)] if len(v) else np.zeros(0)


def covered_ranges(db, step: float = 0.05, cover_s: float = COVER_S
                   ) -> list[tuple[float, float]]:
    """The speed ranges (m/s, each ``(low, high)``) the database covers: speeds on a ``step``
    grid at which one clip moves for at least ``cover_s`` (within ``TOLERANCE``), joined."""
    return _covered_ranges(database_speeds(db), _clip_starts(db), db.fps, step, cover_s)


def _covered_ranges(speeds, starts, fps: float, step: float = 0.05, cover_s: float = COVER_S
                    ) -> list[tuple[float, float]]:
    """``covered_ranges`` of ``database_speeds`` and ``_clip_starts`` already at hand."""
    top = float(np.max(speeds)) if len(speeds) else 0.0
    top += max(TOLERANCE[0], TOLERANCE[1] * top)         # the fastest clip covers above it
    grid = np.round(np.arange(0.0, top + step, step), 2)
    ok = longest_stretch(speeds, starts, fps, grid) >= cover_s
    out, start = [], None
    for v, c in zip(grid, ok):
        if c and start is None:
            start = v
        if not c and start is not None:
            out.append((float(start), round(float(v - step), 6)))
            start = None
    if start is not None:
        out.append((float(start), float(grid[-1])))
    return out


def ranges_text(ranges) -> str:
    """Speed ranges ``[(low, high), …]`` m/s in words: ``"0.00-0.10, 0.80-1.45 m/s"``."""
    return ", ".join(f"{a:.2f}" if abs(b - a) < 0.005 else f"{a:.2f}-{b:.2f}"
                     for a, b in ranges) + " m/s" if ranges else "no speed for a second"


def uncovered_summary(db, asked: np.ndarray, dt: float, cover_s: float = COVER_S) -> dict:
    """What the report says of an input's speeds against the database: ``asked (F,)`` m/s,
    one per output frame ``dt`` s apart.

    Returns a dict: ``uncovered_s`` (how long the input asked for a speed no clip of the
    database moves at for ``cover_s``, ``longest_stretch``), ``uncovered_speed_range_m_s``
    (``[low, high]`` of those asked speeds, or ``None``), ``database_speeds_m_s``
    (``covered_ranges``), ``text`` (the same in words, ``""`` when nothing is uncovered) and
    ``warning`` (``text`` when the input asked for uncovered speeds for ``cover_s`` or longer,
    else ``None``: a moment between speeds is no fault of the database)."""
    require_numbers("uncovered_summary", ("dt",), dt=dt)
    asked = np.asarray(asked, float)
    speeds, starts = database_speeds(db), _clip_starts(db)
    bad = longest_stretch(speeds, starts, db.fps, asked) < cover_s
    ranges = _covered_ranges(speeds, starts, db.fps, cover_s=cover_s)
    out = {"uncovered_s": round(float(bad.sum() * dt), 3),
           "uncovered_speed_range_m_s": [round(float(asked[bad].min()), 2),
                                         round(float(asked[bad].max()), 2)] if bad.any()
           else None,
           "database_speeds_m_s": [[round(a, 2), round(b, 2)] for a, b in ranges]}
    if bad.any():
        lo, hi = out["uncovered_speed_range_m_s"]
        asked_text = ranges_text([(lo, hi)])
        # asked to stand: a database of walks holds no standing (``mm build --stand``)
        stand = " (to stand: a standing clip, mm build --stand)" if lo < 0.05 else ""
        out["text"] = (f"for {bad.sum() * dt:.1f} s the input asks {asked_text}, a speed no "
                       f"clip of the database keeps for {cover_s:g} s (its clips keep "
                       f"{ranges_text(ranges)}): expect feet sliding, and a fully physical "
                       f"body may fall; add clips at that speed{stand}")
    else:
        out["text"] = ""
    out["warning"] = out["text"] if out["uncovered_s"] >= cover_s else None
    return out


def asked_speeds(db, desired_vel, dt: float) -> dict:
    """A report's ``asked_speeds``: ``uncovered_summary`` of the horizontal speeds of a run's
    desired velocities ``(F, 3)`` m/s (a controller record's ``desired_vel``), without its
    ``text`` (``warning`` says it when it matters)."""
    speed = np.linalg.norm(np.asarray(desired_vel, float).reshape(-1, 3)[:, :2], axis=-1)
    return {k: v for k, v in uncovered_summary(db, speed, dt).items() if k != "text"}


def fastest_kept_turn(db, cover_s: float = COVER_S) -> float:
    """rad/s: the fastest turn rate one clip of the database keeps up for ``cover_s`` (the
    largest, over clips, of the slowest ``database_turn_rates`` in any ``cover_s`` of it)."""
    rates = database_turn_rates(db)
    n = max(int(round(cover_s * db.fps)), 1)
    best = 0.0
    for a, b in zip(np.asarray(db.range_starts), np.asarray(db.range_stops)):
        if b - a >= n:
            windows = np.lib.stride_tricks.sliding_window_view(rates[a:b], n)
            best = max(best, float(windows.min(axis=1).max()))
    return best


def run_turn_rates(root_rot, dt: float) -> np.ndarray:
    """``(F,)`` rad/s: how fast a run's root (``root_rot (F, 4)``, frames ``dt`` s apart)
    turns, averaged over a second as ``database_turn_rates``."""
    from .trajectory import yaw_of
    require_numbers("run_turn_rates", ("dt",), dt=dt)
    q = np.asarray(root_rot, float).reshape(-1, 4)
    if len(q) < 2:
        return np.zeros(len(q))
    rate = np.abs(np.gradient(np.unwrap(yaw_of(q)))) / dt
    return _window_mean(rate, [0], [len(rate)], 1.0 / dt)


def turn_limit(keeps: float) -> float:
    """rad/s: the turn rate past which a run turns faster than the database's fastest kept
    turn ``keeps`` (``fastest_kept_turn``), beyond ``TOLERANCE``."""
    return keeps + max(TOLERANCE[0], TOLERANCE[1] * keeps)


def fast_turns(db, root_rot, dt: float, cover_s: float = COVER_S) -> dict:
    """A report's ``turns``: how long the character's root (``root_rot (F, 4)``, one per
    frame ``dt`` s apart: a controller record's) turned faster, averaged over a second, than
    any clip keeps for ``cover_s`` (``fastest_kept_turn``, beyond ``TOLERANCE``).

    Only faster: a slower turn than the clips' (a wide curve) the controller's facing
    adjustment follows without sliding feet, but a faster one spins the root under the clip's
    feet (the sharp turns' reversals: ``benchmarks/RESULTS.md``, "Speeds the database keeps").
    Returns ``too_fast_s``, ``max_rad_s`` (the run's fastest 1-s turn), ``database_keeps_rad_s``
    and ``warning`` (a line when ``too_fast_s >= cover_s``, else ``None``)."""
    rate = run_turn_rates(root_rot, dt)
    keeps = fastest_kept_turn(db, cover_s=cover_s)
    fast = rate > turn_limit(keeps)
    out = {"too_fast_s": round(float(fast.sum() * dt), 3),
           "max_rad_s": round(float(rate.max()), 2) if len(rate) else 0.0,
           "database_keeps_rad_s": round(keeps, 2), "warning": None}
    if out["too_fast_s"] >= cover_s:
        out["warning"] = (f"for {out['too_fast_s']:.1f} s the character turned faster than any "
                          f"clip of the database turns for {cover_s:g} s (up to "
                          f"{out['max_rad_s']:.2f} rad/s; its clips keep at most {keeps:.2f}): "
                          "its feet slide there, and a fully physical body may fall; add clips "
                          "that turn that fast, or ask for wider turns")
    return out


def run_coverage(db, record, dt: float, frames: int | None = None) -> dict:
    """A run's ``asked_speeds`` and ``turns`` (``asked_speeds``, ``fast_turns``) from its
    controller record (``desired_vel``, ``root_rot``; ``frames``: its last ones only, the
    frames a live loop played), for the reports of ``mm run``, ``play`` and ``avatar``."""
    vel, rot = np.asarray(record.desired_vel), np.asarray(record.root_rot)
    if frames is not None:
        vel, rot = vel[-frames:], rot[-frames:]
    return {"asked_speeds": asked_speeds(db, vel, dt), "turns": fast_turns(db, rot, dt)}

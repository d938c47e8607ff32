"""Predictive balance: a fully physical body that chooses its balance gains by simulating ahead.

``STEPPING`` reacts to what the body does now; on the live sharp turns it falls in the first
180° reversal, whatever its gains (``benchmarks/RESULTS.md``: about 40 changes and a search of
about 980 gain sets). Some gain sets carry the body through a reversal turning one way and drop
it elsewhere. Here the body switches between gain sets as it walks, choosing each by trying it:

- every ``every_s`` s the live loop's whole state is saved (PyBullet ``saveState`` and a copy
  of the Python state: the matching controller, the retargeting, the tracker and its balance
  controller);
- each candidate gain set (``STEPPING`` or the run's own gains, three sets from that search,
  and ``random_sets`` drawn around the first) is played ``horizon_s`` s ahead from it; the one
  whose head stays above ``head_m`` longest, then whose root ends nearest its reference's
  (horizontally), is committed for the next ``every_s`` s;
- where every candidate falls within ``every_s``, or the committed one falls inside it, the
  point is a dead end: the search goes back to the point before and commits its next
  candidate, at most ``branch`` of them per point (depth first, as SAMCON's samples do in
  Liu et al., "Sampling-based contact-rich motion control", 2010). The first point has none
  before it: where its candidates run out, it draws ``random_sets`` fresh ones (measured on
  the three-point avatar's held-out clips, whose bodies start moving: ``benchmarks/
  RESULTS.md``, "Three-point avatar (status)").

The output is the chain of committed steps: each ``every_s`` s is simulated from the exact
positions and velocities the step before ended with (PyBullet ``restoreState``), and nothing
pushes the body; the search only chooses the gains its own balance controller uses. It is
not one uninterrupted simulation, though: the solver's warm start begins afresh at each
decision, and a found plan replayed from the start without saved states drifts from the
chain (measured: bit for bit for 0.8 s, 3 mm apart at 1 s, 1 m at 8 s) and may fall
(``benchmarks/RESULTS.md``), so the chain itself is what is reported and measured.
Limits, all in the report:

- it is not real time: the lookahead simulates ``horizon_s / every_s`` times each candidate
  (tens of frames per played frame, ``simulated_per_played``);
- the lookahead plays the input ahead as its file has it. A path is known in advance; a live
  joystick's or headset's future is not, so this is an offline mode for input scenes;
- past its ``budget`` (or, without random sets, with no way on at all) the search stops and
  the rest of the run is simulated with the last committed gains, falls and all
  (``complete`` false).

A fixed motion (a clip, a three-point avatar's motion with its hand targets) is searched the
same way (``track_predictive``): the player is a ``track.MotionPlayback`` instead of the live
loop, and the look-ahead plays the motion's own next frames. Its first decision is at frame 2,
not 1: its frame 0 only places the body, and a world placed but never stepped does not play the
same twice from a restored state, so the candidates' order would change their look-aheads.

**Workers.** With ``PredictSettings.workers`` > 1 the candidates of a decision are played by
forks of this process, each from the decision's state as the checkpoint stores it (below): the
same plan and run, bit for bit, sooner (``benchmarks/RESULTS.md``, "Coupled loop speed").

**Resume.** With a ``checkpoint`` (``solver.checkpoint.Checkpoint``) the search's state is
stored at every decision: PyBullet's world (``saveBullet``) and the Python state, pickled (what
every copy shares is stored by reference: ``_shared``). Run again with the same job, the search
goes on from the last decision stored, exactly as it would have (a world restored from the file
steps on as one restored from memory), except that it cannot go back before that decision
(``Plan.resumed_at``). The state is a pickle written by this program: load only checkpoints
you wrote.
"""
from __future__ import annotations

import copy
import io
import os
import pickle
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError, SettingsError, bad_number, require_numbers
from ..scene import BodyTemplate, Environment, load_body
from .balance import BalanceSettings
from .track import TrackingSettings

# Gain sets from the nineteenth session's search (``RESULTS.md``, "Live coupling, fully
# physical"): changes to the run's own gains, and the motors' force limit (None: the run's).
# ``weak_legs`` walks the sharp turns through two reversals turning one way; the other two
# were the best of the search's second stage.
SEARCHED_SETS = {
    "weak_legs": (dict(ankle_lever=0.050, capture_width=0.044, capture_forward=0.021,
                       capture_blend=0.153, ik_kz=0.34, ik_max=0.027, ik_kp=1.16, ik_kd=0.113,
                       com_lateral=0.127, plant_speed=1.44, stance_yaw=0.58, clearance=0.042,
                       motor_kp=0.231), 189.0),
    "search_a": (dict(motor_kp=0.252, capture_width=0.067, capture_blend=0.273, ik_kp=1.105,
                      ik_kd=0.173, ik_kz=0.161, clearance=0.029, recover_dist=0.076), None),
    "search_b": (dict(motor_kp=0.272, capture_forward=-0.051, contact_height=0.0165,
                      ankle_lever=0.095, ik_kp=0.724, ik_kd=0.094), None),
}

# Random sets: each gain changed with probability 0.4, by a log-normal factor of this spread
# (``capture_forward``: plus a normal step of this many metres); the search's scales.
_SPREAD = {"motor_kp": 0.15, "capture_width": 0.5, "capture_blend": 0.5, "ik_kp": 0.6,
           "ik_kd": 0.6, "ik_kz": 0.6, "ik_max": 0.5, "com_lateral": 0.6, "stance_yaw": 0.6,
           "clearance": 0.4, "plant_speed": 0.5, "swing_wait": 0.4, "recover_dist": 0.4,
           "ankle_lever": 0.3, "recover_blend": 0.5}
_STEP = {"capture_forward": 0.04}


@dataclass(frozen=True)
class PredictSettings:
    """How the predictive search looks ahead.

    Args:
        every_s: s between decisions (a gain set is committed for this long).
        horizon_s: s each candidate is simulated ahead (>= ``every_s``).
        random_sets: random candidate sets per decision, besides the run's gains and
            ``SEARCHED_SETS``.
        seed: of the random sets (the same seed, the same plan).
        budget: the most frames simulated per frame of the run; past it the search stops and
            the rest of the run is played with the last gains (``complete`` false).
        head_m: m, a fall: the head below this (as ``physical_diagnosis.py``'s "down").
        branch: the most candidates committed in turn at one decision, best first, before
            the search goes back further (``None``: every candidate still up after
            ``every_s``). Fewer let the search go back further for the same budget (measured
            against all eight: ``benchmarks/RESULTS.md``, "Live coupling, fully physical").
        workers: processes the candidates' look-aheads are shared out to (1: played here, one
            after the other). Each worker is a fork of this process, and plays a candidate from
            the decision's state as the checkpoint stores it: the same plan and run, bit for
            bit, sooner. Needs the "fork" start method (Linux).
    """

    every_s: float = 0.25
    horizon_s: float = 1.0
    random_sets: int = 4
    seed: int = 0
    budget: float = 100.0
    head_m: float = 1.0
    branch: int | None = 3
    workers: int = 1

    def __post_init__(self):
        for name in ("every_s", "horizon_s", "budget", "head_m"):
            v = getattr(self, name)
            if bad_number(v, positive=True):
                raise SettingsError(f"PredictSettings: {name} must be a finite number > 0, "
                                    f"got {v!r}")
        if self.horizon_s < self.every_s:
            raise SettingsError(f"PredictSettings: horizon_s ({self.horizon_s}) must be at "
                                f"least every_s ({self.every_s})")
        for name in ("random_sets", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise SettingsError(f"PredictSettings: {name} must be a whole number >= 0, "
                                    f"got {v!r}")
        w = self.workers
        if isinstance(w, bool) or not isinstance(w, (int, np.integer)) or w < 1:
            raise SettingsError(f"PredictSettings: workers must be a whole number >= 1, "
                                f"got {w!r}")
        b = self.branch
        if b is not None and (isinstance(b, bool) or not isinstance(b, (int, np.integer))
                              or b < 1):
            raise SettingsError(f"PredictSettings: branch must be None or a whole number >= 1, "
                                f"got {b!r}")


@dataclass
class Plan:
    """A searched plan: which gain set from which frame, and what the search cost.

    ``switches``: ``(frame, name)`` in frame order; ``sets``: name -> ``(BalanceSettings,
    joint_max_torque N·m or None)``; ``frames``: frames the search decided (the run's, when
    ``complete``; after them the last set plays on); ``played``: the run's frames;
    ``simulated_frames``: every frame simulated, the run's own included; ``backtracks``: dead
    ends gone back from; ``seconds``: the whole run's wall time (resumed: with the stopped
    run's, up to the decision stored); ``budget``: the search's,
    frames simulated per frame played (``PredictSettings.budget``); ``resumed_at``: the
    decision's frame a stopped search went on from (None: not resumed)."""

    switches: list
    sets: dict
    frames: int
    played: int
    complete: bool
    simulated_frames: int
    backtracks: int
    seconds: float
    budget: float
    resumed_at: int | None = None

    def report(self) -> dict:
        kinds = {}
        for _, name in self.switches:
            k = name if name in SEARCHED_SETS or name == "own" else "random"
            kinds[k] = kinds.get(k, 0) + 1
        return dict(complete=self.complete, frames_planned=self.frames, budget=self.budget,
                    simulated_per_played=round(self.simulated_frames / self.played, 1),
                    backtracks=self.backtracks, search_seconds=round(self.seconds, 1),
                    frames_per_second=round(self.played / max(self.seconds, 1e-9), 2),
                    decisions=len(self.switches), sets_used=kinds,
                    resumed_at_frame=self.resumed_at)


def _random_set(rng: np.random.Generator, base: BalanceSettings):
    """A random candidate: ``(BalanceSettings, joint_max_torque N·m or None)`` around ``base``
    at the gain search's scales."""
    changes = {}
    for k, sc in _SPREAD.items():
        if rng.random() < 0.4:
            changes[k] = float(getattr(base, k) * np.exp(rng.normal(0.0, sc)))
    for k, sc in _STEP.items():
        if rng.random() < 0.4:
            changes[k] = float(getattr(base, k) + rng.normal(0.0, sc))
    # half of them with weaker legs (the searched ``weak_legs`` carry 189 N·m)
    jm = None if rng.random() < 0.5 else float(600.0 * np.exp(rng.normal(-0.6, 0.4)))
    return replace(base, **changes), jm


# --- the live loop's state, saved and restored ---------------------------------------------

def _shared(live, d: dict) -> dict:
    """``deepcopy`` memo of what every copy of a player's ``__dict__`` ``d`` shares (a
    ``LivePlayback`` or a ``track.MotionPlayback``): PyBullet, the bodies and the character
    (its Python side is fixed once built; its world is saved by PyBullet), ``live`` itself (a
    ``speed_margin`` input source points back at it); a live loop's read-only database,
    features, search index and the controller's record (appended to; ``_restore`` cuts it
    back); a fixed motion's reference and hand targets; the live reference computed ahead
    (``LivePlayback.precompute``)."""
    import pybullet
    tr = d["tracker"]
    # in this order: a checkpoint refers to them by their place in it
    if "ctrl" in d:
        ctrl = d["ctrl"]
        keep = [pybullet, ctrl.db, ctrl.features, ctrl.index, ctrl.valid, ctrl.record]
    else:
        keep = [pybullet, d["ref"], d["hand_targets"]]
    keep += [d["body"], tr.body, tr.char, live, d.get("_cache")]
    return {id(o): o for o in keep if o is not None}


def _log(live):
    """The controller's record of a live loop (appended to every frame), or None."""
    ctrl = live.__dict__.get("ctrl")
    return None if ctrl is None else ctrl.record


def _snapshot(live) -> tuple:
    ch = live.tracker.char
    sid = ch.p.saveState(physicsClientId=ch.client)
    rec = _log(live)
    lens = {} if rec is None else {k: len(v) for k, v in vars(rec).items()
                                   if isinstance(v, list)}
    return (sid, copy.deepcopy(live.__dict__, _shared(live, live.__dict__)), lens,
            None if rec is None else rec.transitions)


def _restore(live, snap) -> None:
    sid, state, lens, transitions = snap
    ch = live.tracker.char
    ch.p.restoreState(sid, physicsClientId=ch.client)
    live.__dict__.clear()
    # a copy again: the snapshot stays usable for the next candidate
    live.__dict__.update(copy.deepcopy(state, _shared(live, state)))
    rec = _log(live)
    if rec is not None:
        for k, n in lens.items():
            del getattr(rec, k)[n:]
        rec.transitions = transitions


def _release(live, snap) -> None:
    ch = live.tracker.char
    ch.p.removeState(snap[0], physicsClientId=ch.client)


def _dump_state(live, search: dict | None = None) -> tuple[bytes, bytes]:
    """``(world, state)`` bytes of a player as it is now: PyBullet's world (``saveBullet``)
    and, pickled, its Python state (the shared objects by reference: their place in
    ``_shared``), the controller's record (by value) and ``search`` (the loop's variables)."""
    ch = live.tracker.char
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "world.bullet")
        ch.p.saveBullet(f, physicsClientId=ch.client)
        world = Path(f).read_bytes()
    where = {id(o): k for k, o in enumerate(_shared(live, live.__dict__).values())}

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return where.get(id(obj))

    buf = io.BytesIO()
    Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(
        dict(live=live.__dict__, record=None if _log(live) is None else vars(_log(live)),
             search=search))
    return world, buf.getvalue()


def _load_state(live, world: bytes, state: bytes) -> dict | None:
    """``_dump_state``'s bytes put back into ``live`` (a player built as the one dumped, or
    that one); its ``search``. Raises what unpickling or PyBullet raise (``live`` untouched)."""
    shared = list(_shared(live, live.__dict__).values())

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return shared[pid]

    ch = live.tracker.char
    got = Unpickler(io.BytesIO(state)).load()
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "world.bullet")
        Path(f).write_bytes(world)
        ch.p.restoreState(fileName=f, physicsClientId=ch.client)
    live.__dict__.clear()
    live.__dict__.update(got["live"])
    if got["record"] is not None:
        vars(_log(live)).clear()
        vars(_log(live)).update(got["record"])
    return got["search"]


def _save_search(checkpoint, live, search: dict) -> None:
    """Store the search at a decision point in ``checkpoint`` (``_dump_state``)."""
    world, state = _dump_state(live, search)
    checkpoint.save("predictive", world=np.frombuffer(world, np.uint8),
                    state=np.frombuffer(state, np.uint8))


def _load_search(checkpoint, live) -> dict | None:
    """The search stored in ``checkpoint`` put back into ``live`` (world, Python state,
    record); its ``search`` dict. None (``live`` untouched) when there is none, or it cannot be
    read: the search starts afresh."""
    z = checkpoint.load("predictive")
    if z is None:
        return None
    try:
        return _load_state(live, z["world"].tobytes(), z["state"].tobytes())
    except Exception:          # damaged, or not this program's: search afresh
        checkpoint.resumed.remove("predictive")
        return None


def _head_z(live, head: int) -> float:
    ch = live.tracker.char
    return ch.p.getLinkState(ch.body, head - 1, physicsClientId=ch.client)[4][2]


def _ahead(live, frames: int, head: int, head_m: float, put=None) -> tuple:
    """Step ``live`` up to ``frames`` frames, stopping where its head goes below ``head_m``
    (``head`` None: never), each frame's ``step`` output handed to ``put(f, out)``: ``(frames
    to the head's going down or None, frames stepped, the last frame's output)``."""
    out = None
    for f in range(frames):
        out = live.step()
        if put is not None:
            put(f, out)
        if head is not None and _head_z(live, head) < head_m:
            return f + 1, f + 1, out
    return None, frames, out


def _check(settings: TrackingSettings, environment: Environment | None) -> None:
    if not settings.balance:
        raise SettingsError("predictive balance needs a balance controller (balance=True, "
                            "e.g. --balance stepping's gains)")
    if environment is not None and environment.holds:
        raise SettingsError("predictive balance: scenes with hand holds are not supported "
                            "(a hold is a PyBullet constraint, which a saved state does not "
                            "undo)")


def run_predictive(controller, duration: float, body: BodyTemplate | None = None,
                   settings: TrackingSettings = TrackingSettings(balance=True),
                   predict: PredictSettings = PredictSettings(),
                   environment: Environment | None = None, progress=None, checkpoint=None):
    """The live loop, fully physical, for ``duration`` s with its balance gains chosen by
    simulating ahead (module docstring). Returns ``(LiveResult, Plan)``: the committed chain,
    measured as ``run_live``'s run is, and what the search chose and cost.

    ``controller``: a ``matching.Controller`` at the start of its input scene (the search
    copies it at every decision: afterwards the object passed in is not the one that played
    the run, though its ``record`` is). ``settings``: fully physical tracking with a balance
    controller (its gains are the set named ``own``). ``progress(stage, done, total)``: the
    frames the search has committed. ``checkpoint``: a ``solver.checkpoint.Checkpoint`` whose
    key names this job (the caller's: database, input, settings, duration): the search is
    stored there at every decision and goes on from the last one stored (module docstring).
    """
    from .live import LivePlayback, _Frames
    require_numbers("run_predictive", ("duration",), duration=duration)         # s
    _check(settings, environment)
    body = body or load_body()
    n = max(2, int(round(duration / controller.dt)))
    rec = _Frames(n, len(body), len(environment.holds) if environment else 0)
    with LivePlayback(controller, body, "physical", settings, environment=environment) as live:
        # the reference does not depend on the body: each frame computed once, not once per
        # look-ahead (before a stopped search is loaded: it refers to these poses)
        live.precompute(n + 1)
        rec, plan = _search(live, rec, n, body, settings, predict, progress, checkpoint)
        falls = list(live.tracker.falls)
        ratio, played = live.retarget.ratio, live.ctrl
    return rec.measure(played, body, "physical", falls, ratio, environment), plan


def track_predictive(motion, body: BodyTemplate | None = None,
                     settings: TrackingSettings = TrackingSettings(balance=True),
                     predict: PredictSettings = PredictSettings(),
                     environment: Environment | None = None, progress=None, checkpoint=None,
                     hand_targets: np.ndarray | None = None):
    """``track_any`` of a fixed ``motion``, fully physical, with the balance gains chosen by
    simulating ahead as ``run_predictive`` chooses them (module docstring): a clip, a looped
    gait cycle, or a three-point avatar's motion with its ``hand_targets`` (``avatar
    --physics --predict``). Returns ``(TrackResult, Plan)``; the other arguments as
    ``run_predictive``'s (``checkpoint``'s key names the motion, settings and targets)."""
    from .live import _Frames
    from .track import MotionPlayback, on_body, prepare_reference
    _check(settings, environment)
    body = body or load_body()
    body, ref, hand_targets = prepare_reference(on_body(motion, body), body, "physical",
                                                settings, hand_targets=hand_targets)
    n = ref.n_frames
    rec = _Frames(n, len(body), len(environment.holds) if environment else 0)
    with MotionPlayback(ref, body, "physical", settings, environment, hand_targets) as live:
        rec, plan = _search(live, rec, n, body, settings, predict, progress, checkpoint)
        falls = list(live.tracker.falls)
    return rec.result(ref, body, "physical", falls, "physics playback (physical, predictive)",
                      environment, hand_targets), plan


# --- look-aheads in worker processes ---------------------------------------------------------

# the player a forked worker plays candidates on: its own copy of the search's, world and all
# (PyBullet's DIRECT world lives in this process's memory)
_WORKER_PLAYER = None


@contextmanager
def _pool(live, workers: int):
    """A pool of ``workers`` forks of this process, each holding a copy of the player ``live``
    (``_WORKER_PLAYER``, set while the pool is open); None for one worker."""
    if workers <= 1:
        yield None
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    if "fork" not in multiprocessing.get_all_start_methods():
        raise SettingsError("PredictSettings: workers > 1 needs the 'fork' start method "
                            "(Linux); use workers=1 here")
    global _WORKER_PLAYER
    _WORKER_PLAYER = live
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"))
    try:
        yield pool
    finally:
        pool.shutdown(cancel_futures=True)
        _WORKER_PLAYER = None


def _try(live, s0, gains, jm, ahead: int, head: int, head_m: float) -> tuple:
    """One candidate: ``live`` restored to the snapshot ``s0``, given the gain set ``(gains,
    joint_max_torque)`` and played up to ``ahead`` frames: ``(frames to the head's going down
    or None, the roots' horizontal distance at the last frame played m, frames simulated)``."""
    _restore(live, s0)
    live.tracker.set_balance_gains(gains, jm)
    fall, frames, ((rr, _), (sr, _), _) = _ahead(live, ahead, head, head_m)
    return fall, float(np.hypot(*(rr[:2] - sr[:2]))), frames


def _lookahead(task) -> list:
    """In a worker: each candidate ``(k, name, gains, joint_max_torque)`` of ``task`` tried
    (``_try``) from the decision's state (``_dump_state``'s bytes): ``[(k, name, frames to the
    head's going down or None, root lag m, frames simulated)]``."""
    world, state, cands, ahead, head, head_m = task
    live = _WORKER_PLAYER
    # loaded once, then restored from memory for each candidate, as a resumed search does
    _load_state(live, world, state)
    s0 = _snapshot(live)
    out = [(k, name, *_try(live, s0, gains, jm, ahead, head, head_m))
           for k, name, gains, jm in cands]
    _release(live, s0)
    return out


def _mapped(pool, tasks: list) -> list:
    """``_lookahead`` of each task in ``pool``'s workers; a worker that died (killed, out of
    memory) is a ``PhysmocapError``, not the pool's own exception."""
    from concurrent.futures.process import BrokenProcessPool
    try:
        return list(pool.map(_lookahead, tasks))
    except BrokenProcessPool as e:
        raise PhysmocapError("predictive search: a worker process died (killed, or out of "
                             "memory?); run again with fewer workers (a search with a "
                             "checkpoint goes on from its last decision)") from e


def _search(live, rec, n: int, body: BodyTemplate, settings: TrackingSettings,
            predict: PredictSettings, progress, checkpoint) -> tuple:
    """The search (module docstring) over ``n`` frames of an open player ``live`` (a
    ``LivePlayback`` or a ``track.MotionPlayback``, not yet stepped), recording each frame in
    ``rec`` (``live._Frames``). Returns ``(rec, Plan)``: a resumed search's record is the one
    stored; ``live`` is left at the committed chain's end."""
    with _pool(live, predict.workers) as pool:
        return _search_in(live, rec, n, body, settings, predict, progress, checkpoint, pool)


def _search_in(live, rec, n: int, body: BodyTemplate, settings: TrackingSettings,
               predict: PredictSettings, progress, checkpoint, pool) -> tuple:
    """``_search``, its look-aheads played here (``pool`` None) or by ``pool``'s workers."""
    base = settings.balance_gains
    sets = {"own": (base, None)}
    for name, (changes, jm) in SEARCHED_SETS.items():
        sets[name] = (replace(base, **changes), jm)
    rng = np.random.default_rng(predict.seed)
    head = body.index(settings.head)
    t0 = time.perf_counter()
    n_every = max(1, int(round(predict.every_s / live.dt)))
    n_ahead = max(n_every, int(round(predict.horizon_s / live.dt)))
    count = dict(simulated=0, backtracks=0)
    # decision points: [frame, snapshot, candidates still open (best first), the best one,
    # the one committed]
    stack = []

    def play(start: int, frames: int, stop_on_fall: bool = True) -> int | None:
        """Simulate and record frames ``start ..`` (the committed steps): the frames to the
        head's going down (``stop_on_fall``: stopped there), or None."""
        fall, done, _ = _ahead(live, frames, head if stop_on_fall else None, predict.head_m,
                               lambda f, out: rec.put(start + f, out))
        count["simulated"] += done
        return fall

    def candidates(i: int, s0, names: list, tag: int = 0) -> tuple:
        """Each of ``names`` and ``predict.random_sets`` new random sets played ahead from
        the snapshot ``s0`` at frame ``i``: ``(the ones still up after every_s s, best first,
        at most branch of them; the best of all)``. ``tag``: numbers the random sets' names
        on from it (a point's second draw)."""
        names = list(names)
        for r in range(predict.random_sets):
            names.append(f"random_{i}_{tag + r}")
            sets[names[-1]] = _random_set(rng, base)
        ahead = min(n_ahead, n - i)
        # tried here, or by the workers, each their share from the decision's state (a
        # look-ahead's frames are not recorded: the committed steps write every frame the run
        # keeps)
        if pool is None:
            tried = [(k, name, *_try(live, s0, *sets[name], ahead, head, predict.head_m))
                     for k, name in enumerate(names)]
        else:
            _restore(live, s0)
            world, state = _dump_state(live)
            w = predict.workers
            tasks = [(world, state, [(k, name, *sets[name]) for k, name in enumerate(names)
                                     if k % w == j], ahead, head, predict.head_m)
                     for j in range(min(w, len(names)))]
            tried = [c for part in _mapped(pool, tasks) for c in part]
        count["simulated"] += sum(frames for *_, frames in tried)
        # a later fall first, then the body nearer its reference (a body that steps in place
        # stays up too); ties: the earlier candidate
        scored = sorted(((np.inf if fall is None else fall, -lag, -k, name)
                         for k, name, fall, lag, _ in tried), reverse=True)
        step = min(n_every, n - i)
        return [c[3] for c in scored if c[0] > step][:predict.branch], scored[0][3]

    def commit(node, name: str) -> None:
        _restore(live, node[1])
        live.tracker.set_balance_gains(*sets[name])
        node[4] = name

    # the first frames place the body and step its world once, with the run's own gains: a
    # world restored to before the placement is not the fresh one (measured: 3 mm apart in
    # 0.25 s), and a placed world never stepped does not play the same twice from a restored
    # state (a candidate played again after another: up to 1.8 cm apart in 15 frames); a
    # stepped one is restored exactly, whatever was played from it before
    first = 1 + live.unstepped_frames
    play(0, first, stop_on_fall=False)
    i, complete, done, resumed = first, True, [], None
    saved = None if checkpoint is None else _load_search(checkpoint, live)
    if saved is not None:
        # the loop's variables as they were at the stored decision (``play`` and
        # ``commit`` read them when called)
        i, done, count, sets, rng = (saved[k] for k in ("i", "done", "count", "sets",
                                                         "rng"))
        rec, resumed = saved["rec"], saved["i"]
        t0 = time.perf_counter() - saved["seconds"]
    while i < n:
        s0 = _snapshot(live)
        if checkpoint is not None:
            _save_search(checkpoint, live, dict(
                i=i, done=done + [(node[0], node[4]) for node in stack], count=count,
                sets=sets, rng=rng, rec=rec, seconds=time.perf_counter() - t0))
        up, best = candidates(i, s0, list(sets)[:1 + len(SEARCHED_SETS)])
        stack.append([i, s0, up, best, None])
        while True:
            while len(stack) > 1 and not stack[-1][2]:   # dead ends: back to the one before
                _release(live, stack.pop()[1])
                count["backtracks"] += 1
            node = stack[-1]
            while (not node[2] and predict.random_sets
                   and count["simulated"] <= predict.budget * n):
                # no way on from the first point, and budget left: fresh random sets there
                # (``candidates``' own random sets are named by their point, so these are
                # numbered on)
                node[2], _ = candidates(node[0], node[1], [], len(sets))
            if not node[2] or count["simulated"] > predict.budget * n:
                # no way on from the first point, or no budget left: the rest of the run
                # with the best choice here, as it comes
                commit(node, node[2][0] if node[2] else node[3])
                play(node[0], n - node[0], stop_on_fall=False)
                i, complete = n, False
                break
            commit(node, node[2].pop(0))
            step = min(n_every, n - node[0])
            if play(node[0], step) is None:
                i = node[0] + step
                break
            # down inside the committed step though not in its rollout: a dead end too
        if progress is not None:
            progress("predictive search", i, n)
    for node in stack:
        _release(live, node[1])
    switches = done + [(node[0], node[4]) for node in stack]
    used = {name for _, name in switches}
    plan = Plan(switches, {k: v for k, v in sets.items() if k in used},
                n if complete else stack[-1][0], n, complete, count["simulated"],
                count["backtracks"], time.perf_counter() - t0, predict.budget, resumed)
    return rec, plan

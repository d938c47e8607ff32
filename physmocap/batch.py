"""Capture libraries: solve every take under a folder, in parallel, resumably.

``run_batch`` finds every ``.c3d`` under an input folder (recursively), pairs motion trials with
their static trials, solves each take with ``solver.pipeline.solve_capture`` (locally in worker
processes, or on a Dask cluster) and writes per take, mirroring the input tree under the output
folder::

    OUT/<take>.bvh            solved motion
    OUT/<take>.report.json    the solve's report (as ``physmocap solve --report``)
    OUT/<take>.clean.c3d      gap-filled markers + joint centres (only with ``clean_c3d``)
    OUT/<take>.done.json      written last: input fingerprints, settings, output hashes
    OUT/summary.json, OUT/summary.csv

**Static trials (naming rule).** A file name is cut into words at every non-alphanumeric
character and between letters and digits (``PiG_Calibration-FlatFoot-Full`` -> pig calibration
flatfoot full). A file with the word ``static``, ``calibration``, ``calib`` or ``cal`` is a static
trial: it is not solved as a take. A motion trial uses the static trial *in the same folder* whose
words, without those static words and without ``motion``/``dynamic``/``trial``, are the same as
its own (``PiG_Motion-FlatFoot-Full`` <- ``PiG_Calibration-FlatFoot-Full``); failing that, the
folder's only static trial if it has exactly one; otherwise none (the take calibrates on itself).

**Manifest.** A file ``physmocap_batch.toml`` in the input folder (or given explicitly) overrides
the rule; paths are relative to the input folder::

    exclude = ["odd/*.c3d"]                  # glob patterns of files to leave out
    [static]                                 # motion trial = its static trial ("" = none)
    "s1/walk_fast.c3d" = "s1/tpose.c3d"

**Resume.** A take is skipped when its done-stamp exists, was made by the same physmocap version
and solver revision (``solver.pipeline.SOLVER_REVISION``) with the same settings and scene files
(the marker sets and body they name, by contents), its input (and static) files are unchanged
(size and mtime, else SHA-256) and its outputs still have the recorded SHA-256. Every output
is written atomically and the stamp last, so a run killed at any moment loses no finished take.
A take that fails on bad input (``PhysmocapError``) gets a ``.failed.json`` stamp and is not
retried until its input or the settings change (``force`` retries everything); any other
failure (a crash, a lost worker) is not stamped and is retried by the next run.
"""
from __future__ import annotations

import contextlib
import csv
import fnmatch
import hashlib
import io
import json
import logging
import os
import re
import shutil
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import PhysmocapError, raise_terminated

__all__ = ["Take", "BatchSettings", "BatchSummary", "discover", "solve_take", "check_done",
           "run_batch", "format_summary", "MANIFEST", "STATIC_WORDS"]

log = logging.getLogger("physmocap.batch")

MANIFEST = "physmocap_batch.toml"
STATIC_WORDS = frozenset({"static", "calibration", "calib", "cal"})
TRIAL_WORDS = frozenset({"motion", "dynamic", "trial"})
STAMP_FORMAT = 1
SCHEDULER_TIMEOUT = "10s"
CSV_COLUMNS = ("take", "status", "frames", "fps", "marker_rms_mm", "marker_rms_all_mm",
               "foot_skate_mm", "seconds", "static", "reason")


@dataclass(frozen=True)
class Take:
    """One motion trial to solve: ``name`` is its path relative to the input folder without the
    suffix (POSIX separators; the outputs' stem), ``capture``/``static`` absolute file paths."""

    name: str
    capture: str
    static: str | None = None


@dataclass(frozen=True)
class BatchSettings:
    """Solver settings shared by every take (part of each done-stamp)."""

    markerset: str = "auto"
    body: str = "humanoid"
    up: str | None = None
    clean_c3d: bool = False

    def key(self) -> dict:
        """What a done-stamp must match. A marker set or body counts by its contents, a shipped
        name by the file it names (``auto``: every shipped marker set), so new scene data
        solves again; so does a take stamped by an older ``SOLVER_REVISION`` (a change to the
        solver within one physmocap version). Other code changes do not: use ``force``."""
        from . import __version__
        from .scene import _resolve, _shipped
        from .solver.pipeline import SOLVER_REVISION
        key = {**asdict(self), "physmocap": __version__, "solver_revision": SOLVER_REVISION,
               "stamp_format": STAMP_FORMAT}
        for name, kind in (("markerset", "markersets"), ("body", "bodies")):
            value = getattr(self, name)
            if not value:
                continue
            if value == "auto" and name == "markerset":
                files = [_shipped(kind)[n] for n in sorted(_shipped(kind))]
            else:
                files = [_resolve(value, kind, name.replace("markerset", "marker set"))]
            key[name + "_sha256"] = ([_sha256(f) for f in files] if len(files) > 1
                                     else _sha256(files[0]))
        return key


@dataclass
class BatchSummary:
    """What a batch did: one row per take (``status`` solved / skipped / failed)."""

    rows: list = field(default_factory=list)
    seconds: float = 0.0
    out_dir: str = ""

    @property
    def failed(self) -> list:
        return [r for r in self.rows if r["status"] == "failed"]

    def counts(self) -> dict:
        out = {"solved": 0, "skipped": 0, "failed": 0}
        for r in self.rows:
            out[r["status"]] += 1
        return out


# --- finding takes ----------------------------------------------------------------------------

def _words(stem: str) -> list[str]:
    return re.findall(r"[a-z]+|[0-9]+", stem.lower())


def is_static_name(path) -> bool:
    """True if the file name marks a static (calibration) trial by the naming rule."""
    return bool(STATIC_WORDS & set(_words(Path(path).stem)))


def _pair_key(path: Path) -> tuple:
    return tuple(w for w in _words(path.stem) if w not in STATIC_WORDS | TRIAL_WORDS)


def _read_manifest(path: Path) -> dict:
    from .scene import _read
    data = _read(path)
    unknown = set(data) - {"exclude", "static"}
    if unknown:
        raise PhysmocapError(f"unknown manifest keys {', '.join(sorted(unknown))} (known: "
                             f"exclude, static)", path)
    if not isinstance(data.get("static", {}), dict) or not isinstance(data.get("exclude", []),
                                                                     list):
        raise PhysmocapError("'static' must be a table and 'exclude' a list", path)
    return data


def discover(input_dir, out_dir=None, manifest=None) -> list[Take]:
    """Every motion trial under ``input_dir`` with its static trial (see the module docstring).

    ``out_dir`` (if inside ``input_dir``) and hidden folders are not searched. Sorted by name.
    """
    root = Path(input_dir).resolve()
    if not root.is_dir():
        raise PhysmocapError("not a folder", input_dir)
    man_path = Path(manifest) if manifest else root / MANIFEST
    if manifest and not man_path.is_file():
        raise PhysmocapError("manifest not found", manifest)
    man = _read_manifest(man_path) if man_path.is_file() else {}
    skip_dir = Path(out_dir).resolve() if out_dir else None

    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if not n.startswith(".")
                             and (skip_dir is None or (d / n).resolve() != skip_dir))
        files += [d / f for f in filenames if f.lower().endswith(".c3d")]
    rel = {f: f.relative_to(root).as_posix() for f in files}
    files = sorted((f for f in files
                    if not any(fnmatch.fnmatch(rel[f], g) for g in man.get("exclude", []))),
                   key=rel.get)

    pairs = {}
    for cap, stat in man.get("static", {}).items():
        if not (root / cap).is_file():
            raise PhysmocapError(f"manifest names a capture that does not exist: {cap}", man_path)
        if stat and not (root / stat).is_file():
            raise PhysmocapError(f"manifest names a static trial that does not exist: {stat}",
                                 man_path)
        pairs[(root / cap).resolve()] = (root / stat).resolve() if stat else None
    statics = {Path(s) for s in pairs.values() if s is not None}
    statics |= {f.resolve() for f in files if is_static_name(f) and f.resolve() not in pairs}

    takes, names = [], set()
    for f in files:
        fr = f.resolve()
        if fr in statics and fr not in pairs:
            continue
        if fr in pairs:
            static = pairs[fr]
        else:
            here = sorted(s for s in statics if s.parent == fr.parent)
            same = [s for s in here if _pair_key(s) == _pair_key(fr)]
            static = same[0] if same else (here[0] if len(here) == 1 else None)
        name = rel[f][:-len(f.suffix)]
        if name.lower() in names:
            raise PhysmocapError(f"two captures would write the same outputs: {name}", root)
        names.add(name.lower())
        takes.append(Take(name, str(fr), str(static) if static else None))
    return takes


# --- fingerprints and stamps ------------------------------------------------------------------

def _sha256(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _fingerprint(path) -> dict | None:
    if path is None:
        return None
    st = os.stat(path)
    return {"path": str(path), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "sha256": _sha256(path)}


def _same_input(fp: dict | None, path) -> bool:
    if fp is None or path is None:
        return fp is None and path is None
    try:
        st = os.stat(path)
    except OSError:
        return False
    if st.st_size != fp["size"]:
        return False
    # Unchanged size and mtime: trust it (no need to read the file); else compare contents.
    return st.st_mtime_ns == fp["mtime_ns"] or _sha256(path) == fp["sha256"]


def _paths(take: Take, out_dir) -> dict:
    base = Path(out_dir) / take.name
    return {k: base.with_name(base.name + s) for k, s in
            (("bvh", ".bvh"), ("report", ".report.json"), ("c3d", ".clean.c3d"),
             ("done", ".done.json"), ("failed", ".failed.json"))}


def _read_json(path) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def check_done(take: Take, out_dir, settings: BatchSettings) -> dict | None:
    """The take's row if its outputs are complete and up to date (status ``skipped``), its
    recorded failure if it failed on this very input (status ``failed``), else ``None``."""
    p = _paths(take, out_dir)
    key = settings.key()
    for kind in ("done", "failed"):
        stamp = _read_json(p[kind])
        if not stamp or stamp.get("settings") != key:
            continue
        if not (_same_input(stamp.get("input"), take.capture)
                and _same_input(stamp.get("static"), take.static)):
            continue
        if kind == "done":
            outs = stamp.get("outputs", {})
            if not outs or not all(Path(f).is_file() and os.path.getsize(f) == o["size"]
                                   and _sha256(f) == o["sha256"] for f, o in outs.items()):
                continue
            return {**stamp["row"], "status": "skipped", "seconds": 0.0}
        return {**stamp["row"], "seconds": 0.0}
    return None


def _write_stamp(path: Path, stamp: dict) -> None:
    from .io.atomic import atomic_write_text
    atomic_write_text(path, json.dumps(stamp, indent=2) + "\n")


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass


# --- one take ---------------------------------------------------------------------------------

def _row(take: Take, status: str, **kw) -> dict:
    row = {"take": take.name, "status": status, "frames": None, "fps": None,
           "marker_rms_mm": None, "marker_rms_all_mm": None, "foot_skate_mm": None,
           "seconds": None, "static": take.static, "reason": "", "warnings": []}
    row.update(kw)
    return row


def solve_take(take: Take, out_dir, settings: BatchSettings = BatchSettings()) -> dict:
    """Solve one take and write its outputs, then its done-stamp (atomically, last).

    Returns its summary row. Bad input (``PhysmocapError``) becomes a ``failed`` row and a
    ``.failed.json`` stamp; anything else propagates (the caller reports it, unstamped). The
    same function runs in a local worker process or on a Dask worker.
    """
    from .io.c3d import read_c3d
    from .io.atomic import atomic_write_text
    from .scene import load_body, load_markerset, pick_markerset
    from .solver.checkpoint import partial_folder
    from .solver.pipeline import solve_capture, write_outputs

    t0 = time.perf_counter()
    p = _paths(take, out_dir)
    p["bvh"].parent.mkdir(parents=True, exist_ok=True)
    # An old stamp must not vouch for outputs that are about to be replaced.
    _unlink(p["done"])
    _unlink(p["failed"])
    inp, stat = _fingerprint(take.capture), _fingerprint(take.static)
    partial = partial_folder(p["bvh"])
    stamp = {"take": take.name, "settings": settings.key(), "input": inp, "static": stat}
    # Warnings (a detected up axis) go into the row: a worker process has no terminal.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            markers = read_c3d(take.capture, up=settings.up)
            static = read_c3d(take.static, up=settings.up) if take.static else None
            body = load_body(settings.body)
            spec = (pick_markerset(markers.labels) if settings.markerset == "auto"
                    else load_markerset(settings.markerset))
            with _one_blas_thread():
                # finished stages of a long take survive a stopped batch (see solve_capture)
                result = solve_capture(markers, spec, body, static=static, checkpoint=partial)
        except PhysmocapError as exc:
            result, error = None, exc
    said = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
    if result is None:
        row = _row(take, "failed", reason=str(error), warnings=said,
                   seconds=round(time.perf_counter() - t0, 3))
        _write_stamp(p["failed"], {**stamp, "row": row})
        shutil.rmtree(partial, ignore_errors=True)     # a bad take fails again: nothing to keep
        return row

    report = write_outputs(result, markers, spec.name, body.name, p["bvh"], take.static,
                           p["c3d"] if settings.clean_c3d else None)
    outputs = [p["bvh"], p["report"]] + ([p["c3d"]] if settings.clean_c3d else [])
    # The report's timings differ run to run; the BVH and the figures below do not.
    atomic_write_text(p["report"], json.dumps(report, indent=2) + "\n")
    row = _row(take, "solved", frames=report["frames"], fps=report["fps"],
               marker_rms_mm=report["marker_rms_mm"],
               marker_rms_all_mm=report["marker_rms_all_mm"],
               foot_skate_mm=report["foot_skate_mm"]["mean"], warnings=said,
               seconds=round(time.perf_counter() - t0, 3))
    stamp["outputs"] = {str(f): {"size": os.path.getsize(f), "sha256": _sha256(f)}
                        for f in outputs}
    stamp["row"] = row
    _write_stamp(p["done"], stamp)
    shutil.rmtree(partial, ignore_errors=True)
    return row


# --- the whole library ------------------------------------------------------------------------

def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# One BLAS thread per worker: N processes on N cores, and results that do not depend on the
# thread count (OpenBLAS sums in a thread-count-dependent order, which changes the last digits of
# the calibration). Dask's nanny sets the same variables for its workers by default.
BLAS_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@contextlib.contextmanager
def _blas_env():
    old = {k: os.environ.get(k) for k in BLAS_ENV}
    os.environ.update(BLAS_ENV)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _one_blas_thread():
    """Limit BLAS to one thread in this process too, where threadpoolctl (extra ``cluster``)
    is installed: a Dask worker started without its nanny then still matches a local run."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1)


def _run_local(todo, out_dir, settings, workers, done_cb):
    if workers == 0:        # in this process (debugging): no isolation, no start-up cost
        for take in todo:
            try:
                row = solve_take(take, out_dir, settings)
            except Exception as exc:  # noqa: BLE001 - one take's crash must not stop the rest
                row = _row(take, "failed", reason=_one_line(exc))
            done_cb(row)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn, not fork: a clean interpreter per worker, as a Dask worker has; the workers start
    # during the submits, inside _blas_env.
    with _blas_env(), ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_signals) as pool:
        futures = {pool.submit(_worker_take, t, out_dir, settings): t for t in todo}
        try:
            for fut in as_completed(futures):
                try:
                    row = fut.result()       # (a worker's Terminated is raised on from here)
                except Exception as exc:  # noqa: BLE001 - includes a worker that died
                    row = _row(futures[fut], "failed", reason=_one_line(exc))
                done_cb(row)
        except BaseException:
            # stop the running takes now (leaving the pool joined them: a SIGTERM to the
            # batch alone let them run to the end, minutes for a long take); each unwinds,
            # its checkpoint kept for the next run. (The processes are taken first: shutdown
            # forgets them.)
            procs = list((getattr(pool, "_processes", None) or {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for proc in procs:
                if proc.is_alive():
                    proc.terminate()
            raise


_IN_TAKE = False      # in a worker process: whether a take is being solved


def _worker_take(take: Take, out_dir, settings: BatchSettings) -> dict:
    """``solve_take`` in a worker process (``_IN_TAKE`` set while it runs)."""
    global _IN_TAKE
    _IN_TAKE = True
    try:
        return solve_take(take, out_dir, settings)
    finally:
        _IN_TAKE = False


def _worker_signals() -> None:
    """In each worker: SIGTERM in a take raises ``Terminated``, as in the main process (its
    default killed the worker without unwinding: a temporary file left, the take reported
    failed); between takes it ends the idle worker quietly."""
    import signal

    def on_term(signum, frame):
        if _IN_TAKE:
            raise_terminated(signum, frame)
        os._exit(143)
    signal.signal(signal.SIGTERM, on_term)


def _run_dask(todo, out_dir, settings, scheduler, done_cb):
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise PhysmocapError("--scheduler needs Dask's distributed: pip install "
                             "'physmocap[cluster]'") from None
    try:
        client = Client(scheduler, timeout=SCHEDULER_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        raise PhysmocapError(f"cannot reach the Dask scheduler at {scheduler}: "
                             f"{_one_line(exc)}") from None
    try:
        # pure=False: every take is a fresh task even if an identical one ran before.
        futures = client.map(solve_take, todo, out_dir=str(out_dir), settings=settings,
                             pure=False)
        takes = {f.key: t for f, t in zip(futures, todo)}
        for fut in as_completed(futures):
            try:
                row = fut.result()
            except Exception as exc:  # noqa: BLE001 - a task error or a lost worker
                row = _row(takes[fut.key], "failed", reason=_one_line(exc))
            done_cb(row)
    finally:
        client.close()


def run_batch(input_dir, out_dir, settings: BatchSettings = BatchSettings(), workers: int | None
              = None, scheduler: str | None = None, manifest=None, force: bool = False,
              progress=None) -> BatchSummary:
    """Solve every take under ``input_dir`` into ``out_dir``; write ``summary.json``/``.csv``.

    Args:
        workers: local worker processes (default: the CPU count, at most one per take; 0 runs
            the takes in this process, for debugging). Ignored with ``scheduler``.
        scheduler: a Dask scheduler address (``tcp://host:8786``): the takes run on its
            workers, which must see ``input_dir`` and ``out_dir`` at the same paths.
        force: solve every take again, even those that are up to date.
        progress: ``progress(stage, done, total)``.
    """
    t0 = time.perf_counter()
    out = Path(out_dir).resolve()
    if out.exists() and not out.is_dir():
        raise PhysmocapError("is a file; batch writes into a folder (made if missing): name one",
                             out)
    if out == Path(input_dir).resolve():
        # (its summary, stamps and lock went in among the captures)
        raise PhysmocapError("is the input folder; batch writes into another: name one, e.g. "
                             f"{out.name}_solved", out)
    takes = discover(input_dir, out, manifest)
    if not takes:
        raise PhysmocapError("no motion captures (.c3d) found", input_dir)
    _check_settings(settings)
    _refuse_overwriting_inputs(takes, out, settings)
    out.mkdir(parents=True, exist_ok=True)
    with _lock(out):
        summary = _run(takes, out, settings, workers, scheduler, force, progress)
        summary.seconds = time.perf_counter() - t0
        _write_summary(summary, out)
    return summary


def _check_settings(settings: BatchSettings) -> None:
    """The settings every take shares, checked once before any take: a bad ``up`` or body
    file failed every take alone, said only as "N of N takes failed"."""
    from .conventions import up_to_zup_matrix
    from .scene import load_body
    if settings.up is not None:
        up_to_zup_matrix(settings.up)
    load_body(settings.body)
    settings.key()                       # the marker set named (or its files) found


def _refuse_overwriting_inputs(takes: list, out: Path, settings: BatchSettings) -> None:
    """Inputs are never modified: no take's output (BVH, report, cleaned C3D, stamps) and no
    summary may be a capture or a static trial. An output folder above the input folder let
    take ``q/X``'s ``X.clean.c3d`` replace a capture of that name."""
    inputs = {os.path.realpath(p) for t in takes for p in (t.capture, t.static) if p}
    for t in takes:
        paths = _paths(t, out)
        for key, path in paths.items():
            if key == "c3d" and not settings.clean_c3d:
                continue
            if os.path.realpath(path) in inputs:
                raise PhysmocapError(f"take {t.name}'s output would overwrite an input file; "
                                     "write into another folder", path)
    for name in ("summary.json", "summary.csv"):
        if os.path.realpath(out / name) in inputs:
            raise PhysmocapError("the batch summary would overwrite an input file; write into "
                                 "another folder", out / name)


@contextlib.contextmanager
def _lock(out: Path):
    """One batch at a time per output folder: a second run would redo the first one's takes."""
    import fcntl

    with open(out / ".physmocap_batch.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise PhysmocapError("another physmocap batch is writing to this folder",
                                 out) from None
        yield


def _run(takes, out, settings, workers, scheduler, force, progress) -> BatchSummary:
    say = progress or (lambda *a: None)
    rows = {}
    todo = []
    for t in takes:
        row = None if force else check_done(t, out, settings)
        if row is None:
            todo.append(t)
        else:
            rows[t.name] = row
    say("batch", len(rows), len(takes))

    def done(row):
        rows[row["take"]] = row
        log.info("%s %s%s", row["status"], row["take"],
                 f": {row['reason']}" if row["reason"] else "")
        for w in row.get("warnings", []):
            log.info("warning: %s", w)
        say("batch", len(rows), len(takes))

    if todo:
        if scheduler:
            _run_dask(todo, out, settings, scheduler, done)
        else:
            n = (os.cpu_count() or 1) if workers is None else workers
            _run_local(todo, out, settings, min(n, len(todo)), done)
    return BatchSummary([rows[t.name] for t in takes], 0.0, str(out))


def _write_summary(s: BatchSummary, out: Path) -> None:
    from .io.atomic import atomic_write_text
    atomic_write_text(out / "summary.json", json.dumps(
        {"counts": s.counts(), "seconds": round(s.seconds, 3), "takes": s.rows}, indent=2) + "\n")
    buf = io.StringIO()
    w = csv.DictWriter(buf, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(s.rows)
    atomic_write_text(out / "summary.csv", buf.getvalue())


def format_summary(s: BatchSummary) -> str:
    """The summary table as text (one line per take, then the totals)."""
    width = max([len(r["take"]) for r in s.rows] + [4])
    lines = [f"{'take':<{width}}  {'status':<7} {'frames':>6} {'RMS mm':>6} {'skate':>6}  "
             f"{'static / reason'}"]
    for r in s.rows:
        num = (lambda v, f: format(v, f) if v is not None else "-")
        note = r["reason"] if r["status"] == "failed" else (
            Path(r["static"]).name if r.get("static") else "")
        lines.append(f"{r['take']:<{width}}  {r['status']:<7} {num(r['frames'], 'd'):>6} "
                     f"{num(r['marker_rms_mm'], '.1f'):>6} {num(r['foot_skate_mm'], '.2f'):>6}"
                     f"  {note}")
    c = s.counts()
    lines.append(f"{len(s.rows)} takes: {c['solved']} solved, {c['skipped']} up to date, "
                 f"{c['failed']} failed in {s.seconds:.1f} s; summary in "
                 f"{Path(s.out_dir) / 'summary.csv'} and summary.json")
    return "\n".join(lines)

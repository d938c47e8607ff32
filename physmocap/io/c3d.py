"""C3D files: ``read_c3d`` -> ``MarkerTrajectories`` (metres, Z up), ``write_c3d`` back.

ezc3d is imported here and nowhere else. Parsing is layered so that no file can crash or hang
the Python process:

1. A cheap pure-Python check of the 512-byte header and the parameter-section header: empty or
   short files, wrong magic byte, parameter section outside the file, unknown or MIPS processor
   (ezc3d cannot read MIPS), and a declared data size (frames x points x bytes) larger than the
   file, so a corrupt header never makes the parser allocate gigabytes.
2. ezc3d in strict mode, in a forked copy of the process (POSIX; in-process elsewhere): fuzzing
   found parameter sections that make even strict mode segfault, so a crash or hang there
   becomes ``FileFormatError`` instead of killing the caller. The fork costs ~0.1 s per file.
3. If strict mode fails, ezc3d with ``ignore_bad_formatting=True`` in a child process with a
   timeout (that mode segfaults on some corrupt parameter sections). A crash or a timeout
   becomes ``FileFormatError``.
4. Silent emptiness: a header that declares N > 0 points while ezc3d returns none (a file without
   POINT parameters, e.g. c3d.org's ``phasespace_sample.c3d``) raises ``FileFormatError``. We
   deliberately do not decode such data from the header alone: without labels, units or rate
   parameters nothing downstream could use it safely.

Analog-only files (no 3D points, e.g. ``emgwl.c3d``) read as 0 markers with
``meta['analog_only'] = True``.
"""
from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from ..conventions import canonical_unit, infer_length_unit, up_to_zup_matrix, unit_scale
from ..errors import (FileFormatError, ShapeError, UnitError, UnknownNameError, bad_number,
                      require_path, require_type)
from ..markers import MarkerTrajectories
from . import _c3d_child
from .atomic import atomic_path

__all__ = ["read_c3d", "write_c3d", "write_c3d_frames"]

#: Seconds the lenient child parser may take before it is killed.
CHILD_TIMEOUT = 60.0

_PROCESSORS = {84: "intel", 85: "dec", 86: "mips"}
#: The C3D format's limit on a parameter's dimensions.
_MAX_DIMS = 7
#: Numeric parameters ezc3d dereferences as single values.
_SCALARS = {b"POINT": {b"USED", b"SCALE", b"RATE", b"FRAMES", b"DATA_START"},
            b"ANALOG": {b"USED", b"RATE", b"GEN_SCALE"},
            b"ROTATION": {b"USED", b"RATE", b"DATA_START", b"RATIO"}}

# Labels of markers that sit high / low on a standing body, to tell +axis from -axis.
_HEAD = {"LFHD", "RFHD", "LBHD", "RBHD", "HEAD", "C7", "CLAV", "LSHO", "RSHO", "TOP", "VERTEX"}
_FEET = {"LTOE", "RTOE", "LHEE", "RHEE", "LANK", "RANK", "LMT5", "RMT5", "LMT1", "RMT1",
         "LHEL", "RHEL", "LCAL", "RCAL"}

# POINT parameters (and TYPE_GROUPS entries) whose labels are model outputs, not markers.
# ``VIRTUAL`` is the one ``write_c3d`` uses to keep ``is_virtual``.
_MODEL_GROUPS = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS", "REACTIONS", "VIRTUAL")
_RE_COM = re.compile(r"(?i)^cent(re|er)ofmass")
_RE_AXES = re.compile(r"^(AXIS[XYZ]|ORIGIN)\w+|^[LR]\w*JC\d*$")
_RE_UNNAMED = re.compile(r"^[*#]\d*$")


# ----------------------------------------------------------------------------------------------
# 1. header pre-check


def _dec_float(b: bytes) -> float:
    # DEC F-floats: 16-bit words swapped relative to IEEE little-endian, exponent bias off by 2.
    return struct.unpack("<f", b[2:4] + b[0:2])[0] / 4.0


def _precheck(path: Path) -> dict:
    """Validate the header bytes without a parser; return the raw header fields."""
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise FileFormatError("file not found; check the path", path) from None
    if path.is_dir():
        raise FileFormatError("is a folder, not a C3D file", path)
    if size == 0:
        raise FileFormatError("file is empty (0 bytes); re-export it from the capture software", path)
    if size < 512:
        raise FileFormatError(
            f"file is too short for a C3D ({size} bytes; the header alone is 512); it is truncated",
            path)
    with open(path, "rb") as fh:
        head = fh.read(512)
        if head[1] != 0x50:
            raise FileFormatError(
                f"not a C3D file (byte 2 is 0x{head[1]:02x}, a C3D has 0x50); check the file", path)
        pblock = head[0]
        poff = (pblock - 1) * 512
        if pblock < 2 or poff + 4 > size:
            raise FileFormatError(
                f"the header's parameter-section pointer (block {pblock}) is invalid for this "
                f"{size}-byte file; the file is truncated or corrupt", path)
        fh.seek(poff)
        phead = fh.read(4)
    proc = phead[3]
    if proc == 86:
        raise FileFormatError(
            "MIPS (SGI big-endian) C3D files are not supported; convert it to Intel format "
            "(e.g. with BTK or Mokka) and read that", path)
    if proc not in _PROCESSORS:
        raise FileFormatError(
            f"unknown processor type {proc} in the parameter section (expected 84 Intel or "
            f"85 DEC); the parameter section is corrupt", path)
    w = struct.unpack("<256H", head)  # w[k] is the C3D header word k+1; Intel and DEC are LE
    fl = _dec_float if proc == 85 else (lambda b: struct.unpack("<f", b)[0])
    h = {"size": size, "processor": _PROCESSORS[proc], "n_points": w[1],
         "analog_per_frame": w[2], "first_frame": w[3], "last_frame": w[4],
         "scale": fl(head[12:16]), "data_start": w[8], "rate": fl(head[20:24])}
    if h["n_points"] or h["analog_per_frame"]:
        n_frames = h["last_frame"] - h["first_frame"] + 1
        if n_frames < 0:
            raise FileFormatError(
                f"the header's frame range {h['first_frame']}..{h['last_frame']} is invalid; "
                f"the header is corrupt", path)
        if h["data_start"] < 2:
            raise FileFormatError(
                f"the header puts the data section at block {h['data_start']}; the header is "
                f"corrupt", path)
        word = 4 if h["scale"] < 0 else 2  # negative scale = float storage
        need = n_frames * (4 * h["n_points"] + h["analog_per_frame"]) * word
        have = size - (h["data_start"] - 1) * 512
        if need > have:
            raise FileFormatError(
                f"the header declares {n_frames} frames of {h['n_points']} points and "
                f"{h['analog_per_frame']} analog samples ({need} bytes) but the file holds "
                f"{max(have, 0)} bytes of data; it is truncated or its header is corrupt", path)
    _check_parameter_records(path, poff, h, size)
    return h


def _check_parameter_records(path: Path, poff: int, h: dict, size: int) -> None:
    """Walk the parameter records as ezc3d does (name, next-record pointer, type, dimensions)
    and reject a section that runs into the data or declares values larger than the file.

    Why: on c3d.org's ``bad_parameter_section.c3d`` the last pointer leads into the data
    section and ezc3d's strict mode then allocates ~12 GB in-process before failing; an
    in-process parser must never see such a file.
    """
    # Records must end before the data section (the header's DATA_START is the reliable one:
    # the parameter's copy and the section's block count are wrong in real files).
    end = (h["data_start"] - 1) * 512 if h["data_start"] * 512 > poff + 512 else size
    end = min(end, size, poff + (16 << 20))
    with open(path, "rb") as fh:
        fh.seek(poff)
        b = fh.read(end - poff)
    corrupt = "the parameter section is corrupt ({}); re-export the file from the capture software"
    i = 4
    groups: dict[int, str] = {}          # id -> name
    params: list[tuple[int, int]] = []   # (group id, byte) of each parameter
    empty: list[tuple[int, bytes, int]] = []   # numeric parameters without values
    while True:
        if i + 2 > len(b):
            raise FileFormatError(corrupt.format(
                f"a record at byte {poff + i} runs into the data section or past the end of the file"),
                path)
        nlen = abs(struct.unpack_from("b", b, i)[0])
        gid = struct.unpack_from("b", b, i + 1)[0]
        if nlen == 0:
            break  # regular end of the section
        j = i + 2 + nlen  # the 2-byte pointer to the next record
        fixed = j + 2 + (1 if gid < 0 else 2)
        if fixed > len(b):
            raise FileFormatError(corrupt.format(
                f"a record at byte {poff + i} runs into the data section or past the end of the file"),
                path)
        nxt = struct.unpack_from("<H", b, j)[0]
        name = bytes(b[i + 2:j]).upper()
        if gid < 0:
            # ezc3d segfaults (strict mode too) on a group id defined twice
            if -gid in groups:
                raise FileFormatError(corrupt.format(
                    f"group id {-gid} is defined twice (byte {poff + i})"), path)
            groups[-gid] = name
            desc = j + 2
        elif gid > 0:
            typ, ndim = struct.unpack_from("b", b, j + 2)[0], b[j + 3]
            if typ not in (-1, 1, 2, 4):
                raise FileFormatError(corrupt.format(
                    f"a parameter at byte {poff + i} has unknown data type {typ}"), path)
            if ndim > _MAX_DIMS:    # the C3D limit; ezc3d segfaults on absurd dimension counts
                raise FileFormatError(corrupt.format(
                    f"a parameter at byte {poff + i} has {ndim} dimensions (at most "
                    f"{_MAX_DIMS})"), path)
            dims = b[j + 4:j + 4 + ndim]
            count = int(np.prod(np.frombuffer(dims, np.uint8), dtype=float))
            nbytes = abs(typ) * count
            if len(dims) < ndim or j + 4 + ndim + nbytes > len(b):
                raise FileFormatError(corrupt.format(
                    f"a parameter at byte {poff + i} declares {nbytes:.0f} bytes of values that do "
                    f"not fit in the section"), path)
            if typ != -1 and count == 0:
                empty.append((gid, name, poff + i))
            params.append((gid, poff + i))
            desc = j + 4 + ndim + nbytes
        # ezc3d reads the description length as a signed byte and segfaults on -1
        if gid != 0 and (desc >= len(b) or b[desc] >= 128):
            raise FileFormatError(corrupt.format(
                f"the record at byte {poff + i} has an invalid description length"), path)
        if nxt == 0:
            break  # last record
        if j + nxt < fixed:
            raise FileFormatError(corrupt.format(
                f"the record at byte {poff + i} points backwards"), path)
        i = j + nxt
    orphans = [at for g, at in params if g not in groups]
    if orphans:
        raise FileFormatError(corrupt.format(
            f"the parameter at byte {orphans[0]} belongs to no group"), path)
    for g, name, at in empty:
        # ezc3d reads these as single values without checking (segfault on an empty one)
        if name in _SCALARS.get(groups[g], ()):
            raise FileFormatError(corrupt.format(
                f"parameter {groups[g].decode(errors='replace')}:{name.decode(errors='replace')}"
                f" at byte {at} has no value"), path)


# ----------------------------------------------------------------------------------------------
# 2./3. parsing: strict in-process, lenient in a child process


def _one_line(exc: BaseException) -> str:
    msg = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__


def _child_command(path: Path, out: str) -> list[str]:
    """The lenient parser's command line (a seam for tests)."""
    return [sys.executable, "-m", "physmocap.io._c3d_child", str(path), out]


def _load_in_child(path: Path, strict_error: str) -> dict:
    """Lenient ezc3d parse in a child process; crash, timeout or error -> FileFormatError."""
    root = str(Path(__file__).resolve().parents[2])  # folder holding the physmocap package
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    def corrupt(how: str) -> str:
        # Both parsers often fail for the same reason: say it once.
        why = (f"both parsers: {how}" if how == strict_error
               else f"strict parser: {strict_error}; lenient parser: {how}")
        return (f"the parameter section is corrupt or non-standard ({why}); re-export the file "
                "from the capture software")
    with tempfile.TemporaryDirectory(prefix="physmocap-c3d-") as tmp:
        out = os.path.join(tmp, "points.npz")
        try:
            proc = subprocess.run(
                _child_command(path, out), capture_output=True, text=True, timeout=CHILD_TIMEOUT, env=env)
        except subprocess.TimeoutExpired:
            raise FileFormatError(corrupt(f"hung for {CHILD_TIMEOUT:g} s"), path) from None
        if proc.returncode < 0:
            raise FileFormatError(corrupt(f"crashed with signal {-proc.returncode}"), path)
        if proc.returncode != 0 or not os.path.exists(out):
            why = (proc.stderr.strip().splitlines() or ["failed"])[-1]
            raise FileFormatError(corrupt(why), path)
        return _c3d_child.load_npz(out)


class _StrictFailed(Exception):
    """ezc3d's strict parse raised (the message is its one-line reason)."""


def _load_forked(path: Path) -> dict:
    """Strict ezc3d parse in a forked copy of this process (cheap: no new interpreter).

    Why: fuzzing found parameter sections on which even ezc3d's strict mode segfaults, and no
    pre-check can list them all. A crash or hang of the fork becomes ``FileFormatError``; an
    ezc3d exception becomes ``_StrictFailed`` (the caller then tries the lenient parser).
    """
    with tempfile.TemporaryDirectory(prefix="physmocap-c3d-") as tmp:
        out = os.path.join(tmp, "points.npz")
        with warnings.catch_warnings():   # Python 3.12+ warns about fork with threads
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: parse, hand the arrays over, never return into the caller
            code = 3
            try:
                import faulthandler
                import signal
                # A crash here is expected and reported by the parent: die of the signal, not
                # through a handler the host installed (faulthandler, a fuzzer, a debugger).
                faulthandler.disable()
                for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE,
                            signal.SIGILL):
                    signal.signal(sig, signal.SIG_DFL)
                _c3d_child._limit_resources(str(path), base=_c3d_child.address_space())
                _c3d_child.save(out, _c3d_child.load(str(path), lenient=False))
                code = 0
            except BaseException as exc:  # noqa: BLE001  (reported through the file)
                try:
                    with open(out + ".err", "w", encoding="utf-8") as fh:
                        fh.write(_one_line(exc))
                    code = 2
                except BaseException:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        deadline = time.monotonic() + CHILD_TIMEOUT
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                raise FileFormatError(f"the C3D parser hung for {CHILD_TIMEOUT:g} s; the file "
                                      f"is corrupt", path)
            time.sleep(0.002)
        if os.WIFSIGNALED(status):
            raise FileFormatError(
                f"the C3D parser crashed (signal {os.WTERMSIG(status)}) on this file; its "
                f"parameter section is corrupt; re-export the file from the capture software",
                path)
        if os.WEXITSTATUS(status) == 0 and os.path.exists(out):
            return _c3d_child.load_npz(out)
        why = "failed"
        if os.path.exists(out + ".err"):
            with open(out + ".err", encoding="utf-8") as fh:
                why = fh.read().strip() or why
        raise _StrictFailed(why)


def _parse(path: Path) -> tuple[dict, str]:
    """``(_c3d_child.extract`` dict, parser name``)``."""
    try:
        if hasattr(os, "fork"):
            return _load_forked(path), "ezc3d"
        return _c3d_child.load(str(path), lenient=False), "ezc3d"
    except _StrictFailed as exc:
        strict_error = str(exc)
    except FileFormatError:  # the fork crashed or hung: the lenient parser would too
        raise
    except Exception as exc:  # ezc3d raises OSError/ValueError/RuntimeError on bad files
        strict_error = _one_line(exc)
    return _load_in_child(path, strict_error), "ezc3d-lenient-child"


# ----------------------------------------------------------------------------------------------
# takes longer than 65535 frames

#: The largest frame count the C3D header and POINT:FRAMES (16-bit) can hold.
SATURATED = 65535
#: Frames read or rotated at a time past that count.
_READ_BLOCK = 32768


def _word_pair(values) -> int | None:
    """A 32-bit frame number stored as two 16-bit words ``[low, high]`` (TRIAL:ACTUAL_*_FIELD;
    a low word read as a signed int16 is negative past 32767)."""
    try:
        lo, hi = (int(round(float(v))) for v in list(values)[:2])
    except (TypeError, ValueError):
        return None
    return (lo & 0xFFFF) | ((hi & 0xFFFF) << 16)


def _first_frame(hdr: dict, params: dict) -> int:
    """The take's first frame number (1-based): the header's 16-bit word, or past 65535
    (which that word cannot hold) TRIAL:ACTUAL_START_FIELD, as Vicon and ``write_c3d`` put it.
    Every real file read here states both alike below 65536."""
    trial = _word_pair(_param(params, "TRIAL", "ACTUAL_START_FIELD") or [])
    return trial if trial is not None and trial > 0xFFFF else int(hdr["first_frame"])


def _long_take_frames(path: Path, hdr: dict, params: dict) -> int:
    """Frames the data section really holds when the 16-bit counts are saturated.

    Long takes (> 65535 frames: 9 minutes at 120 Hz) cannot state their length in the header;
    writers put it in TRIAL:ACTUAL_START/END_FIELD (Vicon) or POINT:LONG_FRAMES, or nowhere
    (ezc3d). ezc3d 1.7 then stops at frame 65535, silently dropping the rest of the take. The
    count is taken from those parameters, else from the bytes between the data section's start
    and the next section (ROTATION:DATA_START) or the end of the file.
    """
    word = 4 if hdr["scale"] < 0 else 2
    frame_bytes = (4 * hdr["n_points"] + hdr["analog_per_frame"]) * word
    start = (hdr["data_start"] - 1) * 512
    end = hdr["size"]
    rot = _param(params, "ROTATION", "DATA_START")
    used = _param(params, "ROTATION", "USED")
    # Only where rotation data follow the points: ezc3d writes ROTATION:DATA_START even without
    # them, as a 16-bit block number that wraps past 32 MB of point data.
    if used and float(used[0]) > 0 and rot and float(rot[0]) > hdr["data_start"]:
        end = min(end, (int(float(rot[0])) - 1) * 512)
    fits = max(end - start, 0) // frame_bytes if frame_bytes else 0
    a = _word_pair(_param(params, "TRIAL", "ACTUAL_START_FIELD") or [])
    b = _word_pair(_param(params, "TRIAL", "ACTUAL_END_FIELD") or [])
    long_frames = _param(params, "POINT", "LONG_FRAMES")
    if a is not None and b is not None and b >= a:
        n = b - a + 1
    elif long_frames:
        n = int(round(float(long_frames[0])))
    else:
        # The section is padded to whole 512-byte blocks: all-zero frames at its end are
        # padding (an all-zero sample is missing anyway), not data.
        if fits > SATURATED:
            tail = np.fromfile(path, np.uint8, count=min(fits * frame_bytes, 1 << 16),
                               offset=start + max(fits * frame_bytes - (1 << 16), 0))
            nz = np.flatnonzero(tail)
            used = len(tail) - (nz[-1] + 1 if nz.size else 0)      # zero bytes at the end
            fits -= used // frame_bytes
        return fits
    if n > fits:
        raise FileFormatError(f"declares {n} frames (a long take) but its data section holds "
                              f"{fits}; the file is truncated", path)
    return n


def _read_frames(path: Path, hdr: dict, first: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    """Point data of frames ``[first, stop)`` read straight from the data section (Intel
    float or integer storage), as ``extract`` returns it: ``points (3, N, n)`` in file units
    (NaN where invalid) and ``residuals (N, n)`` (-1 where invalid)."""
    if hdr["processor"] != "intel":
        raise FileFormatError(f"is a {hdr['processor'].upper()}-format take of more than "
                              f"{SATURATED} frames, which physmocap reads only in Intel format; "
                              f"convert it (e.g. with Mokka)", path)
    N = hdr["n_points"]
    fl = hdr["scale"] < 0
    per = 4 * N + hdr["analog_per_frame"]
    dtype = np.dtype("<f4" if fl else "<i2")
    start = (hdr["data_start"] - 1) * 512 + first * per * dtype.itemsize
    raw = np.fromfile(path, dtype=dtype, count=(stop - first) * per, offset=start)
    raw = raw.reshape(stop - first, per)[:, :4 * N].reshape(stop - first, N, 4)
    scale = 1.0 if fl else float(hdr["scale"])
    # The fourth word: residual and camera mask bytes; negative = invalid. Float files store it
    # as a float holding that integer. The residual byte is taken as ezc3d takes it (the high
    # one, x |scale|), so frames past 65535 read like the ones before.
    w4 = np.round(raw[..., 3]).astype(np.int64) if fl else raw[..., 3].astype(np.int64)
    valid = w4 >= 0
    res = np.where(valid, ((w4 >> 8) & 0xFF) * abs(float(hdr["scale"])), -1.0).T
    pts = np.where(valid[..., None], raw[..., :3] * scale, np.nan)
    return np.transpose(pts, (2, 1, 0)), res


# ----------------------------------------------------------------------------------------------
# labels, subject, virtual points


def _param(params: dict, group: str, name: str, default=None):
    return params.get(group, {}).get(name, default)


def _numbers(group: dict) -> dict:
    """The finite single-number parameters of a group, as ``{name: float}`` (subject
    measurements: Plug-in Gait's ``PROCESSING`` group holds knee and ankle widths in mm)."""
    out = {}
    for name, v in group.items():
        try:
            a = np.asarray(v, dtype=float).ravel()
        except (TypeError, ValueError):
            continue
        if a.size == 1 and np.isfinite(a[0]):
            out[str(name)] = float(a[0])
    return out


def _strings(values) -> list[str]:
    return [str(v).replace("\x00", "").strip() for v in (values or [])]


def _numbered(params: dict, group: str, stem: str) -> list[str]:
    """``STEM + STEM2 + STEM3 …`` (C3D splits long lists of >255 entries; ezc3d does not join)."""
    g = params.get(group, {})
    keys = [k for k in g if re.fullmatch(re.escape(stem) + r"\d*", k)]
    keys.sort(key=lambda k: int(k[len(stem):] or 1))
    out: list[str] = []
    for k in keys:
        if all(isinstance(v, str) for v in g[k]):  # text parameters only
            out += _strings(g[k])
    return out


def _split_prefix(label: str, prefixes: list[str]) -> tuple[str, str]:
    """``('Name', 'LFHD')`` for ``'Name:LFHD'``."""
    for p in prefixes:
        if p and label.startswith(p):
            return p.rstrip(":").strip(), label[len(p):].strip()
    if ":" in label:
        subj, _, rest = label.partition(":")
        return subj.strip(), rest.strip()
    return "", label


def _labels_and_subject(params: dict, n: int) -> tuple[list[str], str, list[str]]:
    """``(labels (n,), subject, prefixes)``: LABELS + LABELS2 + …, cut or padded to ``n``,
    subject prefixes removed; the subject from the prefixes, else SUBJECTS:NAMES/SUBJECT:NAME."""
    raw = _numbered(params, "POINT", "LABELS")[:n]
    raw += [""] * (n - len(raw))
    prefixes = [p for p in _strings(_param(params, "SUBJECTS", "LABEL_PREFIXES")) if p]
    split = [_split_prefix(l, prefixes) for l in raw]
    labels = [s[1] for s in split]
    subjects = [s[0] for s in split if s[0]]
    # the most frequent prefix, the first to appear on a tie (``max`` over a set chose by the
    # strings' hashes: another subject on another run)
    subject = max(dict.fromkeys(subjects), key=subjects.count) if subjects else ""
    if not subject:
        names = [s for s in _strings(_param(params, "SUBJECTS", "NAMES")) if s]
        names = names or [s for s in _strings(_param(params, "SUBJECT", "NAME")) if s]
        subject = names[0] if names else ""
    return labels, subject, prefixes


def _virtual(labels: list[str], params: dict, residuals: np.ndarray, prefixes) -> np.ndarray:
    """``(N,)`` bool, True for points that are not physical markers. Any of:

    (a) listed in POINT:ANGLES/FORCES/MOMENTS/POWERS/SCALARS/REACTIONS/VIRTUAL (and their
        ``…2`` continuations) or in a POINT parameter named by POINT:TYPE_GROUPS;
    (b) a segment frame: stem + O/A/L/P with all four present (PELO, PELA, PELL, PELP);
    (c) CentreOfMass*; (d) AXISX…/ORIGIN…/[LR]…JC joint centres and axes;
    (e) unnamed: '' or ``*17`` / ``#``;
    (f) residual exactly 0 in every frame in a file where some residual is > 0 (Vicon's
        computed points; a fully missing marker has residual -1, so it is not caught).
    Label patterns alone cannot do it: LMT5, RFT1 end in digits and are markers.
    """
    n = len(labels)
    point = params.get("POINT", {})
    groups = set(_MODEL_GROUPS) | {g.upper() for g in _strings(point.get("TYPE_GROUPS"))}
    model: set[str] = set()
    for g in groups - {"LABELS", "DESCRIPTIONS", "UNITS"}:
        model |= {_split_prefix(v, prefixes)[1] for v in _numbered(params, "POINT", g)}
    present = set(labels)
    virt = np.zeros(n, bool)
    for i, l in enumerate(labels):
        stem = l[:-1]
        virt[i] = (
            l in model                                                            # (a) model output
            or (len(l) >= 2 and l[-1] in "OALP"
                and all(stem + c in present for c in "OALP"))                     # (b) segment frame
            or bool(_RE_COM.match(l)) or bool(_RE_AXES.match(l))                  # (c), (d)
            or l == "" or bool(_RE_UNNAMED.match(l)))                             # (e) unnamed
    # (f) Vicon computed points: residual exactly 0 in every frame while real markers have > 0.
    if residuals.size and np.any(residuals > 0):
        virt |= np.all(residuals == 0, axis=1)
    return virt


def _unique(labels: list[str], path: Path) -> list[str]:
    """Empty labels -> ``*<index>``; duplicates -> ``LFHD_2`` (with a warning)."""
    labels = [l if l else f"*{i}" for i, l in enumerate(labels)]
    seen: set[str] = set()
    taken = set(labels)
    out, dups = [], []
    for l in labels:
        if l in seen:
            k = 2
            while f"{l}_{k}" in taken:
                k += 1
            dups.append(l)
            new = f"{l}_{k}"
            taken.add(new)
            seen.add(new)
            out.append(new)
        else:
            seen.add(l)
            out.append(l)
    if dups:
        shown = ", ".join(sorted(set(dups))[:8])
        warnings.warn(f"{path}: duplicate point labels renamed with _2, _3, …: {shown}",
                      stacklevel=3)
    return out


# ----------------------------------------------------------------------------------------------
# units and vertical axis, from physical markers only (model outputs are angles, forces, …)


def _frame_extent(pos: np.ndarray) -> np.ndarray:
    """``(F, 3)`` per-frame spread of the markers along x, y, z (NaN with < 2 markers)."""
    valid = ~np.isnan(pos[..., 0])
    enough = valid.sum(axis=1) >= 2
    ext = np.full((pos.shape[0], 3), np.nan)
    if np.any(enough):
        p = pos[enough]
        ext[enough] = np.nanmax(p, axis=1) - np.nanmin(p, axis=1)
    return ext


def _median_extent(pos: np.ndarray) -> np.ndarray:
    ext = _frame_extent(pos)
    ok = ~np.isnan(ext[:, 0])
    return np.median(ext[ok], axis=0) if np.any(ok) else np.full(3, np.nan)


def _unit(params: dict, pos: np.ndarray, path: Path) -> tuple[str, float, str]:
    """``(unit, metres per unit, source)``; source is declared, inferred or assumed."""
    declared = next((u for u in _strings(_param(params, "POINT", "UNITS")) if u), "")
    if declared:
        try:
            return canonical_unit(declared), unit_scale(declared), "declared"
        except UnitError:
            pass
    what = f"POINT:UNITS {declared!r} is not a length unit" if declared else "no POINT:UNITS"
    ext = _median_extent(pos)
    if np.all(np.isnan(ext)) or np.nanmax(ext) <= 0:
        warnings.warn(f"{path}: {what} and no valid marker data to infer it from; assuming mm",
                      stacklevel=3)
        return "mm", unit_scale("mm"), "assumed"
    unit = infer_length_unit(float(np.nanmax(ext)), candidates=("m", "cm", "mm"))
    warnings.warn(f"{path}: {what}; inferred {unit} from the size of the marker cloud",
                  stacklevel=3)
    return unit, unit_scale(unit), "inferred"


def _screen_up(params: dict) -> str | None:
    """The vertical axis the file declares (``'z'``, ``'-y'``, …): ``POINT:Y_SCREEN``, the axis
    a viewer shows pointing up (Vicon, Qualisys, Motive and ``write_c3d`` write it), when it
    and ``POINT:X_SCREEN`` name two different axes; else ``None``."""
    def axis(name: str) -> str | None:
        v = [x.strip().upper() for x in _strings(_param(params, "POINT", name))]
        if len(v) != 1 or len(v[0]) != 2 or v[0][0] not in "+-" or v[0][1] not in "XYZ":
            return None
        return v[0]
    x, y = axis("X_SCREEN"), axis("Y_SCREEN")
    if x is None or y is None or x[1] == y[1]:
        return None
    return y[1].lower() if y[0] == "+" else "-" + y[1].lower()


def _detect_up(pos: np.ndarray, labels: list[str]) -> str | None:
    """Signed vertical axis of ``pos (F, M, 3)`` in metres, or None with no usable data.

    Axis: the largest median per-frame spread of the markers (a standing or moving person is
    taller than wide). Sign: head markers above foot markers when labelled, else the floor is
    taken to be the end of the range nearer the origin (labs put the origin on the floor).
    """
    ext = _median_extent(pos)
    if np.all(np.isnan(ext)):
        return None
    axis = int(np.nanargmax(ext))
    name = "xyz"[axis]
    up_lab = [i for i, l in enumerate(labels) if l.upper() in _HEAD]
    dn_lab = [i for i, l in enumerate(labels) if l.upper() in _FEET]
    if up_lab and dn_lab:
        with warnings.catch_warnings():  # all-NaN frames are expected in gappy data
            warnings.simplefilter("ignore", RuntimeWarning)
            d = np.nanmean(pos[:, up_lab, axis], axis=1) - np.nanmean(pos[:, dn_lab, axis], axis=1)
        d = d[~np.isnan(d)]
        if d.size and abs(np.median(d)) > 0.1 * ext[axis]:
            return name if np.median(d) > 0 else "-" + name
    vals = pos[..., axis][~np.isnan(pos[..., axis])]
    lo, hi = np.percentile(vals, [2, 98])
    return name if abs(lo) <= abs(hi) else "-" + name


# ----------------------------------------------------------------------------------------------
# public API


def read_c3d(path, up: str | None = None, points: str = "markers") -> MarkerTrajectories:
    """Read a C3D file into ``MarkerTrajectories`` (metres, Z-up world).

    Args:
        path: the ``.c3d`` file (never modified).
        up: the file's vertical axis (``'z'``, ``'y'``, ``'-y'``, …) or None to detect it from
            the markers; data are rotated (proper rotation) so that it becomes +Z.
        points: ``'markers'`` (physical markers only) or ``'all'`` (also virtual points and
            model outputs, flagged in ``is_virtual``; non-length outputs such as angles or
            forces are scaled and rotated like positions and mean nothing as positions).

    Returns:
        ``MarkerTrajectories`` with ``pos (F, M, 3)`` m, NaN where a sample is invalid (residual
        < 0, NaN, infinite, or exactly (0, 0, 0)). ``meta``: path, format, unit, unit_source
        (declared|inferred|assumed), up, up_source (declared: ``up=``; file: the file's
        ``POINT:Y_SCREEN`` (with ``X_SCREEN``), warned when the markers stand along another
        axis; detected: from the marker cloud, without those; assumed only when there is no
        valid marker data, then +z), first_frame (1-based, as in the header),
        n_points_in_file, n_virtual, processor, parser, subject_parameters (the ``PROCESSING``
        group's numbers, e.g. Plug-in Gait's ``LKneeWidth`` in mm, when the file has them),
        analog_rate (when the file has analog channels), analog_only (True for files with
        analog data but no points), nonfinite_samples (when some valid-flagged samples held
        infinite coordinates).

    Raises:
        FileFormatError: empty, truncated, corrupt or unsupported (MIPS) files; files whose
            header declares points that the parser cannot find.
        UnitError: an unknown ``up``.
    """
    require_path("read_c3d", path)
    path = Path(path)
    R = None if up is None else up_to_zup_matrix(up)  # validates ``up`` before any work
    if points not in ("markers", "all"):
        raise UnknownNameError(f"unknown points option {points!r}; known: markers, all")
    hdr = _precheck(path)
    raw, parser = _parse(path)
    params = raw["params"]

    pts = np.asarray(raw.pop("points"), float)  # (3, N, F) file units; raw lets go of it
    n, n_parsed = pts.shape[1], pts.shape[2]
    n_frames = n_parsed
    if n_parsed >= SATURATED and hdr["n_points"] == n:
        # Saturated counts: ezc3d stops at 65535 frames where ROTATION:DATA_START bounds the
        # data (its own writer), and reads to the end of the file where nothing does, the
        # last block's padding as frames (``write_c3d``'s files)
        n_frames = max(SATURATED, _long_take_frames(path, hdr, params))
    kept = min(n_parsed, n_frames)
    # One (F, N, 3) array filled in place (a long take's frames past 65535 in blocks straight
    # from the file): reading costs little more than the take itself.
    pos = np.empty((n_frames, n, 3))
    pos[:kept] = np.transpose(pts[:, :, :kept], (2, 1, 0))
    res = np.empty((n, n_frames))
    res[:, :kept] = np.asarray(raw.pop("residuals"), float).reshape(n, n_parsed)[:, :kept]
    del pts
    for s in range(kept, n_frames, _READ_BLOCK):
        e = min(s + _READ_BLOCK, n_frames)
        more, res[:, s:e] = _read_frames(path, hdr, s, e)
        pos[s:e] = np.transpose(more, (2, 1, 0))
    if hdr["n_points"] > 0 and n == 0:
        raise FileFormatError(
            f"has 3D data for {hdr['n_points']} points but no POINT parameters (labels, units, "
            f"rate); cannot read it safely", path)
    analog_used = int((_param(params, "ANALOG", "USED") or [0])[0] or 0)
    rate = float((_param(params, "POINT", "RATE") or [0.0])[0] or 0.0)
    if not (np.isfinite(rate) and rate > 0):
        rate = float(raw["header"].get("frame_rate") or hdr["rate"] or 0.0)
    if not (np.isfinite(rate) and rate > 0):
        raise FileFormatError("has no valid frame rate (POINT:RATE or header); cannot read it", path)

    del raw
    # Infinite coordinates (a broken exporter) are missing samples too; counted in meta.
    nonfinite = np.isinf(pos).any(axis=2) & ~(res.T < 0)
    bad = (res.T < 0) | ~np.isfinite(pos).all(axis=2) | np.all(pos == 0.0, axis=2)
    pos[bad] = np.nan

    labels, subject, prefixes = _labels_and_subject(params, n)
    virt = _virtual(labels, params, res, prefixes)
    labels = _unique(labels, path)

    # Unit and up axis are judged on at most ~20000 frames spread over the take: as sure, and
    # no whole-take copy of a long one.
    sample = slice(None, None, max(1, n_frames // 20000))
    unit, scale, unit_source = _unit(params, pos[sample][:, ~virt], path)
    pos *= scale

    def signed(a: str) -> str:
        return a if a[0] == "-" else "+" + a

    if R is not None:
        up_name, up_source = str(up).strip().lower(), "declared"
    else:
        det = _detect_up(pos[sample][:, ~virt], [l for l, v in zip(labels, virt) if not v])
        screen = _screen_up(params)
        if screen is not None:
            # the file's word: the marker cloud misjudges a subject lying down, or two
            # subjects metres apart (its widest spread taken for the vertical)
            up_name, up_source = screen, "file"
            if det and det != screen:
                warnings.warn(f"{path}: the file declares {signed(screen)} up (POINT:Y_SCREEN) "
                              f"but its markers stand along {signed(det)}; kept the file's, "
                              f"pass up= to override", stacklevel=2)
        else:
            up_name, up_source = (det, "detected") if det else ("z", "assumed")
        R = up_to_zup_matrix(up_name)
        if up_source == "detected" and up_name != "z":
            warnings.warn(f"{path}: vertical axis detected as {signed(up_name)}, rotated to +Z; "
                          f"pass up= to override", stacklevel=2)
    if up_name != "z":
        for s in range(0, n_frames, _READ_BLOCK):      # in place, in blocks
            pos[s:s + _READ_BLOCK] = pos[s:s + _READ_BLOCK] @ R.T

    meta = {
        "path": str(path), "format": "c3d", "unit": unit, "unit_source": unit_source,
        "up": up_name, "up_source": up_source, "first_frame": _first_frame(hdr, params),
        "n_points_in_file": n, "n_virtual": int(virt.sum()), "processor": hdr["processor"],
        "parser": parser,
    }
    subject_params = _numbers(params.get("PROCESSING", {}))
    if subject_params:
        meta["subject_parameters"] = subject_params
    if nonfinite.any():
        meta["nonfinite_samples"] = int(nonfinite[:, ~virt if points == "markers" else
                                                  slice(None)].sum())
        warnings.warn(f"{path}: {int(nonfinite.sum())} samples have infinite coordinates; read "
                      f"as missing", stacklevel=2)
    if analog_used > 0 or hdr["analog_per_frame"] > 0:
        arate = float((_param(params, "ANALOG", "RATE") or [0.0])[0] or 0.0)
        if arate > 0:
            meta["analog_rate"] = arate
        if n == 0:
            meta["analog_only"] = True
    keep = ~virt if points == "markers" else np.ones(n, bool)
    if not keep.all():
        pos = pos[:, keep]
    pos.setflags(write=False)        # read-only and owning: the type keeps it without a copy
    # each sample's residual (m; 0 = computed by the software that wrote it), kept so that a
    # cleaned capture can tell its measured samples from what it filled in
    # (float32, in blocks: a one-hour take's is 71 MB, with no float64 copy on the way)
    residual = np.empty((n_frames, int(keep.sum())), np.float32)
    for s in range(0, n_frames, _READ_BLOCK):
        e = min(s + _READ_BLOCK, n_frames)
        residual[s:e] = np.where(bad[s:e], np.nan, res[:, s:e].T * scale)[:, keep]
    residual.setflags(write=False)
    return MarkerTrajectories(
        labels=tuple(l for l, k in zip(labels, keep) if k), fps=rate, pos=pos,
        is_virtual=virt[keep], subject=subject, meta=meta, residual=residual)


def write_c3d(markers: MarkerTrajectories, path) -> None:
    """Write ``markers`` as a C3D (mm, float storage, Z up), atomically.

    Missing samples (NaN in ``pos (F, M, 3)`` m) are written with residual -1, the C3D flag for
    invalid that every reader honours; the others with ``markers.residual`` in whole mm (0:
    computed, as a gap-filled sample; a measured one at least 1 mm, at most 255), or 0 where
    it is unknown (NaN, or no residuals). Virtual points are listed in ``POINT:VIRTUAL`` (and
    described as ``'virtual'``), which ``read_c3d`` uses to restore ``is_virtual``; the
    subject goes to ``SUBJECTS:NAMES``; the first frame's number is ``meta['first_frame']``
    (1-based, as ``read_c3d`` gives it). ``markers`` is not modified.
    """
    require_type("write_c3d", markers, MarkerTrajectories, "read_c3d(PATH)")
    pos, res = markers.pos, markers.residual
    write_c3d_frames(lambda a, b: (pos[a:b], None if res is None else res[a:b]), len(pos),
                     markers.labels, markers.fps, path, markers.is_virtual, markers.subject,
                     markers.meta.get("first_frame", 1))


def write_c3d_frames(frames, n_frames: int, labels, fps: float, path, is_virtual=None,
                     subject: str = "", first_frame: int = 1) -> None:
    """``write_c3d`` of a take given a block of frames at a time: ``frames(a, b)`` returns
    ``(pos (b - a, M, 3) m, residual (b - a, M) m or None)`` of frames ``[a, b)`` of
    ``n_frames``, ``M = len(labels)``; ``is_virtual`` ``(M,)`` bool. Memory does not grow with
    the take (``_c3d_write.BLOCK`` frames at a time): a solve's cleaned capture is written
    without a whole-take copy of it."""
    from ._c3d_write import write_points

    labels = [str(l) for l in labels]
    m = len(labels)
    if m == 0:
        raise ShapeError("cannot write a C3D without points (0 markers)")
    if n_frames == 0:
        raise ShapeError("cannot write a C3D of 0 frames")
    if m > SATURATED:
        raise ShapeError(f"cannot write a C3D of {m} points (the format holds {SATURATED})")
    if bad_number(fps, positive=True):
        raise ShapeError(f"cannot write a C3D at {fps} frames per second (a rate > 0)")
    # the take's first frame number, so that a cleaned capture's frames keep the numbers of
    # the original's
    first = int(first_frame or 1)
    if not 1 <= first <= 0xFFFFFFFF - n_frames:
        raise ShapeError(f"cannot write a C3D whose first frame is {first} (1 or more)")
    long = [l for l in labels + [subject or ""] if len(l.encode("utf-8")) > 255]
    if long:
        raise ShapeError(f"cannot write a C3D label of more than 255 bytes: {long[0][:40]}...")
    virt = np.zeros(m, bool) if is_virtual is None else np.asarray(is_virtual, bool)
    if virt.shape != (m,):
        raise ShapeError(f"is_virtual: expected shape ({m},), got {virt.shape}")
    descriptions = ["virtual" if v else "marker" for v in virt]
    virtual = [l for l, v in zip(labels, virt) if v]
    # The temporary name ends in .c3d, as ezc3d's writer needed (kept: the same names).
    with atomic_path(path, suffix=".tmp.c3d") as tmp:
        with open(tmp, "wb") as fh:
            write_points(fh, frames, n_frames, m, labels, descriptions, virtual, float(fps),
                         first, subject or None)

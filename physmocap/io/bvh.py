"""BVH reading and writing: the only place where Euler angles exist.

Reading accepts any per-joint channel count and order, End Sites, CRLF, tabs, scientific notation
and joints in any hierarchy order. Position channels *replace* a joint's OFFSET (as Blender's and
most importers do). At the boundary, lengths are converted to metres and the file's up axis to the
Z-up world by changing the root's rotation and translation only, so local rotations and offsets
round-trip exactly.

Writing produces the most portable flavour: ``CHANNELS 6`` (Xposition Yposition Zposition then the
rotations) on the root, ``CHANNELS 3`` on every other joint, one rotation order for all joints
(``ZXY`` unless asked), an End Site on every leaf, and a ``Frame Time`` with ten significant digits.
"""
from __future__ import annotations

import io
import logging
import re
import warnings
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

from .. import quat
from ..conventions import (canonical_unit, infer_length_unit, snap_fps, unit_scale,
                           up_to_zup_matrix)
from ..errors import (FileFormatError, PhysmocapError, UnitError, bad_count, require_path,
                      require_type)
from ..motion import Motion
from ..skeleton import Skeleton
from .atomic import atomic_path

__all__ = ["read_bvh", "loads_bvh", "write_bvh", "parse_bvh", "bvh_to_motion", "BvhFile"]

log = logging.getLogger("physmocap")

_AXES = {"x": 0, "y": 1, "z": 2}
_MAX_JOINTS = 10_000
_MAX_CHANNELS = 6
_CHANNEL_NAMES = {f"{a}{k}" for a in "xyz" for k in ("position", "rotation")}


class BvhFile:
    """A parsed BVH before unit and axis conversion (file units, file axes, degrees).

    Attributes:
        names: joint names in hierarchy order; ``parents``: parent indices (-1 for the root).
        offsets: ``(J, 3)`` file units; ``end_sites``: ``(J, 3)``, NaN where a joint has none.
        channels: per joint, the channel names as written (``Xposition``, ``Zrotation``, …).
        frame_time: seconds per frame; ``data``: ``(F, C)`` channel values, in hierarchy order.
    """

    def __init__(self, names, parents, offsets, end_sites, channels, frame_time, data):
        self.names = names
        self.parents = parents
        self.offsets = offsets
        self.end_sites = end_sites
        self.channels = channels
        self.frame_time = frame_time
        self.data = data

    @property
    def n_frames(self) -> int:
        return self.data.shape[0]


#: No number in a BVH file is larger (10 000 km in centimetres, 2.8 million turns in degrees):
#: beyond it a file is damaged, and squares of such numbers overflow downstream.
_LIMIT = 1e9


def _float(tok: str, path, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise FileFormatError(f"{what}: {tok[:40]!r} is not a number", path) from None
    if not abs(v) <= _LIMIT:                             # also NaN
        raise FileFormatError(f"{what}: {tok[:40]!r} is not a finite number within "
                              f"±{_LIMIT:g}; the file is damaged", path)
    return v


def parse_bvh(text: str, path: object = "<bvh>") -> BvhFile:
    """Parse BVH text into a ``BvhFile`` (no conversion). Raises ``FileFormatError``."""
    if "\r" in text:                     # CRLF, and old Mac files' lone CR line ends
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    m = re.search(r"^\s*MOTION\s*$", text, flags=re.MULTILINE)
    if m is None:
        raise FileFormatError("no MOTION section; is this a BVH file?", path)
    toks = text[:m.start()].split()
    motion_text = text[m.end():]
    if not toks or toks[0].upper() != "HIERARCHY":
        raise FileFormatError("does not start with HIERARCHY; is this a BVH file?", path)

    names: list[str] = []
    parents: list[int] = []
    offsets: list[list[float]] = []
    ends: list[list[float]] = []
    channels: list[list[str]] = []
    stack: list[int] = []          # joint indices of the open braces; -2 marks an End Site
    pending: int | None = None     # joint (or -2) declared, waiting for its "{"
    i, n = 1, len(toks)

    def need(k: int, what: str) -> list[str]:
        if i + k > n:
            raise FileFormatError(f"hierarchy ends inside {what}; the file is truncated", path)
        return toks[i:i + k]

    while i < n:
        t = toks[i]
        tu = t.upper()
        if tu in ("ROOT", "JOINT"):
            if tu == "ROOT" and names:
                raise FileFormatError("more than one ROOT; physmocap reads one skeleton per file",
                                      path)
            if tu == "JOINT" and (not stack or stack[-1] < 0):
                raise FileFormatError("JOINT outside a joint's braces", path)
            (name,) = need(2, tu)[1:]
            if len(names) >= _MAX_JOINTS:
                raise FileFormatError(f"more than {_MAX_JOINTS} joints", path)
            names.append(name)
            parents.append(stack[-1] if stack else -1)
            offsets.append([np.nan] * 3)
            ends.append([np.nan] * 3)
            channels.append([])
            pending = len(names) - 1
            i += 2
        elif tu == "END":
            if not stack or stack[-1] < 0:
                raise FileFormatError("End Site outside a joint's braces", path)
            need(2, "End Site")
            pending = -2
            i += 2
            if i + 1 < n and toks[i] != "{" and toks[i + 1] == "{":
                i += 1            # a name after End Site (some exporters write one): ignored
        elif t == "{":
            if pending is None:
                raise FileFormatError("'{' without a ROOT, JOINT or End Site before it", path)
            stack.append(pending if pending != -2 else -2 - stack[-1])
            pending = None
            i += 1
        elif t == "}":
            if not stack:
                raise FileFormatError("unbalanced '}' in the hierarchy", path)
            stack.pop()
            i += 1
        elif tu == "OFFSET":
            if not stack:
                raise FileFormatError("OFFSET outside a joint", path)
            vals = [_float(v, path, "OFFSET") for v in need(4, "OFFSET")[1:]]
            top = stack[-1]
            if top >= 0:
                offsets[top] = vals
            else:                                   # End Site of joint -2 - top
                ends[-2 - top] = vals
            i += 4
        elif tu == "CHANNELS":
            if not stack or stack[-1] < 0:
                raise FileFormatError("CHANNELS outside a joint", path)
            (cnt,) = need(2, "CHANNELS")[1:]
            if not cnt.isdigit() or not 0 <= int(cnt) <= _MAX_CHANNELS:
                raise FileFormatError(f"CHANNELS count {cnt[:20]!r} is not 0..6", path)
            chans = need(2 + int(cnt), "CHANNELS")[2:]
            for c in chans:
                if c.lower() not in _CHANNEL_NAMES:
                    raise FileFormatError(f"unknown channel {c[:30]!r} on joint "
                                          f"{names[stack[-1]]!r}", path)
            channels[stack[-1]] = chans
            i += 2 + int(cnt)
        else:
            raise FileFormatError(f"unexpected {t[:30]!r} in the hierarchy", path)
    if stack or pending is not None:
        raise FileFormatError("hierarchy braces are not closed; the file is truncated", path)
    if not names:
        raise FileFormatError("the hierarchy has no ROOT joint", path)
    for j, off in enumerate(offsets):
        if np.isnan(off[0]):
            raise FileFormatError(f"joint {names[j]!r} has no OFFSET", path)
    if len(set(names)) != len(names):
        dup = sorted({x for x in names if names.count(x) > 1})
        raise FileFormatError(f"duplicate joint names {', '.join(dup[:5])}", path)

    # MOTION: "Frames: N", "Frame Time: t", then N rows of numbers.
    head = re.match(r"\s*Frames\s*:\s*(\S+)\s+Frame\s+Time\s*:\s*(\S+)", motion_text,
                    flags=re.IGNORECASE)
    if head is None:
        raise FileFormatError("MOTION must be followed by 'Frames: N' and 'Frame Time: T'", path)
    frames_tok, ft_tok = head.groups()
    if not frames_tok.isdigit():
        raise FileFormatError(f"'Frames: {frames_tok[:20]}' is not a whole number", path)
    n_frames = int(frames_tok)
    frame_time = _float(ft_tok, path, "Frame Time")
    if not frame_time > 0:                              # ``_float``: finite
        raise FileFormatError(f"Frame Time {ft_tok[:20]} must be a positive number of seconds",
                              path)
    n_chan = sum(len(c) for c in channels)
    body = motion_text[head.end():]
    values = _parse_numbers(body, n_frames, n_chan, path)
    data = values.reshape(n_frames, n_chan)
    return BvhFile(names, np.array(parents), np.array(offsets, float), np.array(ends, float),
                   channels, frame_time, data)


def _parse_numbers(body: str, n_frames: int, n_chan: int, path) -> np.ndarray:
    """The motion block as a flat float array of ``n_frames * n_chan`` finite numbers."""
    expected = n_frames * n_chan
    values = None
    if n_frames and n_chan:
        try:  # fast path: one row per line, as every exporter writes
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # loadtxt warns on empty input
                rows = np.loadtxt(body.splitlines(), dtype=np.float64, ndmin=2)
            if rows.shape == (n_frames, n_chan):
                values = rows.ravel()
        except ValueError:
            pass
    if values is None:  # any whitespace layout, and precise error messages
        toks = body.split()
        try:
            values = np.array(toks, dtype=np.float64)
        except ValueError:
            bad = next(tok for tok in toks if not _is_float(tok))
            raise FileFormatError(f"motion data holds {bad[:30]!r}, which is not a number",
                                  path) from None
    if values.size != expected:
        # Both a truncated file and a channel count that does not fit the rows end up here.
        rows_seen = values.size / n_chan if n_chan else 0
        raise FileFormatError(
            f"motion data has {values.size} numbers but Frames: {n_frames} x {n_chan} channels "
            f"needs {expected} (~{rows_seen:.1f} rows); the file is truncated or a CHANNELS "
            f"count is wrong", path)
    bad = np.flatnonzero(~(np.abs(values) <= _LIMIT))     # one pass: NaN, inf, too large
    if bad.size:
        v = values[bad]
        if not np.all(np.isfinite(v)):
            raise FileFormatError("motion data holds NaN or infinite values", path)
        f, c = divmod(int(bad[0]), n_chan)
        raise FileFormatError(f"motion data holds {v[0]:g} (frame {f}, channel {c}), "
                              f"beyond ±{_LIMIT:g}; the file is damaged", path)
    return values


def _euler_to_quat(order: str, deg: np.ndarray) -> np.ndarray:
    """Intrinsic Euler angles ``(N, k)`` in degrees, axes ``order`` (e.g. ``'ZXY'``: rotate about
    Z, then the new X, then the new Y), to xyzw quaternions ``(N, 4)``: q = q1 * q2 * q3."""
    half = np.radians(deg) * 0.5
    q = None
    for i, axis in enumerate(order):
        qa = np.zeros((len(deg), 4))
        qa[:, "XYZ".index(axis)] = np.sin(half[:, i])
        qa[:, 3] = np.cos(half[:, i])
        q = qa if q is None else quat.mul(q, qa)
    return q


def _is_float(tok: str) -> bool:
    try:
        float(tok)
        return True
    except ValueError:
        return False


def _joint_local_frames(bvh: BvhFile) -> tuple[np.ndarray, np.ndarray]:
    """Local translations ``(F, J, 3)`` (file units) and rotations ``(F, J, 4)`` of every joint.

    A position channel replaces the OFFSET component it names; rotation channels are intrinsic
    Euler angles in the order written.
    """
    F, J = bvh.n_frames, len(bvh.names)
    lpos = np.broadcast_to(bvh.offsets, (F, J, 3)).copy()
    lrot = quat.identity((F, J))
    col = 0
    groups: dict[str, list[tuple[int, list[int]]]] = {}
    for j, chans in enumerate(bvh.channels):
        rot_cols, order = [], ""
        for c in chans:
            axis = _AXES[c[0].lower()]
            if c.lower().endswith("position"):
                lpos[:, j, axis] = bvh.data[:, col]
            else:
                rot_cols.append(col)
                order += "XYZ"[axis]
            col += 1
        if order:
            groups.setdefault(order, []).append((j, rot_cols))
    # One call per distinct rotation order, vectorised over frames and joints.
    for order, members in groups.items():
        js = [j for j, _ in members]
        cols = np.array([c for _, c in members])                    # (Jg, k)
        ang = bvh.data[:, cols].reshape(-1, len(order))             # (F*Jg, k) degrees
        q = _euler_to_quat(order, ang)
        lrot[:, js] = q.reshape(F, len(js), 4)
    return lpos, lrot


def _is_static(a: np.ndarray, tol: float) -> bool:
    return a.shape[0] == 0 or float(np.max(np.abs(a - a[:1]))) <= tol


def read_bvh(path, unit: str | None = None, up: str = "y", reroot: bool = True) -> Motion:
    """Read a BVH file into a ``Motion`` in metres and the Z-up world.

    Args:
        path: the file.
        unit: the file's length unit (``'cm'``, ``'m'``, ``'mm'``, ``'in'``, ``'cmu'`` = 1/0.45 inch);
            ``None`` infers it from the rest skeleton's height (a person of 0.5-2.5 m) and records
            ``meta['unit_inferred'] = True``.
        up: the file's up axis (``'y'`` for almost every BVH; ``'z'`` for Z-up exports).
        reroot: when the root joint never moves (a static ``joint_Root`` as in Bandai-Namco files)
            and its only child carries the motion, make that child the root.
    Returns:
        ``Motion`` whose ``meta`` records ``path``, ``unit``, ``unit_inferred``, ``up``,
        ``rotation_orders`` and ``dropped_root``.
    Raises:
        FileFormatError: unreadable, truncated or inconsistent file (one line naming it).
    """
    require_path("read_bvh", path)
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FileFormatError(f"cannot read ({exc.strerror or exc})", path) from None
    if not raw.strip():
        raise FileFormatError("file is empty", path)
    if b"\x00" in raw[:4096]:
        raise FileFormatError("binary data, not BVH text", path)
    text = raw.decode("utf-8", errors="replace")
    bvh = parse_bvh(text, path)
    return bvh_to_motion(bvh, path, unit=unit, up=up, reroot=reroot)


def loads_bvh(text: str, unit: str | None = None, up: str = "y", reroot: bool = True,
              name: str = "<bvh text>") -> Motion:
    """``read_bvh`` for BVH text already in memory."""
    return bvh_to_motion(parse_bvh(text, name), name, unit=unit, up=up, reroot=reroot)


def bvh_to_motion(bvh: BvhFile, path="<bvh>", unit: str | None = None, up: str = "y",
                  reroot: bool = True) -> Motion:
    """Convert a parsed ``BvhFile`` to a ``Motion`` (see ``read_bvh``)."""
    lpos, lrot = _joint_local_frames(bvh)
    names, parents = list(bvh.names), bvh.parents.copy()
    offsets, ends = bvh.offsets.copy(), bvh.end_sites.copy()
    dropped = None
    # Bandai-Namco style: a static root whose single child carries the real root motion.
    kids = np.flatnonzero(parents == 0)
    has_pos = [any(c.lower().endswith("position") for c in ch) for ch in bvh.channels]
    if (reroot and len(names) > 1 and len(kids) == 1 and has_pos[kids[0]]
            and _is_static(lpos[:, 0], 1e-9) and _is_static(lrot[:, 0], 1e-9)):
        # Depth-first order puts the root's only child at index 1.
        lpos[:, 1] = lpos[:, 0] + quat.rotate(lrot[:, 0], lpos[:, 1])
        lrot[:, 1] = quat.mul(lrot[:, 0], lrot[:, 1])
        offsets[1] = offsets[0] + quat.rotate(lrot[0, 0] if len(lrot) else quat.identity(),
                                              offsets[1])
        dropped = names[0]
        names, offsets, ends = names[1:], offsets[1:], ends[1:]
        parents = parents[1:] - 1
        lpos, lrot = lpos[:, 1:], lrot[:, 1:]
        has_pos = has_pos[1:]
    # Fixed limb lengths: a non-root joint's translation may not change over time.
    for j in range(1, len(names)):
        if has_pos[j]:
            # (``initial``: a file of no frames has no translation to compare)
            size = float(np.abs(lpos[:, j]).max(initial=0.0))
            if not _is_static(lpos[:, j], 1e-4 * max(1.0, size)):
                raise FileFormatError(
                    f"joint {names[j]!r} changes its translation over time; physmocap keeps limb "
                    f"lengths fixed (only the root may translate)", path)
            if len(lpos):
                offsets[j] = lpos[0, j]

    # Units: stated, or inferred from the rest height along the up axis.
    R = up_to_zup_matrix(up)
    sk_file = Skeleton(names, parents, offsets, ends)
    inferred = unit is None
    if inferred:
        span = _tree_span(sk_file)
        try:
            # feet too: write_bvh writes them, and a file in feet read as CMU units came back
            # 0.24 m tall (no real file here changes: all 155 read as before)
            unit = infer_length_unit(span, candidates=("m", "cm", "mm", "cmu", "in", "ft"))
        except UnitError as exc:
            raise FileFormatError(exc.reason, path) from None
        log.info("%s: no unit in BVH; inferred %s from a limb span of %.4g", path, unit, span)
    try:
        scale = unit_scale(unit)
        unit = canonical_unit(unit)
    except UnitError as exc:
        raise UnitError(exc.reason, path) from None
    qR = quat.from_matrix(R)
    root_pos = (lpos[:, 0] @ R.T) * scale
    lrot[:, 0] = quat.mul(qR, lrot[:, 0])
    offsets = offsets * scale
    offsets[0] = R @ offsets[0]
    skeleton = Skeleton(names, parents, offsets, ends * scale)
    orders = sorted({"".join(c[0].upper() for c in ch if c.lower().endswith("rotation"))
                     for ch in bvh.channels} - {""})
    meta = {"path": str(path), "format": "bvh", "unit": unit, "unit_inferred": inferred,
            "up": up, "rotation_orders": orders, "dropped_root": dropped}
    return Motion(skeleton, snap_fps(1.0 / bvh.frame_time), root_pos,
                  quat.normalize(lrot), meta)


def _tree_span(sk: Skeleton) -> float:
    """Longest path (sum of bone lengths, End Sites included) between two leaves of the tree.

    For a person this is head-to-toe or fingertip-to-fingertip, both close to body height,
    and unlike a rest-pose extent it does not depend on how the rest pose folds the limbs.
    """
    J = len(sk)
    bone = sk.bone_lengths()
    ends = np.nan_to_num(np.linalg.norm(sk.end_sites, axis=-1))
    down = ends.copy()          # longest path from each joint down into its subtree
    best = 0.0
    for j in range(J - 1, -1, -1):     # children have larger indices than parents
        kids = sorted((down[c] + bone[c] for c in sk.children(j)), reverse=True)
        paths = kids + [ends[j]]
        paths.sort(reverse=True)
        down[j] = paths[0]
        best = max(best, paths[0] + (paths[1] if len(paths) > 1 else 0.0))
    return float(best)


def write_bvh(motion: Motion, path, unit: str = "cm", up: str = "y", order: str = "ZXY",
              decimals: int = 6) -> None:
    """Write ``motion`` as a portable BVH, atomically.

    Args:
        motion: the motion (metres, Z-up).
        path: output file; replaced only by a complete new file.
        unit: length unit of the file (``'cm'`` suits Unity, MotionBuilder; Blender: import scale 0.01).
        up: up axis of the file (``'y'``, the BVH convention).
        order: rotation order of every joint, intrinsic, as in ``CHANNELS`` (``'ZXY'``).
        decimals: digits after the point for positions and angles.
    """
    require_type("write_bvh", motion, Motion, "read_bvh(PATH), or Motion(...)")
    if bad_count(decimals, 0) or decimals > 15:
        raise PhysmocapError(f"decimals must be a whole number 0..15, got {decimals!r}")
    order = order.upper()
    if sorted(order) != ["X", "Y", "Z"]:
        raise PhysmocapError(f"rotation order {order!r} must be a permutation of XYZ")
    scale = unit_scale(unit)
    R = up_to_zup_matrix(up)
    motion = motion.turned_rest(upright_turn(motion, up))
    sk = motion.skeleton
    bad = [n for n in sk.names if not n or any(ch.isspace() for ch in n) or n in "{}"]
    if bad:
        raise PhysmocapError(f"joint names {bad[:3]} cannot be written to BVH (empty, braces or "
                             f"white space); rename them first", path)
    F, J = motion.n_frames, len(sk)

    offsets = sk.offsets / scale
    offsets[0] = R.T @ sk.offsets[0] / scale
    ends = sk.end_sites / scale

    out = io.StringIO()
    w = out.write
    fmt = f"{{:.{decimals}f}}"
    rot_names = " ".join(f"{a}rotation" for a in order)
    w("HIERARCHY\n")
    children = [sk.children(j) for j in range(J)]

    # Iterative depth-first walk (no recursion limit on deep chains). The channel columns follow
    # the order joints appear in the written hierarchy, which need not be index order.
    dfs: list[int] = []
    stack: list[tuple[bool, int, int]] = [(True, 0, 0)]
    while stack:
        opening, j, depth = stack.pop()
        ind = "\t" * depth
        if opening:
            dfs.append(j)
            w(f"{ind}{'ROOT' if j == 0 else 'JOINT'} {sk.names[j]}\n{ind}{{\n")
            w(f"{ind}\tOFFSET {' '.join(fmt.format(v) for v in offsets[j])}\n")
            if j == 0:
                w(f"{ind}\tCHANNELS 6 Xposition Yposition Zposition {rot_names}\n")
            else:
                w(f"{ind}\tCHANNELS 3 {rot_names}\n")
            stack.append((False, j, depth))
            stack.extend((True, c, depth + 1) for c in reversed(children[j]))
        else:
            if not children[j] or not np.isnan(ends[j, 0]):
                end = ends[j] if not np.isnan(ends[j, 0]) else _default_end(offsets[j])
                w(f"{ind}\tEnd Site\n{ind}\t{{\n")
                w(f"{ind}\t\tOFFSET {' '.join(fmt.format(v) for v in end)}\n{ind}\t}}\n")
            w(f"{ind}}}\n")
    w("MOTION\n")
    w(f"Frames: {F}\n")
    w(f"Frame Time: {1.0 / motion.fps:.10g}\n")
    to_file = quat.conj(quat.from_matrix(R))
    prev = None                                  # the last written frame's angles (J, 3)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(out.getvalue())
        # Frames in blocks, straight to the file: a long take needs no whole-take text or
        # angle arrays in memory.
        for s in range(0, F, _WRITE_BLOCK):
            b = slice(s, s + _WRITE_BLOCK)
            n = len(motion.root_pos[b])
            # Back to file axes: only the root's translation and rotation change.
            root_pos = (motion.root_pos[b] @ R) / scale
            lrot = motion.lrot[b].copy()
            lrot[:, 0] = quat.mul(to_file, lrot[:, 0])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # gimbal lock: the angles still give the rotation
                eul = Rotation.from_quat(lrot.reshape(-1, 4)).as_euler(order, degrees=True)
            eul = continuous_euler(eul.reshape(n, J, 3), prev)
            prev = eul[-1]
            cols = np.concatenate([root_pos, eul[:, dfs].reshape(n, -1)], axis=1)
            np.savetxt(fh, cols, fmt=f"%.{decimals}f", delimiter=" ")


def upright_turn(motion: Motion, up: str = "y") -> np.ndarray:
    """``(3, 3)``: the turn of ``motion``'s joint frames (``Motion.turned_rest``) that
    ``write_bvh`` writes a file of up axis ``up`` with, so that the file's rest pose stands
    along that axis, for a skeleton whose rest stands along Z (the body templates: a solve,
    matched or played motion); in a Y-up file also facing +Z with its left at +X, as BVH
    files' rest poses do (CMU's, Bandai-Namco's; the templates face +X, left +Y). Else the
    identity: a skeleton read from a file of that up axis keeps its own frames, so its round
    trip is exact. Judged by the root: its rotation in the file, over the frames, nearer a
    turn about the file's up axis with which.

    Why: written with a Z-up rest into a Y-up file, the rest pose lies on its back (tools that
    take the rest for a T-pose, as characterisation for retargeting does, see a lying
    figure), and the root's middle Euler angle sits at -90° in every upright frame, where its
    other two are undefined.
    """
    R = up_to_zup_matrix(up)
    if motion.n_frames == 0 or np.allclose(R, np.eye(3)):
        return np.eye(3)
    u = R.T @ np.array([0.0, 0.0, 1.0])                 # the file's up axis, file axes
    q0 = motion.lrot[:: max(1, motion.n_frames // 1000), 0]
    to_file = quat.conj(quat.from_matrix(R))

    def tilt(C: np.ndarray) -> float:
        g = quat.mul(quat.mul(to_file, q0), quat.conj(quat.from_matrix(C)))
        return float(np.median(quat.rotate(g, u) @ u))          # cos of the tilt
    # file x, y, z = the template's left, up, forward (Y up); else its up to the file's
    turn = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]) \
        if up.strip().lower() in ("y", "+y") else R.T
    return turn if tilt(turn) > tilt(np.eye(3)) + 0.1 else np.eye(3)


#: Frames formatted at a time by ``write_bvh``.
_WRITE_BLOCK = 4096


def continuous_euler(eul: np.ndarray, prev: np.ndarray | None = None) -> np.ndarray:
    """Euler angles ``(F, J, 3)`` degrees (any intrinsic order, each frame on its own, as
    ``Rotation.as_euler`` gives them) made continuous over frames: each frame takes, of the
    two angle triples of its rotation (``(a, b, c)`` and ``(a + 180, 180 - b, c + 180)``) and
    their whole turns, the one nearest the frame before (``prev (J, 3)`` before the first; if
    ``None`` the first frame is kept). Every frame keeps its rotation.

    Why: per frame, a steady turn past ±180° jumps by 360° between two frames (a walk that
    turns round), and a middle angle past ±90° flips the other two by 180° (a hip flexed past
    90°); a tool that interpolates the curves (resampling, retiming, filters) turns the joint
    the long way round there.
    """
    eul = np.asarray(eul, float)
    if len(eul) == 0:
        return eul.copy()
    alt = eul + np.array([180.0, 0.0, 180.0])
    alt[..., 1] = 180.0 - eul[..., 1]

    def dist(x, y):                 # summed angle differences, each to the nearest whole turn
        d = x - y
        return np.abs(d - 360.0 * np.round(d / 360.0)).sum(axis=-1)

    # Whether a frame takes the other triple than the frame before does needs no history: the
    # two distances compared are the same from either triple of the frame before (``alt`` is
    # its triple's mirror), so the choices are a running parity of per-frame switches.
    switch = np.zeros(eul.shape[:-1], bool)
    switch[1:] = dist(alt[1:], eul[:-1]) < dist(eul[1:], eul[:-1])
    if prev is not None:
        prev = np.asarray(prev, float)
        switch[0] = dist(alt[0], prev) < dist(eul[0], prev)
    odd = (np.cumsum(switch, axis=0) % 2).astype(bool)[..., None]
    out = np.where(odd, alt, eul)
    # then the whole turns: each angle nearest the one before
    first = out[:1] if prev is None else prev[None]
    return np.unwrap(np.concatenate([first, out]), period=360.0, axis=0)[1:]


def _default_end(offset: np.ndarray) -> np.ndarray:
    """A short End Site for a leaf that had none: importers give leaf bones a length from it."""
    n = float(np.linalg.norm(offset))
    return offset * 0.25 if n > 0 else np.array([0.0, 0.0, 1.0])

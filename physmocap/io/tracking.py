"""Three-point tracking files (head + two hand controllers): CSV, metres, seconds, Z up, xyzw.

Schema (documented for users in ``scenes/README.md``)::

    # any number of comment lines starting with '#'
    t,head_x,head_y,head_z,head_qx,head_qy,head_qz,head_qw,lhand_x,…,lhand_qw,rhand_x,…,rhand_qw
    0.0,0.02,0.01,1.62,0,0,0,1,…

22 columns in exactly this order; one row per sample, ``t`` strictly increasing; at least two
rows. Orientations are device frame to world with the device's x forward, y left, z up.
"""
from __future__ import annotations

import numpy as np

from ..errors import FileFormatError, PhysmocapError, require_type
from ..tracking import POINTS, ThreePointTrack
from .atomic import atomic_write_text
from .bvh import _is_float

__all__ = ["read_tracking", "write_tracking", "COLUMNS"]

#: The header of a tracking CSV.
COLUMNS = ["t"] + [f"{p}_{c}" for p in POINTS for c in ("x", "y", "z", "qx", "qy", "qz", "qw")]


def read_tracking(path) -> ThreePointTrack:
    """Read a tracking CSV; every problem is one ``FileFormatError`` naming the file and row."""
    try:
        with open(path, encoding="utf-8-sig") as fh:     # a spreadsheet's BOM is fine
            lines = fh.read().splitlines()
    except FileNotFoundError:
        raise FileFormatError("no such tracking file", path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FileFormatError(f"cannot read tracking file ({exc})", path) from None
    rows = [(i + 1, ln) for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip()
            .startswith("#")]
    if not rows:
        raise FileFormatError("empty tracking file (no header, no samples)", path)
    header = [h.strip().lower() for h in rows[0][1].split(",")]
    if header != COLUMNS:
        missing = [c for c in COLUMNS if c not in header]
        hint = f"missing {', '.join(missing[:4])}" if missing else "columns out of order"
        raise FileFormatError(f"line {rows[0][0]}: header must be the {len(COLUMNS)} columns "
                              f"t,head_x,…,rhand_qw ({hint})", path)
    data = np.empty((len(rows) - 1, len(COLUMNS)))
    for k, (line_no, ln) in enumerate(rows[1:]):
        cells = ln.split(",")
        if len(cells) != len(COLUMNS):
            raise FileFormatError(f"line {line_no}: {len(cells)} values, expected "
                                  f"{len(COLUMNS)}", path)
        try:
            data[k] = [float(c) for c in cells]
        except ValueError:
            bad = next(c for c in cells if not _is_float(c))
            raise FileFormatError(f"line {line_no}: not a number: {bad.strip()!r}", path) from None
        if not np.all(np.isfinite(data[k])):
            raise FileFormatError(f"line {line_no}: values must be finite", path)
        if k and data[k, 0] <= data[k - 1, 0]:
            raise FileFormatError(f"line {line_no}: t = {data[k, 0]:g} does not increase "
                                  f"(previous {data[k - 1, 0]:g})", path)
    if len(data) < 2:
        raise FileFormatError(f"need at least 2 samples, found {len(data)}", path)
    q = data[:, 1:].reshape(-1, 3, 7)
    norms = np.linalg.norm(q[..., 3:], axis=-1)
    if np.any(norms < 1e-6):
        r, p = np.argwhere(norms < 1e-6)[0]
        raise FileFormatError(f"line {rows[1 + r][0]}: {POINTS[p]} quaternion is zero", path)
    try:
        return ThreePointTrack(data[:, 0], q[..., :3], q[..., 3:])
    except PhysmocapError as exc:  # cannot happen after the checks above; keep the file name
        raise FileFormatError(exc.reason, path) from None


def write_tracking(track: ThreePointTrack, path, comment: str | None = None) -> None:
    """Write ``track`` as CSV (atomically), with an optional ``comment`` line on top."""
    require_type("write_tracking", track, ThreePointTrack, "read_tracking(PATH), extract_track")
    T = track.n_samples
    table = np.concatenate([track.times[:, None],
                            np.concatenate([track.pos, track.rot], axis=-1).reshape(T, 21)],
                           axis=1)
    head = ["# physmocap three-point tracking: metres, seconds, Z up, quaternions xyzw "
            "(device x forward, y left, z up)"]
    if comment:
        head.append("# " + " ".join(str(comment).split()))
    body = "\n".join(",".join(f"{v:.9g}" for v in row) for row in table)
    atomic_write_text(path, "\n".join(head + [",".join(COLUMNS), body]) + "\n")

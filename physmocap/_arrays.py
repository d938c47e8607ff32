"""Small array helpers: read-only copies and shape checks (the frozen data types), per-frame
speeds, the runs of a bool array."""
from __future__ import annotations

import numpy as np

from .errors import ShapeError


def frozen(a, dtype=float, shape: tuple | None = None, name: str = "array") -> np.ndarray:
    """A read-only copy of ``a`` as ``dtype``, checked against ``shape`` (``None`` = any size).

    An array of that dtype that is read-only down to the array owning its memory is taken as it
    is (no copy): nothing writable shares it, and a loader handing over a million-frame
    database must not need twice its memory.
    """
    try:
        if _read_only_chain(a) and a.dtype == np.dtype(dtype):
            arr = a
        else:
            arr = np.array(a, dtype=dtype, copy=True)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{name}: cannot convert to {np.dtype(dtype).name} array ({exc})") from None
    if shape is not None:
        ok = arr.ndim == len(shape) and all(s is None or s == n for s, n in zip(shape, arr.shape))
        if not ok:
            want = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
            raise ShapeError(f"{name}: expected shape {want}, got {arr.shape}")
    arr.setflags(write=False)
    return arr


def _read_only_chain(a) -> bool:
    """True for an ndarray that is read-only all the way to the array owning its memory (a
    loader's reshaped buffer; nothing writable shares it)."""
    while isinstance(a, np.ndarray):
        if a.flags.writeable:
            return False
        if a.base is None:
            return True
        a = a.base
    return False


def step_speed(steps: np.ndarray, fps: float) -> np.ndarray:
    """``(F,)`` m/s from ``steps (F - 1, 2)``, the horizontal moves between frames (the first
    frame takes the second's speed)."""
    sp = np.zeros(len(steps) + 1)
    if len(steps):
        sp[1:] = np.linalg.norm(steps, axis=-1) * fps
        sp[0] = sp[1]
    return sp


def intervals(mask) -> list[list[int]]:
    """``[[start, stop), …]`` of the True runs of a 1-D bool array."""
    m = np.asarray(mask, bool).astype(np.int8)
    edges = np.diff(np.concatenate([[0], m, [0]]))
    return [[int(a), int(b)] for a, b in zip(np.flatnonzero(edges == 1),
                                             np.flatnonzero(edges == -1))]

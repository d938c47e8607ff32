"""The bytes of a C3D file (Intel, float storage, points only), written a block of frames at a
time: ``write_c3d`` and ``write_c3d_frames`` behind their checks.

ezc3d's writer (used until 2026-12) holds every sample of a take as a C++ object, about 14 kB a
frame more than the take itself: 300 MB more for a 3-minute cleaned capture, gigabytes for an
hour. Here the header and the parameter section are a few kB built in memory and the data
section is converted and written ``BLOCK`` frames at a time, so memory does not grow with the
take. The file is what ezc3d wrote, sample for sample and parameter for parameter (its ANALOG
and FORCE_PLATFORM groups, empty, kept for readers that expect them), but for ezc3d's own
groups (EZC3D, and ROTATION, whose 16-bit DATA_START wraps past 32 MB of data), three
mends: a residual past 255 mm is held at 255 (ezc3d wrapped 300 to 44), the descriptions of
points past the 255th are written (ezc3d left them out) and TRIAL's frame words are 16-bit
integers, as Vicon writes them (ezc3d: floats).

C3D layout (c3d.org, "The C3D File Format User Guide"): 512-byte blocks; block 1 the header
(16-bit words), then the parameter section, then the data section: per frame and point four
float32, X, Y, Z and a fourth word holding the residual byte (high) and the camera mask (low),
negative where the sample is invalid.
"""
from __future__ import annotations

import struct

import numpy as np

from ..errors import ShapeError

__all__ = ["write_points", "BLOCK", "MAX_RESIDUAL"]

#: Frames converted and written at a time.
BLOCK = 4096
#: Whole residual units the fourth word's residual byte holds (x |POINT:SCALE|, here 1 mm).
MAX_RESIDUAL = 255
#: The largest count a 16-bit word of the header or of POINT:FRAMES holds.
_WORD = 0xFFFF
_INTEL = 84
_SCALE = -1.0           # negative: float storage; |scale| is the residual's unit (mm)


def _chars(values) -> tuple[bytes, list[int]]:
    """A character parameter's data and dimensions: one string ``[len]``, several
    ``[width, count]`` (each padded with spaces to the longest)."""
    if isinstance(values, str):
        b = values.encode("utf-8")
        return b, [len(b)]
    enc = [v.encode("utf-8") for v in values]
    width = max((len(v) for v in enc), default=0)
    return b"".join(v.ljust(width) for v in enc), [width, len(enc)]


def _record(name: str, group: int, kind: int, values, locked: bool = False) -> bytes:
    """One parameter record of group number ``group`` (1-based): ``kind`` -1 char, 2 int16
    (written as its 16 bits), 4 float32; ``values`` a number (no dimensions) or a list. Each
    dimension fits its byte: ``write_c3d_frames`` checks the labels' lengths, ``parameters``
    splits long lists 255 at a time."""
    if kind == -1:
        data, dims = _chars(values)
    else:
        scalar = np.ndim(values) == 0
        dims = [] if scalar else [len(values)]
        v = [values] if scalar else list(values)
        data = (struct.pack(f"<{len(v)}H", *(int(x) & _WORD for x in v)) if kind == 2
                else struct.pack(f"<{len(v)}f", *v))
    nm = name.encode("ascii")
    # the offset counts from its own first byte to the next record: itself (2), type, the
    # dimension count, dimensions, data and the (empty) description's length byte
    body = struct.pack("<bB", kind, len(dims)) + bytes(dims) + data + b"\x00"
    return (struct.pack("<bb", -len(nm) if locked else len(nm), group) + nm
            + struct.pack("<H", 2 + len(body)) + body)


def _group(name: str, group: int) -> bytes:
    nm = name.encode("ascii")
    return struct.pack("<bb", len(nm), -group) + nm + struct.pack("<H", 3) + b"\x00"


def _numbered(name: str, values: list[str]) -> list[tuple[str, list[str]]]:
    """``values`` split 255 at a time (a dimension is one byte) as ``NAME``, ``NAME2``, …"""
    parts = [values[k:k + 255] for k in range(0, max(len(values), 1), 255)]
    return [(name + (str(i + 1) if i else ""), p) for i, p in enumerate(parts)]


def parameters(labels: list[str], descriptions: list[str], virtual: list[str], fps: float,
               frames: int, subject: str | None, trial: tuple[int, int] | None,
               data_start: int) -> bytes:
    """The parameter section's records (without its 4-byte header), the last one's offset 0."""
    recs = [_group("POINT", 1), _record("USED", 1, 2, len(labels), locked=True)]
    recs += [_record(n, 1, -1, v) for n, v in _numbered("LABELS", labels)]
    recs += [_record(n, 1, -1, v) for n, v in _numbered("DESCRIPTIONS", descriptions)]
    recs += [_record("SCALE", 1, 4, _SCALE, locked=True), _record("UNITS", 1, -1, "mm"),
             _record("RATE", 1, 4, fps, locked=True),
             _record("DATA_START", 1, 2, data_start, locked=True),
             _record("FRAMES", 1, 2, min(frames, _WORD), locked=True),
             _record("X_SCREEN", 1, -1, "+X"), _record("Y_SCREEN", 1, -1, "+Z")]
    if virtual:
        recs += [_record(n, 1, -1, v) for n, v in _numbered("VIRTUAL", virtual)]
    recs += [_group("ANALOG", 2), _record("USED", 2, 2, 0, locked=True),
             _record("LABELS", 2, -1, []), _record("DESCRIPTIONS", 2, -1, []),
             _record("GEN_SCALE", 2, 4, 1.0), _record("SCALE", 2, 4, []),
             _record("OFFSET", 2, 2, []), _record("UNITS", 2, -1, []),
             _record("RATE", 2, 4, 0.0, locked=True), _record("FORMAT", 2, -1, []),
             _record("BITS", 2, 2, []),
             _group("FORCE_PLATFORM", 3), _record("USED", 3, 2, 0), _record("TYPE", 3, 2, []),
             _record("ZERO", 3, 2, [1, 0]), _record("CORNERS", 3, 4, []),
             _record("ORIGIN", 3, 4, []), _record("CHANNEL", 3, 2, []),
             _record("CAL_MATRIX", 3, 4, [])]
    g = 4
    if subject:
        recs += [_group("SUBJECTS", g), _record("NAMES", g, -1, [subject])]
        g += 1
    if trial is not None:
        # Past 65535 frames the 16-bit counts saturate: the range as Vicon states it (two
        # 16-bit words each), so that readers (ours, BTK/Mokka, Nexus) get every frame.
        first, last = trial
        recs += [_group("TRIAL", g),
                 _record("ACTUAL_START_FIELD", g, 2, [first & _WORD, first >> 16]),
                 _record("ACTUAL_END_FIELD", g, 2, [last & _WORD, last >> 16])]
    last = recs[-1]
    n = abs(struct.unpack("<b", last[:1])[0])
    recs[-1] = last[:2 + n] + b"\x00\x00" + last[4 + n:]      # the last record: offset 0
    return b"".join(recs)


def header(n_points: int, first: int, frames: int, fps: float, data_start: int) -> bytes:
    """Block 1: the 512-byte header (first frame 1-based, its 16-bit words saturated)."""
    first_word = first if first <= _WORD else 1
    h = bytearray(512)
    h[0:2] = bytes([2, 0x50])                  # parameters start in block 2; the C3D key
    struct.pack_into("<HHHHH", h, 2, n_points, 0, first_word,
                     min(first_word + frames - 1, _WORD), 10)   # 10: max interpolation gap
    struct.pack_into("<fHHf", h, 12, _SCALE, data_start, 0, fps)
    struct.pack_into("<H", h, 298, 12345)       # word 150: 4-character event labels (none)
    return bytes(h)


def _frames(pos: np.ndarray, residual: np.ndarray | None) -> np.ndarray:
    """``(n, M, 4)`` float32 samples of ``pos (n, M, 3)`` m: mm, and the fourth word the
    residual in whole mm in its high byte (a measured one at least 1, at most 255; unknown 0),
    or -1 with X, Y, Z 0 where a coordinate is NaN."""
    out = np.empty(pos.shape[:2] + (4,), np.float32)
    out[..., :3] = np.asarray(pos, float) * 1000.0      # in float64, then rounded once
    missing = np.isnan(out[..., :3]).any(-1)
    word = np.zeros(pos.shape[:2], np.float32)
    if residual is not None:
        mm = np.asarray(residual, float) * 1000.0                       # NaN: unknown, 0
        whole = np.where(mm > 0, np.clip(np.round(mm), 1.0, MAX_RESIDUAL), 0.0)
        word = (whole * 256.0).astype(np.float32)
    out[..., 3] = word
    out[missing] = (0.0, 0.0, 0.0, -1.0)
    return out


def write_points(fh, frames, F: int, M: int, labels: list[str], descriptions: list[str],
                 virtual: list[str], fps: float, first: int, subject: str | None) -> None:
    """Write a whole C3D of ``F`` frames of ``M`` points to the open binary file ``fh``;
    ``frames(a, b)`` gives frames ``[a, b)``: ``(pos (b - a, M, 3) m, Z up; residual
    (b - a, M) m or None)``. ``first`` is the first frame's number (1-based). The caller has
    checked the arguments (``write_c3d_frames``)."""
    last = first + F - 1
    trial = (first, last) if last > _WORD else None
    # the parameter section's length does not depend on DATA_START's value: size it first
    size = 4 + len(parameters(labels, descriptions, virtual, fps, F, subject, trial, 0))
    blocks = -(-size // 512)
    if blocks > 255:                # the section header counts its blocks in one byte
        raise ShapeError(f"cannot write a C3D of {M} points with these labels: the parameter "
                         f"section would take {blocks} blocks (the format holds 255)")
    data_start = 2 + blocks
    params = parameters(labels, descriptions, virtual, fps, F, subject, trial, data_start)
    fh.write(header(M, first, F, fps, data_start))
    fh.write((bytes([1, 0x50, blocks, _INTEL]) + params).ljust(512 * blocks, b"\x00"))
    written = 0
    for a in range(0, F, BLOCK):
        b = min(a + BLOCK, F)
        pos, residual = frames(a, b)
        if np.shape(pos) != (b - a, M, 3) or (residual is not None
                                                and np.shape(residual) != (b - a, M)):
            raise ShapeError(f"frames {a}-{b}: expected positions ({b - a}, {M}, 3) and "
                             f"residuals ({b - a}, {M}), got {np.shape(pos)} and "
                             f"{np.shape(residual)}")
        chunk = _frames(pos, residual)
        fh.write(chunk.astype("<f4", copy=False).tobytes())
        written += chunk.nbytes
    fh.write(b"\x00" * (-written % 512))        # the section ends on a whole block

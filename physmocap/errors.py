"""Exception hierarchy. Every error physmocap raises on bad input is a ``PhysmocapError``.

The message is one line that names the file (when there is one), what is wrong and, where it
helps, what to do. The CLI prints exactly that line and exits with status 1.
"""
from __future__ import annotations

import math
import numbers

__all__ = [
    "PhysmocapError", "FileFormatError", "UnitError", "ShapeError", "UnknownNameError",
    "SettingsError",
]


class PhysmocapError(Exception):
    """Base class of every error physmocap raises on purpose."""

    def __init__(self, message: str, path: object | None = None):
        self.path = None if path is None else str(path)
        self.reason = message
        super().__init__(f"{path}: {message}" if path is not None else message)


class FileFormatError(PhysmocapError):
    """A file cannot be read: corrupt, truncated, unsupported or empty."""


class UnitError(PhysmocapError):
    """An unknown or inconsistent unit or axis."""


class ShapeError(PhysmocapError, ValueError):
    """Arrays whose shapes or values do not fit a data type."""


class SettingsError(PhysmocapError, ValueError):
    """An option or setting out of its range, or not one of its known choices; the message
    names it and what it accepts."""


class UnknownNameError(PhysmocapError, KeyError):
    """A joint, marker or scene name that does not exist; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would quote the message
        return self.args[0]


class Terminated(BaseException):
    """SIGTERM, raised where the main thread is (``raise_terminated`` as the handler), so that
    ``finally`` blocks run: atomic writers remove their temporary files, checkpoints keep
    their finished stages. Not an ``Exception``: nothing catches it by accident."""


def raise_terminated(signum, frame):
    """A SIGTERM handler: ``raise Terminated()`` (the default action kills without unwinding:
    a batch worker left its temporary file and its take was reported failed)."""
    raise Terminated()


def known_list(names, limit: int = 12) -> str:
    """``'A, B, C, … (40 in all)'`` for error messages."""
    names = [str(n) for n in names]
    if len(names) <= limit:
        return ", ".join(names)
    return ", ".join(names[:limit]) + f", … ({len(names)} in all)"


def require_numbers(where: str, positive: tuple = (), **values) -> None:
    """One ``SettingsError`` line for the first of ``values`` (name -> value) that is not a finite
    number ``>= 0`` (``> 0`` for the names in ``positive``): the functions' own arguments get
    the settings classes' check (NaN passed ``< 0`` tests and broke ``int()`` later)."""
    for name, v in values.items():
        if bad_number(v, name in positive):
            raise SettingsError(f"{where}: {name} must be a finite number "
                                f"{'> 0' if name in positive else '>= 0'}, got {v!r}")


def require_type(where: str, value, cls, make: str) -> None:
    """One ``ShapeError`` line when a script passes ``value`` where a ``cls`` belongs (a path
    where a motion goes, say): an AttributeError from deep inside said less. ``make`` says how
    to get one (``"read_bvh(PATH)"``)."""
    if not isinstance(value, cls):
        raise ShapeError(f"{where} needs a {cls.__name__} ({make}), got {type(value).__name__}")


def require_path(where: str, path) -> None:
    """One ``ShapeError`` line when a script passes something that is not a file path (None,
    a number) where one goes: pathlib's TypeError named no function."""
    import os
    if not isinstance(path, (str, os.PathLike)):
        raise ShapeError(f"{where} needs a file path (str or pathlib.Path), got "
                         f"{type(path).__name__}")


def require_counts(where: str, zero_ok: tuple = (), **values) -> None:
    """``require_numbers``' twin for whole numbers: one ``SettingsError`` line for the first of
    ``values`` that is not a whole number ``>= 1`` (``>= 0`` for the names in ``zero_ok``)."""
    for name, v in values.items():
        least = 0 if name in zero_ok else 1
        if bad_count(v, least):
            raise SettingsError(f"{where}: {name} must be a whole number >= {least}, got {v!r}")


def require_fractions(where: str, **values) -> None:
    """One ``SettingsError`` line for the first of ``values`` that is not a fraction 0..1."""
    for name, v in values.items():
        if bad_number(v) or v > 1:
            raise SettingsError(f"{where}: {name} must be a fraction 0..1, got {v!r}")


def require_flags(where: str, **values) -> None:
    """One ``SettingsError`` line for the first of ``values`` that is not ``True`` or ``False``
    (a 0 or 1 is not a switch)."""
    for name, v in values.items():
        if not isinstance(v, bool):
            raise SettingsError(f"{where}: {name} must be True or False, got {v!r}")


def bad_count(v, least: int = 1) -> bool:
    """``v`` is not a whole number ``>= least`` (numpy's integers count; a bool and a float
    do not): frames, loops, sub-steps."""
    return isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < least


def bad_number(v, positive: bool = False) -> bool:
    """``v`` is not a finite number ``>= 0`` (``> 0`` if ``positive``; a bool is no number):
    the check behind the settings classes' one-line ``SettingsError``."""
    # numbers.Real: numpy's scalars too (a rate read as float32 is a number)
    return (isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v)
            or v < 0 or (positive and v == 0))

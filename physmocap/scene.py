"""Scene files: body templates and marker sets, read from TOML or JSON (data only, never code).

Shipped scenes live in a ``scenes/`` folder with ``bodies/`` and ``markersets/`` inside. A name such
as ``"cmu41"`` is looked up, in order, in ``$PHYSMOCAP_SCENES`` (``os.pathsep``-separated folders),
``<package>/scenes`` (an installed wheel) and ``<repo root>/scenes`` (a source checkout). Anything
that looks like a path (has a suffix ``.toml``/``.json`` or a directory separator) is read as a file.

File contracts (see ``scenes/README.md`` and the headers of the shipped files):

* body: ``[meta]`` and ``[[joint]]`` tables with ``name``, ``parent`` (all but the root), ``type``
  (``free`` root only, ``ball`` with ``swing``/``twist`` degrees (``twist``: ± range or
  ``[min, max]``), ``hinge`` with a unit ``axis`` and ``limits = [min, max]`` degrees),
  ``offset`` (m, rest position relative to the parent; the root's is its height above the
  floor), ``mass`` (kg), ``radius`` (m) and ``end`` (m, leaves' end site).
  Rest pose: T-pose facing +X, left +Y, Z up, every joint frame aligned with the world.
* marker set: ``[meta]`` (``body`` = the template the offsets were made for), ``[markers]``
  mapping each label to ``{segment, offset, weight = 1, optional = false}``, and optionally
  ``[centres]`` mapping a joint to ``{wand, marker, width, radius, parameter}``: Plug-in Gait's
  chord rule for placing that joint's centre from a static trial (``CentreRule``).

Every problem raises one line naming the file (``FileFormatError``/``UnknownNameError``).
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

try:  # Python >= 3.11
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10 needs the ``tomli`` backport
    import tomli as tomllib

from ._arrays import frozen
from .errors import FileFormatError, PhysmocapError, ShapeError, UnknownNameError, known_list
from .markers import MarkerSet
from .skeleton import Skeleton

__all__ = [
    "BodyTemplate", "MarkerSetSpec", "CentreRule", "JOINT_TYPES", "scene_dirs", "list_bodies",
    "list_markersets", "load_body", "standing", "load_markerset", "pick_markerset",
    "Environment", "SceneObject", "HandHold", "list_environments", "load_environment",
]

#: Joint types a body template may use.
JOINT_TYPES = ("free", "ball", "hinge")
_SUFFIXES = (".toml", ".json")

_META_KEYS = {"name", "description", "source", "notes", "body"}
_BODY_KEYS = {"meta", "joint"}
_JOINT_KEYS = {"name", "parent", "type", "offset", "axis", "limits", "swing", "twist", "mass",
               "radius", "end"}
_SET_KEYS = {"meta", "markers", "centres"}
_MARKER_KEYS = {"segment", "offset", "weight", "optional", "note"}
_CENTRE_KEYS = {"wand", "marker", "width", "radius", "parameter", "note"}


# --------------------------------------------------------------------------------------------
# value types

@dataclass(frozen=True, eq=False)
class BodyTemplate:
    """A physical body: a skeleton plus joint types, limits, masses and capsule radii.

    Attributes:
        skeleton: names, ``parents (J,)`` with ``parents[j] < j``, rest ``offsets (J, 3)`` m
            (``offsets[0]`` = root height above the floor) and ``end_sites (J, 3)`` m (NaN if none).
        joint_type: ``(J,)`` ``"free"`` (root), ``"ball"`` or ``"hinge"``.
        axis: ``(J, 3)`` unit hinge axes in the rest (world-aligned) frame; NaN for non-hinges.
        limits: ``(J, 2)`` rad; hinge: ``(min, max)``; ball: ``(swing half-angle, twist
            half-range)``; NaN for the free root.
        mass: ``(J,)`` kg of the segment each joint drives (> 0).
        radius: ``(J,)`` m, capsule radius of that segment (> 0).
        name: the template's name; ``source``: the file it came from ("" if built in code).
        twist_mid: ``(J,)`` rad, the middle of a ball joint's twist range (default 0): the
            range is ``twist_mid ± limits[:, 1]``. A wrist's is not 0: the rest pose holds the
            palms forward, the forearm fully supinated, and a hanging arm is pronated ~90°.
    """

    skeleton: Skeleton
    joint_type: tuple
    axis: np.ndarray
    limits: np.ndarray
    mass: np.ndarray
    radius: np.ndarray
    name: str = ""
    source: str = ""
    twist_mid: np.ndarray | None = None

    def __post_init__(self):
        if not isinstance(self.skeleton, Skeleton):
            raise ShapeError("BodyTemplate.skeleton must be a Skeleton")
        J = len(self.skeleton)
        types = tuple(str(t) for t in self.joint_type)
        if len(types) != J:
            raise ShapeError(f"joint_type: expected {J} entries, got {len(types)}")
        bad = sorted({t for t in types if t not in JOINT_TYPES})
        if bad:
            raise ShapeError(f"unknown joint types {', '.join(bad)}; known: {', '.join(JOINT_TYPES)}")
        mass = frozen(self.mass, float, (J,), "mass")
        radius = frozen(self.radius, float, (J,), "radius")
        if not (np.all(np.isfinite(mass)) and np.all(mass > 0)):
            raise ShapeError("mass must be finite and > 0")
        if not (np.all(np.isfinite(radius)) and np.all(radius > 0)):
            raise ShapeError("radius must be finite and > 0")
        object.__setattr__(self, "joint_type", types)
        object.__setattr__(self, "axis", frozen(self.axis, float, (J, 3), "axis"))
        object.__setattr__(self, "limits", frozen(self.limits, float, (J, 2), "limits"))
        mid = frozen(np.zeros(J) if self.twist_mid is None else self.twist_mid, float, (J,),
                     "twist_mid")
        if not np.all(np.isfinite(mid)):
            raise ShapeError("twist_mid must be finite")
        object.__setattr__(self, "twist_mid", mid)
        object.__setattr__(self, "mass", mass)
        object.__setattr__(self, "radius", radius)
        object.__setattr__(self, "name", str(self.name))
        object.__setattr__(self, "source", str(self.source))

    def __len__(self) -> int:
        return len(self.skeleton)

    @property
    def names(self) -> tuple:
        return self.skeleton.names

    def index(self, name: str) -> int:
        return self.skeleton.index(name)

    @property
    def total_mass(self) -> float:
        return float(self.mass.sum())

    @property
    def height(self) -> float:
        """Standing height (m): the highest rest joint or end site above the floor (z = 0)."""
        gpos = self.skeleton.rest_positions()
        pts = [gpos[:, 2]]
        has_end = ~np.isnan(self.skeleton.end_sites).any(axis=1)
        if has_end.any():
            pts.append(gpos[has_end, 2] + self.skeleton.end_sites[has_end, 2])
        return float(np.max(np.concatenate(pts)))

    def scaled(self, height_m: float, mass_kg: float | None = None) -> "BodyTemplate":
        """The template scaled uniformly to a subject of ``height_m`` metres.

        Lengths (offsets, end sites, radii) scale by ``k = height_m / self.height``; masses scale
        to ``mass_kg`` when given (same proportions), else by ``k**3`` (constant density).
        Axes and limits are unchanged.
        """
        height_m = float(height_m)
        if not math.isfinite(height_m) or height_m <= 0:
            raise ShapeError(f"scaled: height must be a positive number of metres, got {height_m!r}")
        k = height_m / self.height
        if mass_kg is None:
            mass = self.mass * k ** 3
        else:
            mass_kg = float(mass_kg)
            if not math.isfinite(mass_kg) or mass_kg <= 0:
                raise ShapeError(f"scaled: mass must be a positive number of kg, got {mass_kg!r}")
            mass = self.mass * (mass_kg / self.total_mass)
        return BodyTemplate(self.skeleton.scaled(k), self.joint_type, self.axis, self.limits,
                            mass, self.radius * k, self.name, self.source, self.twist_mid)


    def with_skeleton(self, skeleton: Skeleton) -> "BodyTemplate":
        """This template's joints on ``skeleton`` (same joints, other limb lengths: a calibrated
        subject), its rest pose standing on the floor (``standing``). Radii scale by the ratio
        of standing heights, masses by its cube."""
        if not skeleton.same_structure(self.skeleton):
            raise ShapeError(f"with_skeleton: the skeleton's joints are not the template "
                             f"{self.name!r}'s")
        skeleton = standing(skeleton, self.skeleton)
        other = BodyTemplate(skeleton, self.joint_type, self.axis, self.limits, self.mass,
                             self.radius, self.name, self.source, self.twist_mid)
        k = other.height / self.height
        return BodyTemplate(skeleton, self.joint_type, self.axis, self.limits, self.mass * k ** 3,
                            self.radius * k, self.name, self.source, self.twist_mid)


@dataclass(frozen=True)
class CentreRule:
    """Plug-in Gait's chord rule for one joint centre, used when calibrating on a static trial.

    The centre of ``joint`` lies in the plane of its parent joint's centre, the ``wand`` marker
    and the joint ``marker``, at ``width / 2 + radius`` from the marker, with the marker seen at
    a right angle from the parent joint's centre (Vicon, "Plug-in Gait Reference Guide": the
    knee from the hip centre, THI and KNE and the knee width).

    Attributes:
        joint: the joint whose centre the rule places (``LeftLowerLeg`` = the left knee).
        wand, marker: marker labels.
        width: m, the joint's width for the marker set's template body (scaled with the
            subject when the trial does not state it).
        radius: m, marker radius (not scaled).
        parameter: name of the subject measurement (mm) in the static trial's C3D
            ``PROCESSING`` group that overrides ``width`` (``LKneeWidth``), or "".
    """

    joint: str
    wand: str
    marker: str
    width: float
    radius: float
    parameter: str = ""


@dataclass(frozen=True, eq=False)
class MarkerSetSpec:
    """A marker set as a scene file states it: markers attached to segments by joint name.

    Attributes:
        name: the set's name (``meta.name`` or the file stem).
        names: ``(M,)`` marker labels, file order.
        segment: ``(M,)`` joint names of the segments carrying the markers.
        offset: ``(M, 3)`` m, marker position relative to its joint at the rest T-pose.
        weight: ``(M,)`` relative spring weight (>= 0).
        optional: ``(M,)`` bool, True for markers a capture may lack.
        body: name of the body template the offsets were made for.
        source: the file it came from.
        centres: ``CentreRule``s for calibration on a static trial (may be empty).
    """

    name: str
    names: tuple
    segment: tuple
    offset: np.ndarray
    weight: np.ndarray
    optional: np.ndarray
    body: str = "humanoid"
    source: str = ""
    centres: tuple = ()

    def __post_init__(self):
        names = tuple(str(n) for n in self.names)
        M = len(names)
        if len(set(names)) != M:
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ShapeError(f"duplicate marker names: {', '.join(dup)}")
        segment = tuple(str(s) for s in self.segment)
        if len(segment) != M:
            raise ShapeError(f"segment: expected {M} entries, got {len(segment)}")
        offset = frozen(self.offset, float, (M, 3), "offset")
        weight = frozen(self.weight, float, (M,), "weight")
        if not np.all(np.isfinite(offset)) or not np.all(np.isfinite(weight)) or np.any(weight < 0):
            raise ShapeError("marker offsets must be finite and weights finite and >= 0")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "segment", segment)
        object.__setattr__(self, "offset", offset)
        object.__setattr__(self, "weight", weight)
        object.__setattr__(self, "optional", frozen(self.optional, bool, (M,), "optional"))

    def __len__(self) -> int:
        return len(self.names)

    @property
    def required(self) -> tuple:
        """Labels that every capture must have."""
        return tuple(n for n, o in zip(self.names, self.optional) if not o)

    def missing(self, labels) -> tuple:
        """Required markers absent from ``labels`` (spec order); subject prefixes are ignored."""
        have = set(_strip_labels(labels))
        return tuple(n for n in self.required if n not in have)

    def bind(self, skeleton, labels=None) -> MarkerSet:
        """The ``MarkerSet`` for ``skeleton`` (a ``Skeleton`` or ``BodyTemplate``).

        With ``labels`` (a capture's labels, ``Subject:`` prefixes ignored), only the markers the
        capture has are kept, in this spec's order; a missing required marker is an error.
        """
        skel = skeleton.skeleton if isinstance(skeleton, BodyTemplate) else skeleton
        keep = list(range(len(self)))
        if labels is not None:
            missing = self.missing(labels)
            if missing:
                raise UnknownNameError(
                    f"marker set {self.name}: the capture lacks required markers "
                    f"{known_list(missing)}")
            have = set(_strip_labels(labels))
            keep = [i for i, n in enumerate(self.names) if n in have]
        body = []
        for i in keep:
            if self.segment[i] not in skel.names:
                raise UnknownNameError(
                    f"marker set {self.name}: marker {self.names[i]} is on segment "
                    f"{self.segment[i]!r}, not a joint of the skeleton; known: "
                    f"{known_list(skel.names)}")
            body.append(skel.names.index(self.segment[i]))
        return MarkerSet(tuple(self.names[i] for i in keep), np.array(body, dtype=int),
                         self.offset[keep].reshape(-1, 3), self.weight[keep])


# --------------------------------------------------------------------------------------------
# finding files

def scene_dirs() -> list[Path]:
    """Folders searched for shipped scenes, first match wins."""
    dirs = []
    env = os.environ.get("PHYSMOCAP_SCENES")
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    here = Path(__file__).resolve().parent
    dirs += [here / "scenes", here.parent / "scenes"]
    return [d for d in dirs if d.is_dir()]


def _shipped(kind: str) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for d in scene_dirs():
        sub = d / kind
        if not sub.is_dir():
            continue
        for p in sorted(sub.iterdir()):
            if p.suffix in _SUFFIXES and p.is_file():
                found.setdefault(p.stem, p)
    return found


def list_bodies() -> list[str]:
    """Names of the shipped body templates."""
    return sorted(_shipped("bodies"))


def list_markersets() -> list[str]:
    """Names of the shipped marker sets."""
    return sorted(_shipped("markersets"))


def _an(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _resolve(name_or_path, kind: str, what: str) -> Path:
    s = os.fspath(name_or_path)
    looks_like_path = (isinstance(name_or_path, os.PathLike) or Path(s).suffix in _SUFFIXES
                       or os.sep in s or "/" in s)
    if looks_like_path:
        p = Path(s)
        if not p.is_file():
            raise FileFormatError(f"no such {what} file", p)
        if p.suffix.lower() not in _SUFFIXES:
            # a head track (.csv) is not a scene: a scene names it (scenes/inputs/head_circle)
            hint = (" (a head track .csv is named by a scene's [input] file, as in the shipped "
                    "head_circle.toml)" if kind == "inputs" and p.suffix.lower() == ".csv"
                    else "")
            raise FileFormatError(f"{_an(what)} {what} is a .toml or .json file{hint}", p)
        return p
    shipped = _shipped(kind)
    if s not in shipped:
        raise UnknownNameError(
            f"unknown {what} {s!r}; known: {known_list(sorted(shipped)) or '(none found)'}; "
            f"or pass a path to a .toml/.json file")
    return shipped[s]


# --------------------------------------------------------------------------------------------
# reading and checking

def _no_duplicate_keys(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _read(path: Path) -> dict:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise FileFormatError(f"cannot read: {exc.strerror or exc}", path) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(f"not UTF-8 text (byte {exc.start})", path) from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise FileFormatError(f"JSON syntax error: {exc.msg} (line {exc.lineno}, column "
                                  f"{exc.colno})", path) from None
        except ValueError as exc:
            raise FileFormatError(f"JSON error: {exc}", path) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise FileFormatError(f"TOML syntax error: {exc}", path) from None
    if not isinstance(data, dict):
        raise FileFormatError("the top level must be a table/object", path)
    return data


class _Checker:
    """Field checks that raise one line naming the file and the place."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, where: str, msg: str):
        raise FileFormatError(f"{where}: {msg}" if where else msg, self.path)

    def keys(self, table, allowed: set, required: tuple, where: str):
        if not isinstance(table, dict):
            self.fail(where, f"must be a table, got {type(table).__name__}")
        unknown = [k for k in table if k not in allowed]
        if unknown:
            self.fail(where, f"unknown key {', '.join(map(repr, unknown))}; known: "
                             f"{', '.join(sorted(allowed))}")
        missing = [k for k in required if k not in table]
        if missing:
            self.fail(where, f"missing {', '.join(map(repr, missing))}")

    def tables(self, data: dict, key: str) -> list:
        """The array of tables ``[[key]]`` (empty when absent)."""
        v = data.get(key, [])
        if not isinstance(v, list):
            self.fail(f"[[{key}]]", f"must be an array of tables, got {type(v).__name__}")
        return v

    def string(self, v, where: str, key: str) -> str:
        if not isinstance(v, str) or not v.strip():
            self.fail(where, f"{key} must be a non-empty string, got {v!r}")
        return v.strip()

    def number(self, v, where: str, key: str, lo=None, hi=None, lo_open=False) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(where, f"{key} must be a number, got {v!r}")
        x = float(v)
        if not math.isfinite(x):
            self.fail(where, f"{key} must be finite, got {v!r}")
        if lo is not None and (x <= lo if lo_open else x < lo):
            self.fail(where, f"{key} must be {'>' if lo_open else '>='} {lo:g}, got {v!r}")
        if hi is not None and x > hi:
            self.fail(where, f"{key} must be <= {hi:g}, got {v!r}")
        return x

    def vector(self, v, n: int, where: str, key: str) -> list[float]:
        if not isinstance(v, list) or len(v) != n:
            got = f"{len(v)} values" if isinstance(v, list) else repr(v)
            self.fail(where, f"{key} must be a list of {n} numbers, got {got}")
        return [self.number(x, where, key) for x in v]

    def boolean(self, v, where: str, key: str) -> bool:
        if not isinstance(v, bool):
            self.fail(where, f"{key} must be true or false, got {v!r}")
        return v

    def meta(self, data) -> dict:
        meta = data.get("meta", {})
        self.keys(meta, _META_KEYS, (), "[meta]")
        for k, v in meta.items():
            self.string(v, "[meta]", k)
        return meta


def _topological(joints: list[dict], ck: _Checker) -> list[dict]:
    """Joints ordered parents first, keeping file order where it already is."""
    names = [j["name"] for j in joints]
    roots = [j for j in joints if j["parent"] is None]
    if len(roots) != 1:
        ck.fail("", f"a body needs exactly one root joint (without parent), found "
                    f"{len(roots)}: {', '.join(j['name'] for j in roots) or 'none'}")
    for j in joints:
        if j["parent"] is not None and j["parent"] not in names:
            raise UnknownNameError(f"joint {j['name']!r}: unknown parent {j['parent']!r}; known: "
                                   f"{known_list(names)}", ck.path)
    pos = {n: i for i, n in enumerate(names)}
    if all(j["parent"] is None or pos[j["parent"]] < pos[j["name"]] for j in joints):
        return joints  # already parents first: keep the file's order
    order, placed, pending = [], set(), list(joints)
    while pending:  # stable Kahn: each pass takes, in file order, the joints whose parent is placed
        ready = [j for j in pending if j["parent"] is None or j["parent"] in placed]
        if not ready:
            ck.fail("", f"parent cycle among joints {', '.join(j['name'] for j in pending)}")
        for j in ready:
            order.append(j)
            placed.add(j["name"])
        pending = [j for j in pending if j["name"] not in placed]
    return order


def _twist_range(v, ck: _Checker, where: str) -> tuple[float, float]:
    """A ball joint's ``twist`` (degrees): ``T`` for ``[-T, T]``, or ``[min, max]`` for a range
    that is not centred on the rest pose (a wrist: pronation from the palms-forward rest)."""
    if isinstance(v, list):
        lo, hi = (ck.number(x, where, "twist", lo=-180, hi=180)
                  for x in ck.vector(v, 2, where, "twist"))
        if not lo < hi:
            ck.fail(where, f"twist must be a number or [min, max] with min < max, got "
                           f"[{lo:g}, {hi:g}]")
        return lo, hi
    t = ck.number(v, where, "twist", lo=0, hi=180)
    return -t, t


def _parse_body(data: dict, path: Path) -> BodyTemplate:
    ck = _Checker(path)
    ck.keys(data, _BODY_KEYS, ("joint",), "")
    meta = ck.meta(data)
    rows = data["joint"]
    if not isinstance(rows, list) or not rows:
        ck.fail("", "'joint' must be a non-empty array of tables ([[joint]])")
    joints, seen = [], set()
    for i, row in enumerate(rows):
        where = f"joint #{i + 1}"
        if isinstance(row, dict) and isinstance(row.get("name"), str):
            where = f"joint {row['name']!r}"
        ck.keys(row, _JOINT_KEYS, ("name", "type", "offset", "mass", "radius"), where)
        name = ck.string(row["name"], where, "name")
        if name in seen:
            ck.fail(where, "duplicate joint name")
        seen.add(name)
        jtype = row["type"]
        if jtype not in JOINT_TYPES:
            ck.fail(where, f"unknown joint type {jtype!r}; known: {', '.join(JOINT_TYPES)}")
        parent = row.get("parent")
        parent = None if parent is None else ck.string(parent, where, "parent")
        if jtype == "free" and parent is not None:
            ck.fail(where, "only the root joint may be 'free'")
        if jtype != "free" and parent is None:
            ck.fail(where, f"a {jtype} joint needs a parent (only the 'free' root has none)")
        j = {
            "name": name, "parent": parent, "type": jtype,
            "offset": ck.vector(row["offset"], 3, where, "offset"),
            "mass": ck.number(row["mass"], where, "mass", lo=0, lo_open=True),
            "radius": ck.number(row["radius"], where, "radius", lo=0, lo_open=True),
            "end": ck.vector(row["end"], 3, where, "end") if "end" in row else [math.nan] * 3,
            "axis": [math.nan] * 3, "limits": [math.nan, math.nan], "twist_mid": 0.0,
        }
        extra = {"hinge": ("swing", "twist"), "ball": ("axis", "limits"),
                 "free": ("axis", "limits", "swing", "twist")}[jtype]
        bad = [k for k in extra if k in row]
        if bad:
            ck.fail(where, f"a {jtype} joint takes no {', '.join(map(repr, bad))}")
        if jtype == "hinge":
            ck.keys(row, _JOINT_KEYS, ("axis", "limits"), where)
            axis = np.array(ck.vector(row["axis"], 3, where, "axis"))
            n = float(np.linalg.norm(axis))
            if abs(n - 1.0) > 1e-3:
                ck.fail(where, f"axis must be a unit vector, has length {n:.4g}")
            lo, hi = (ck.number(x, where, "limits", lo=-180, hi=180)
                      for x in ck.vector(row["limits"], 2, where, "limits"))
            if not lo < hi:
                ck.fail(where, f"limits must be [min, max] with min < max, got [{lo:g}, {hi:g}]")
            j["axis"] = list(axis / n)
            j["limits"] = [math.radians(lo), math.radians(hi)]
        elif jtype == "ball":
            ck.keys(row, _JOINT_KEYS, ("swing", "twist"), where)
            lo, hi = _twist_range(row["twist"], ck, where)
            j["limits"] = [math.radians(ck.number(row["swing"], where, "swing", lo=0, hi=180)),
                           math.radians((hi - lo) / 2)]
            j["twist_mid"] = math.radians((hi + lo) / 2)
        joints.append(j)
    joints = _topological(joints, ck)
    names = [j["name"] for j in joints]
    parents = [-1 if j["parent"] is None else names.index(j["parent"]) for j in joints]
    try:
        skel = Skeleton(names, parents, [j["offset"] for j in joints],
                        [j["end"] for j in joints])
        return BodyTemplate(skel, [j["type"] for j in joints], [j["axis"] for j in joints],
                            [j["limits"] for j in joints], [j["mass"] for j in joints],
                            [j["radius"] for j in joints], meta.get("name", path.stem), str(path),
                            [j["twist_mid"] for j in joints])
    except ShapeError as exc:  # pragma: no cover - the checks above should catch everything
        raise FileFormatError(str(exc), path) from None


def _parse_markerset(data: dict, path: Path, body: BodyTemplate | None) -> MarkerSetSpec:
    ck = _Checker(path)
    ck.keys(data, _SET_KEYS, ("markers",), "")
    meta = ck.meta(data)
    table = data["markers"]
    if not isinstance(table, dict) or not table:
        ck.fail("", "'markers' must be a non-empty table ([markers] LABEL = { segment, offset })")
    if body is None:
        body = load_body(meta.get("body", "humanoid"))
    names, segs, offs, weights, opts = [], [], [], [], []
    for label, row in table.items():
        where = f"marker {label!r}"
        if not label.strip():
            ck.fail(where, "empty marker name")
        ck.keys(row, _MARKER_KEYS, ("segment", "offset"), where)
        seg = ck.string(row["segment"], where, "segment")
        if seg not in body.names:
            raise UnknownNameError(f"{where}: segment {seg!r} is not a joint of body "
                                   f"{body.name!r}; known: {', '.join(body.names)}", path)
        if "note" in row:
            ck.string(row["note"], where, "note")
        names.append(label.strip())
        segs.append(seg)
        offs.append(ck.vector(row["offset"], 3, where, "offset"))
        weights.append(ck.number(row.get("weight", 1.0), where, "weight", lo=0))
        opts.append(ck.boolean(row.get("optional", False), where, "optional"))
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        ck.fail("", f"duplicate markers {', '.join(dup)}")
    return MarkerSetSpec(meta.get("name", path.stem), names, segs, offs, weights, opts,
                         body.name, str(path), _parse_centres(data, ck, body, names))


def _parse_centres(data: dict, ck: "_Checker", body: BodyTemplate, names: list) -> tuple:
    table = data.get("centres", {})
    if not isinstance(table, dict):
        ck.fail("[centres]", "must be a table: JOINT = { wand, marker, width, radius }")
    rules = []
    for joint, row in table.items():
        where = f"centre {joint!r}"
        ck.keys(row, _CENTRE_KEYS, ("wand", "marker", "width", "radius"), where)
        if joint not in body.names:
            raise UnknownNameError(f"{where}: not a joint of body {body.name!r}; known: "
                                   f"{known_list(body.names)}", ck.path)
        if body.skeleton.parents[body.names.index(joint)] < 0:
            ck.fail(where, "the root has no parent joint to place it from")
        labels = [ck.string(row[k], where, k) for k in ("wand", "marker")]
        for k, label in zip(("wand", "marker"), labels):
            if label not in names:
                raise UnknownNameError(f"{where}: {k} {label!r} is not a marker of this set; "
                                       f"known: {known_list(names)}", ck.path)
        if labels[0] == labels[1]:
            ck.fail(where, "wand and marker must be two different markers")
        if "note" in row:
            ck.string(row["note"], where, "note")
        rules.append(CentreRule(joint, labels[0], labels[1],
                                ck.number(row["width"], where, "width", lo=0, lo_open=True),
                                ck.number(row["radius"], where, "radius", lo=0),
                                ck.string(row["parameter"], where, "parameter")
                                if "parameter" in row else ""))
    return tuple(rules)


def standing(skeleton: Skeleton, template: Skeleton) -> Skeleton:
    """``skeleton`` with its root's rest height changed so that its rest pose stands on the
    floor (z = 0) as ``template``'s does: its lowest rest joint at the template's lowest
    joint's height, scaled by the ratio of the root's rest heights above those joints.

    Calibration fits the bone offsets and keeps the scaled template's root offset, so a subject
    whose legs came out long for it stood with its feet through the floor in the rest pose;
    a body whose foot collision boxes reach from each foot joint down to z = 0 in that pose
    (``playback.character.foot_box``) got thin feet and toe boxes of negative height (the
    solved Plug-in Gait walk: ankle 2.9 cm and toe joint -0.3 cm above the rest floor, the
    template's 7.0 and 2.5). Bone offsets are unchanged; the root's offset moves only up or down."""
    z, zt = skeleton.rest_positions()[:, 2], template.rest_positions()[:, 2]
    low = float(zt.min())
    if zt[0] - low <= 0.0 or z[0] - z.min() <= 0.0:     # the root lowest: no legs to stand on
        return skeleton
    lift = low * float(z[0] - z.min()) / float(zt[0] - low) - float(z.min())
    offsets = np.array(skeleton.offsets)
    offsets[0, 2] += lift
    return Skeleton(skeleton.names, skeleton.parents, offsets, skeleton.end_sites)


def load_body(name_or_path="humanoid") -> BodyTemplate:
    """A body template by shipped name (``"humanoid"``) or from a ``.toml``/``.json`` path."""
    path = _resolve(name_or_path, "bodies", "body")
    return _parse_body(_read(path), path)


def load_markerset(name_or_path, body: BodyTemplate | str | None = None) -> MarkerSetSpec:
    """A marker set by shipped name (``"cmu41"``) or from a ``.toml``/``.json`` path.

    Segment names are checked against ``body`` (a template or its name); by default the body the
    file's ``meta.body`` names, else ``"humanoid"``.
    """
    path = _resolve(name_or_path, "markersets", "marker set")
    if isinstance(body, (str, os.PathLike)):
        body = load_body(body)
    return _parse_markerset(_read(path), path, body)


def _strip_labels(labels) -> list[str]:
    """Labels without ``Subject:`` prefixes and padding."""
    return [str(l).strip().rsplit(":", 1)[-1].strip() for l in labels]


def pick_markerset(labels, candidates=None) -> MarkerSetSpec:
    """The shipped marker set for a capture's ``labels`` (``--markerset auto``).

    A set fits when every required marker is present; of those that fit, the one covering the
    most labels wins (ties: the smaller set). If none fits, ``UnknownNameError`` names the closest
    set and what it lacks.
    """
    have = set(_strip_labels(labels))
    specs = [load_markerset(n) for n in (list_markersets() if candidates is None else candidates)]
    if not specs:
        raise PhysmocapError("no marker sets found; pass --markerset FILE")
    fits = [s for s in specs if not s.missing(have)]
    if fits:
        return max(fits, key=lambda s: (len(have & set(s.names)), -len(s)))
    closest = min(specs, key=lambda s: (len(s.missing(have)), -len(have & set(s.names))))
    raise UnknownNameError(
        f"capture fits no marker set; closest {closest.name} lacks "
        f"{known_list(closest.missing(have))}; pass --markerset FILE")


# --- environments: scene objects and hand holds -----------------------------------------------

_ENV_KEYS = {"meta", "object", "hold"}
_OBJECT_KEYS = {"name", "kind", "from", "to", "radius", "point"}
_HOLD_KEYS = {"hand", "start", "stop", "object", "point"}


@dataclass(frozen=True)
class SceneObject:
    """A graspable object: ``kind`` 'bar' (segment ``start``-``end`` m, ``radius`` m) or
    'point' (``start`` only)."""

    name: str
    kind: str
    start: tuple
    end: tuple | None
    radius: float


@dataclass(frozen=True)
class HandHold:
    """``hand`` ('Left'/'Right') holds ``object`` (or the world ``point``) from ``start`` to
    ``stop`` seconds into the take."""

    hand: str
    start: float
    stop: float
    object: str | None
    point: tuple | None


@dataclass(frozen=True)
class Environment:
    """Scene objects and hand holds (``scenes/environments/*.toml``)."""

    name: str
    objects: tuple
    holds: tuple

    def object(self, name: str) -> SceneObject:
        for o in self.objects:
            if o.name == name:
                return o
        raise UnknownNameError(f"unknown scene object {name!r}; known: "
                               f"{known_list([o.name for o in self.objects]) or 'none'}")


def list_environments() -> list[str]:
    """Names of the shipped environments."""
    return sorted(_shipped("environments"))


def load_environment(name_or_path) -> Environment:
    """An environment by shipped name (``bar``) or file path (TOML/JSON)."""
    path = _resolve(name_or_path, "environments", "environment")
    data = _read(path)
    ck = _Checker(path)
    ck.keys(data, _ENV_KEYS, (), "")
    meta = ck.meta(data)
    objects = []
    for i, o in enumerate(ck.tables(data, "object")):
        where = f"[[object]] #{i + 1}"
        ck.keys(o, _OBJECT_KEYS, ("name", "kind"), where)
        kind = ck.string(o["kind"], where, "kind")
        if kind == "bar":
            ck.keys(o, _OBJECT_KEYS, ("name", "kind", "from", "to"), where)
            objects.append(SceneObject(ck.string(o["name"], where, "name"), kind,
                                       tuple(ck.vector(o["from"], 3, where, "from")),
                                       tuple(ck.vector(o["to"], 3, where, "to")),
                                       ck.number(o.get("radius", 0.02), where, "radius", lo=0)))
        elif kind == "point":
            ck.keys(o, _OBJECT_KEYS, ("name", "kind", "point"), where)
            objects.append(SceneObject(ck.string(o["name"], where, "name"), kind,
                                       tuple(ck.vector(o["point"], 3, where, "point")), None, 0.0))
        else:
            ck.fail(where, f"kind must be 'bar' or 'point', got {kind!r}")
    names = [o.name for o in objects]
    if len(set(names)) != len(names):
        ck.fail("[[object]]", "duplicate object names")
    holds = []
    for i, h in enumerate(ck.tables(data, "hold")):
        where = f"[[hold]] #{i + 1}"
        ck.keys(h, _HOLD_KEYS, ("hand", "start", "stop"), where)
        hand = ck.string(h["hand"], where, "hand")
        if hand not in ("Left", "Right"):
            ck.fail(where, f"hand must be 'Left' or 'Right', got {hand!r}")
        start = ck.number(h["start"], where, "start", lo=0)
        stop = ck.number(h["stop"], where, "stop", lo=start, lo_open=True)
        if ("object" in h) == ("point" in h):
            ck.fail(where, "give exactly one of object or point")
        obj = ck.string(h["object"], where, "object") if "object" in h else None
        if obj is not None and obj not in names:
            raise UnknownNameError(f"{where}: unknown object {obj!r}; known: "
                                   f"{known_list(names) or 'none'}", path)
        point = tuple(ck.vector(h["point"], 3, where, "point")) if "point" in h else None
        holds.append(HandHold(hand, start, stop, obj, point))
    return Environment(meta.get("name", path.stem), tuple(objects), tuple(holds))

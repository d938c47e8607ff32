"""ezc3d -> plain arrays, and the child-process entry point for lenient C3D parsing.

``physmocap.io.c3d`` parses a C3D with ezc3d in-process in strict mode. When strict parsing fails,
it retries with ``ignore_bad_formatting=True`` here, in a separate process, because that mode can
crash the whole interpreter on a corrupt parameter section (SIGSEGV on c3d.org's
``bad_parameter_section.c3d``). The result comes back as a ``.npz`` (no pickle).

Usage (internal): ``python -m physmocap.io._c3d_child IN.c3d OUT.npz``. Exit status 0 = OUT written;
2 = ezc3d raised (one-line reason on stderr); a negative status = killed by a signal.

This module imports nothing from physmocap, so the child starts fast.
"""
from __future__ import annotations

import json
import sys

import numpy as np

__all__ = ["load", "extract", "save", "load_npz", "address_space"]


def _plain(value):
    """A parameter value as JSON-able lists (numbers or strings)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    return [str(v) for v in value]


def extract(c) -> dict:
    """What ``read_c3d`` needs from an ``ezc3d.c3d`` object.

    Returns ``points (3, N, F)`` float64 in file units (NaN where ezc3d says invalid),
    ``residuals (N, F)`` float64, ``header`` (ezc3d's point header: size, frame_rate,
    first_frame 0-based, last_frame) and ``params`` ``{group: {name: list}}``.
    """
    pts = np.asarray(c["data"]["points"], dtype=float)
    res = np.asarray(c["data"]["meta_points"]["residuals"], dtype=float)
    n, f = pts.shape[1], pts.shape[2]
    res = res[0] if res.ndim == 3 and res.shape[0] >= 1 else np.zeros((n, f))
    params: dict = {}
    for group in c["parameters"].keys():
        for name, p in c["parameters"][group].items():
            if name == "__METADATA__":
                continue
            params.setdefault(group, {})[name] = _plain(p["value"])
    hdr = {k: (float(v) if isinstance(v, float) else int(v))
           for k, v in c["header"]["points"].items()}
    return {"points": pts[:3], "residuals": res, "header": hdr, "params": params}


def load(path: str, lenient: bool = False) -> dict:
    """Parse ``path`` with ezc3d and ``extract`` it. ``lenient=True`` may crash the process."""
    import ezc3d

    return extract(ezc3d.c3d(str(path), ignore_bad_formatting=lenient))


def save(out: str, d: dict) -> None:
    # ensure_ascii keeps lone surrogates (undecodable Latin-1 descriptions) as \\udcxx escapes.
    info = json.dumps({"header": d["header"], "params": d["params"]}, ensure_ascii=True)
    np.savez(out, points=d["points"], residuals=d["residuals"], info=np.array(info))


def load_npz(out: str) -> dict:
    with np.load(out, allow_pickle=False) as z:
        info = json.loads(str(z["info"]))
        return {"points": z["points"], "residuals": z["residuals"], **info}


def address_space() -> int:
    """Bytes of address space this process maps now (0 where /proc is unavailable)."""
    try:
        import os
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _limit_resources(src: str, base: int = 0) -> None:
    """Cap the child's address space (``base`` bytes, what a forked child already maps, plus
    room to parse) and disable core dumps.

    A corrupt parameter section can make ezc3d allocate gigabytes and then segfault after
    seconds of paging; with a cap it fails at once with ``std::bad_alloc`` instead.
    """
    try:
        import os
        import resource

        cap = base + 2 * 1024 ** 3 + 64 * os.path.getsize(src)  # parsed data < 8x file size
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))
    except (ImportError, OSError, ValueError):  # not on POSIX, or not allowed: run uncapped
        pass


def main(argv: list[str]) -> int:
    src, out = argv[1], argv[2]
    _limit_resources(src)
    try:
        d = load(src, lenient=True)
    except Exception as exc:  # any parser complaint goes back as one line
        msg = (str(exc).strip().splitlines() or [""])[0]
        sys.stderr.write(f"{type(exc).__name__}: {msg}\n")
        return 2
    save(out, d)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

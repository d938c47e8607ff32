"""Resumable long solves: what a solve has finished, kept on disk until the solve completes.

A one-hour take keeps the solver busy for half an hour or more; a crash, a Ctrl-C or a
SIGTERM must not throw that away. ``solve_capture(..., checkpoint=DIR)`` stores the kinematic
reference once it is done and each block of ``BLOCK`` physically solved frames as it is done;
run again with the same inputs and settings, it loads them and solves only the rest. Blocks are
solved the same way whether or not a run was interrupted (each in a fresh simulation, started
``WARMUP`` frames early), so a resumed solve gives exactly the result of an uninterrupted one.

Files are plain ``.npz`` (``allow_pickle=False``) written atomically, beside a ``key.txt``
holding a hash of everything the result depends on; a folder holding another job's key is
cleared, never mixed in.
"""
from __future__ import annotations

import hashlib
import shutil
import zipfile
from pathlib import Path

import numpy as np

from ..errors import PhysmocapError
from ..io.atomic import atomic_path

__all__ = ["BLOCK", "WARMUP", "Checkpoint", "drop_if_empty", "job_key", "partial_folder"]

#: frames per physically solved block (~50 s at 120 Hz).
BLOCK = 6000
#: frames solved before a block (and discarded) so that it starts like the frames before it:
#: each frame's start carries part of the correction of the frame before
#: (``PhysicalSettings.carry``),
#: and after 64 frames a block's first frame is the one-piece solve's within 1e-6 rad (16:
#: 8e-4, measured on cmu/02_01).
WARMUP = 64


def partial_folder(output) -> Path:
    """Where a long job writing ``output`` keeps its finished stages: ``.NAME.partial`` beside
    it (``solve``, ``batch``, ``--predict``)."""
    output = Path(output)
    return output.parent / f".{output.name}.partial"


def job_key(*parts) -> str:
    """A hash of the arrays (by content) and values (by ``repr``) a result depends on."""
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(f"{a.dtype}{a.shape}".encode())
            flat = a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)
            for s in range(0, flat.size, 1 << 26):        # 64 MB at a time
                h.update(flat[s:s + (1 << 26)])
        else:
            h.update(repr(p).encode())
        h.update(b"\0")
    return h.hexdigest()


class Checkpoint:
    """The stored stages of one solve in ``folder`` (created when needed).

    Args:
        folder: where the stages live; ``key``: ``job_key`` of the solve's inputs and settings.
    """

    def __init__(self, folder, key: str):
        self.folder = Path(folder)
        self.key = key
        self.resumed: list[str] = []
        stamp = self.folder / "key.txt"
        self._made = not self.folder.exists()
        try:
            if self.folder.exists() and not self.folder.is_dir():
                raise PhysmocapError("checkpoint path exists and is not a folder; remove it or "
                                     "choose another", self.folder)
            if stamp.exists() and stamp.read_text().strip() != key:
                shutil.rmtree(self.folder)          # another job's stages: never mix them in
                self._made = True
            self.folder.mkdir(parents=True, exist_ok=True)
            if not stamp.exists():
                with atomic_path(stamp) as tmp:
                    Path(tmp).write_text(key + "\n")
        except OSError as exc:
            raise PhysmocapError(f"cannot use the checkpoint folder ({exc.strerror or exc})",
                                 self.folder) from None

    def load(self, name: str) -> dict | None:
        """The arrays stored as ``name``, or None."""
        path = self.folder / f"{name}.npz"
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                out = {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            return None                             # damaged: solve that stage again
        self.resumed.append(name)
        return out

    def save(self, name: str, **arrays) -> None:
        """Store ``arrays`` as ``name`` (atomically: a stage is there whole or not at all)."""
        with atomic_path(self.folder / f"{name}.npz", suffix=".tmp.npz") as tmp:
            np.savez(tmp, **arrays)

    def drop_if_unused(self) -> None:
        """Delete the folder if this job made it and stored nothing in it: a job refused or
        stopped before its first stage leaves no trace."""
        if self._made:
            drop_if_empty(self.folder)

    def remove(self) -> None:
        """Delete the folder (the solve is complete and written)."""
        shutil.rmtree(self.folder, ignore_errors=True)


def drop_if_empty(folder) -> None:
    """Delete a checkpoint ``folder`` that holds nothing but its key (no stage stored: nothing
    to resume from); leave anything else, or a folder gone or unreadable, as it is."""
    folder = Path(folder)
    try:
        if folder.is_dir() and all(p.name == "key.txt" for p in folder.iterdir()):
            shutil.rmtree(folder, ignore_errors=True)
    except OSError:
        pass

"""Check that Blender's stock BVH importer sees the same joint positions as physmocap's FK.

    python benchmarks/blender_check.py OUT.bvh        # a BVH written by physmocap (cm, Y up)

Needs Debian's ``blender`` on PATH (``apt-get install blender``). Runs Blender headless, imports
the file with default settings (forward -Z, up Y, scale 1), reads every pose bone's head in
world space at four frames and prints the largest difference from ``read_bvh(...).gpos``; and
where the rest pose puts the hips, head, left foot and left hand (Z up in Blender).
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import _common  # noqa: F401  (puts the project on sys.path)

BLENDER_SCRIPT = r'''
import bpy, json, sys, builtins
# Debian's Blender 3.4.1 runs on Python 3.11, where open(..., "rU") no longer exists; its stock
# BVH importer still asks for it. Strip the "U": the importer is otherwise unchanged.
_open = builtins.open
builtins.open = lambda f, mode="r", *a, **k: _open(f, mode.replace("U", ""), *a, **k)
bvh, out, frames = sys.argv[-3], sys.argv[-2], json.loads(sys.argv[-1])
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_anim.bvh(filepath=bvh)
obj = bpy.context.selected_objects[0]
res = {}
for f in frames:
    bpy.context.scene.frame_set(f + 1)          # Blender's first imported frame is 1
    res[f] = {pb.name: list(obj.matrix_world @ pb.head) for pb in obj.pose.bones}
# the rest pose (the armature's bones as imported): what a T-pose tool sees
res["rest"] = {b.name: list(obj.matrix_world @ b.head_local) for b in obj.data.bones}
json.dump(res, open(out, "w"))
'''


def main() -> None:
    from physmocap.io.bvh import read_bvh

    bvh = Path(sys.argv[1]).resolve()
    m = read_bvh(bvh, unit="cm")
    frames = sorted({0, m.n_frames // 3, 2 * m.n_frames // 3, m.n_frames - 1})
    with tempfile.TemporaryDirectory() as tmp:
        script, out = Path(tmp) / "imp.py", Path(tmp) / "pos.json"
        script.write_text(BLENDER_SCRIPT)
        subprocess.run(["blender", "-b", "--python", str(script), "--", str(bvh), str(out),
                        json.dumps(frames)], check=True, capture_output=True)
        got = json.loads(out.read_text())
    rest = got.pop("rest")
    worst = max(np.abs(np.array(p) * 0.01 - m.gpos[int(f), m.skeleton.index(n)]).max()
                for f, bones in got.items() for n, p in bones.items())
    print(f"{bvh.name}: {len(m.skeleton)} joints x {len(frames)} frames; "
          f"max |Blender import - physmocap FK| = {worst:.2e} m")
    # Blender is Z up: a standing rest has its head high and its feet at the floor
    print("rest pose in Blender (x, y, z cm): " + "; ".join(
        f"{n} {' '.join(f'{v:.1f}' for v in rest[n])}" for n in
        ("Hips", "Head", "LeftFoot", "LeftHand") if n in rest))


if __name__ == "__main__":
    main()

"""The viewer: one self-contained HTML page that plays a skeleton (and markers) in 3D.

No library, no CDN, no network: the motion is embedded as base64 float32 arrays and drawn by a
small hand-written 2D-canvas renderer with a perspective camera (orbit by mouse drag, zoom by
wheel), so the page works from a ``file://`` URL on any machine.
"""
from __future__ import annotations

import base64
import json
import re

import numpy as np

from ..errors import PhysmocapError
from ..io.atomic import atomic_write_text
from ..markers import MarkerTrajectories
from ..motion import Motion
from .html import esc

__all__ = ["viewer_html", "write_viewer", "markers_on_motion"]


def joint_side(name: str) -> int:
    """``1`` left, ``-1`` right, ``0`` centre, from common naming habits: ``LeftUpLeg``,
    ``LHipJoint``, ``lKnee``, ``L_Knee``, ``UpperLeg_L`` (and the same with Right/R/r)."""
    for side, word, c in ((1, "left", "lL"), (-1, "right", "rR")):
        if word in name.lower():
            return side
        # A side letter before a capitalised word or an underscore, or after an underscore at
        # the end; not "Lumbar", "RootJoint", "L5".
        if re.match(rf"[{c}](_|[A-Z][a-z])", name) or re.search(rf"_[{c}]$", name):
            return side
    return 0


def _b64(a: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode("ascii")


def markers_on_motion(motion: Motion, markers: MarkerTrajectories
                      ) -> tuple[np.ndarray, np.ndarray | None, tuple, str]:
    """The markers resampled to the motion's frames, and where they sit on the body.

    Returns ``pos (F, M, 3)`` m (nearest capture frame by time; NaN = missing), the body's
    landmarks ``(F, M, 3)`` m or None, the labels, and a note saying how landmarks were found.
    Landmarks need a marker set whose segments the skeleton has (the solver's BVH output does);
    each marker's offset on its segment is fitted to the take (median over frames).
    """
    from ..scene import pick_markerset
    from ..solver.physical import landmarks
    from .trace import fit_marker_offsets

    F = motion.n_frames
    mk = markers.markers_only()
    src = np.clip(np.round(np.arange(F) / motion.fps * mk.fps).astype(int), 0, mk.n_frames - 1)
    pos = mk.pos[src]
    try:
        spec = pick_markerset(mk.labels)
        ms = spec.bind(motion.skeleton, labels=mk.labels)
    except PhysmocapError:
        return pos, None, tuple(mk.labels), ("no residual lines: no marker set fits both the "
                                             "capture and this skeleton")
    cols = [mk.labels.index(n) for n in ms.names]
    pos = pos[:, cols]
    offset = fit_marker_offsets(motion, pos, ms.body)
    from ..markers import MarkerSet
    lm = landmarks(motion.gpos, motion.grot, MarkerSet(ms.names, ms.body, offset))
    return pos, lm, tuple(ms.names), f"residual lines to the {spec.name} landmarks"


def viewer_html(motion: Motion, markers: MarkerTrajectories | None = None,
                title: str = "physmocap viewer") -> str:
    """The page as a string. ``markers`` (optional) are drawn with residual lines to the body."""
    if motion.n_frames == 0:
        raise PhysmocapError("motion has no frames", motion.meta.get("path"))
    gpos = motion.gpos
    data = {"fps": float(motion.fps), "frames": int(motion.n_frames),
            "names": list(motion.skeleton.names),
            "parents": [int(p) for p in motion.skeleton.parents],
            "side": [joint_side(n) for n in motion.skeleton.names],
            "joints": _b64(gpos), "labels": [], "markers": None, "landmarks": None, "note": ""}
    if markers is not None:
        pos, lm, labels, note = markers_on_motion(motion, markers)
        data.update(labels=list(labels), markers=_b64(pos), note=note,
                    landmarks=None if lm is None else _b64(lm))
    # JSON inside <script>: "</" must not close the tag early.
    blob = json.dumps(data).replace("</", "<\\/")
    return (_PAGE.replace("%TITLE%", esc(title)).replace("%DATA%", blob))


def write_viewer(motion: Motion, path, markers: MarkerTrajectories | None = None,
                 title: str | None = None) -> None:
    """Write the viewer page to ``path`` atomically."""
    atomic_write_text(path, viewer_html(motion, markers, title or
                                        f"physmocap viewer: {motion.meta.get('path', '')}"))


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>%TITLE%</title>
<style>
html, body { margin: 0; height: 100%; background: #f4f4f2; font: 13px system-ui, sans-serif; }
#wrap { display: flex; flex-direction: column; height: 100%; }
#view { flex: 1; width: 100%; min-height: 200px; cursor: grab; display: block; }
#bar { display: flex; gap: 10px; align-items: center; padding: 6px 10px; background: #e6e6e2; }
#scrub { flex: 1; }
#frame { font-variant-numeric: tabular-nums; min-width: 215px; }
#bar label, #frame { white-space: nowrap; }
#note { color: #666; }
</style></head><body><div id="wrap">
<canvas id="view"></canvas>
<div id="bar">
 <button id="play" type="button">Play</button>
 <input id="scrub" type="range" min="0" max="0" value="0" step="1">
 <span id="frame">frame 0</span>
 <label><input id="follow" type="checkbox" checked> follow</label>
 <select id="speed"><option value="0.25">0.25x</option><option value="0.5">0.5x</option>
  <option value="1" selected>1x</option><option value="2">2x</option></select>
 <span id="note"></span>
</div></div>
<script type="application/json" id="data">%DATA%</script>
<script>
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  function f32(s) {
    if (!s) return null;
    const bin = atob(s), u = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) u[i] = bin.charCodeAt(i);
    return new Float32Array(u.buffer);
  }
  const F = D.frames, J = D.parents.length, fps = D.fps;
  const joints = f32(D.joints), markers = f32(D.markers), lms = f32(D.landmarks);
  const M = D.labels.length;
  const canvas = document.getElementById("view"), ctx = canvas.getContext("2d");
  const playBtn = document.getElementById("play"), scrub = document.getElementById("scrub");
  const counter = document.getElementById("frame"), follow = document.getElementById("follow");
  const speedSel = document.getElementById("speed");
  document.getElementById("note").textContent =
      (M ? M + " markers; " + D.note + ". " : "") + "Drag: orbit, wheel: zoom, space: play.";
  scrub.max = String(F - 1);

  // Scene extent: centre and size of everything the joints visit (for the initial camera).
  let lo = [1e9, 1e9, 1e9], hi = [-1e9, -1e9, -1e9];
  for (let i = 0; i < joints.length; i += 3)
    for (let k = 0; k < 3; k++) { lo[k] = Math.min(lo[k], joints[i + k]); hi[k] = Math.max(hi[k], joints[i + k]); }
  const height = Math.max(hi[2] - lo[2], 0.5);
  const cam = { yaw: -Math.PI / 3, pitch: 0.2, dist: 1.7 * height };
  let frame = 0, playing = false, t0 = 0, f0 = 0;

  function J3(a, f, j, n) { const i = (f * n + j) * 3; return [a[i], a[i + 1], a[i + 2]]; }
  function target() {
    if (follow.checked) { const r = J3(joints, frame, 0, J); return [r[0], r[1], 0.5 * height + lo[2]]; }
    return [(lo[0] + hi[0]) / 2, (lo[1] + hi[1]) / 2, (lo[2] + hi[2]) / 2];
  }
  function camera() {
    const t = target(), cp = Math.cos(cam.pitch);
    const eye = [t[0] + cam.dist * cp * Math.cos(cam.yaw), t[1] + cam.dist * cp * Math.sin(cam.yaw),
                 t[2] + cam.dist * Math.sin(cam.pitch)];
    const fw = norm(sub(t, eye)), rt = norm(cross(fw, [0, 0, 1])), up = cross(rt, fw);
    return { eye: eye, fw: fw, rt: rt, up: up };
  }
  function sub(a, b) { return [a[0] - b[0], a[1] - b[1], a[2] - b[2]]; }
  function dot(a, b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
  function cross(a, b) { return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]; }
  function norm(a) { const n = Math.hypot(a[0], a[1], a[2]) || 1; return [a[0] / n, a[1] / n, a[2] / n]; }

  function draw() {
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(1, Math.round(canvas.clientWidth * dpr)), h = Math.max(1, Math.round(canvas.clientHeight * dpr));
    if (canvas.width !== w || canvas.height !== h) { canvas.width = w; canvas.height = h; }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#f4f4f2"; ctx.fillRect(0, 0, w, h);
    const c = camera(), focal = 0.9 * Math.min(w, h), cx = w / 2, cy = h / 2;
    function proj(p) {  // perspective projection; null behind the camera or for a missing point
      if (!(p[0] === p[0])) return null;
      const d = sub(p, c.eye), z = dot(d, c.fw);
      if (z < 0.05) return null;
      return [cx + focal * dot(d, c.rt) / z, cy - focal * dot(d, c.up) / z];
    }
    function line(a, b, colour, width) {
      const pa = proj(a), pb = proj(b);
      if (!pa || !pb) return;
      ctx.strokeStyle = colour; ctx.lineWidth = width * dpr;
      ctx.beginPath(); ctx.moveTo(pa[0], pa[1]); ctx.lineTo(pb[0], pb[1]); ctx.stroke();
    }
    // Ground grid (z = 0), 0.5 m squares around the target.
    const t = target(), g0x = Math.round(t[0] / 0.5) * 0.5, g0y = Math.round(t[1] / 0.5) * 0.5;
    for (let k = -8; k <= 8; k++) {
      const col = k === 0 ? "#b8b8b0" : "#d6d6d0";
      line([g0x + k * 0.5, g0y - 4, 0], [g0x + k * 0.5, g0y + 4, 0], col, 1);
      line([g0x - 4, g0y + k * 0.5, 0], [g0x + 4, g0y + k * 0.5, 0], col, 1);
    }
    // Bones.
    for (let j = 1; j < J; j++) {
      const p = D.parents[j];
      if (p < 0) continue;
      const side = D.side[j] > 0 ? "#b03030" : D.side[j] < 0 ? "#3050b0" : "#303030";
      line(J3(joints, frame, p, J), J3(joints, frame, j, J), side, 4);
    }
    ctx.fillStyle = "#202020";
    for (let j = 0; j < J; j++) {
      const q = proj(J3(joints, frame, j, J));
      if (q) { ctx.beginPath(); ctx.arc(q[0], q[1], 3.5 * dpr, 0, 2 * Math.PI); ctx.fill(); }
    }
    // Markers and residual lines (marker -> its landmark on the body).
    if (markers) {
      for (let m = 0; m < M; m++) {
        const p = J3(markers, frame, m, M);
        if (lms) line(p, J3(lms, frame, m, M), "#ff8c00", 2);
        const q = proj(p);
        if (q) { ctx.fillStyle = "#1f9fd0"; ctx.fillRect(q[0] - 3 * dpr, q[1] - 3 * dpr, 6 * dpr, 6 * dpr); }
      }
    }
    counter.textContent = "frame " + frame + " / " + (F - 1) + "  (" + (frame / fps).toFixed(2) + " s)";
    counter.dataset.frame = String(frame);
    scrub.value = String(frame);
  }

  function setFrame(f) { frame = Math.max(0, Math.min(F - 1, f | 0)); draw(); }
  function setPlaying(on) {
    playing = on; playBtn.textContent = on ? "Pause" : "Play";
    t0 = performance.now(); f0 = frame;
    if (on) requestAnimationFrame(tick);
  }
  function tick(now) {
    if (!playing) return;
    const f = f0 + Math.floor((now - t0) / 1000 * fps * parseFloat(speedSel.value));
    if (f >= F) { t0 = now; f0 = 0; setFrame(0); } else if (f !== frame) setFrame(f);
    requestAnimationFrame(tick);
  }
  playBtn.addEventListener("click", function () { setPlaying(!playing); });
  scrub.addEventListener("input", function () { setFrame(parseInt(scrub.value, 10)); if (playing) setPlaying(true); });
  follow.addEventListener("change", draw);
  speedSel.addEventListener("change", function () { if (playing) setPlaying(true); });
  let drag = null;
  canvas.addEventListener("pointerdown", function (e) { drag = [e.clientX, e.clientY]; canvas.setPointerCapture(e.pointerId); canvas.style.cursor = "grabbing"; });
  canvas.addEventListener("pointerup", function () { drag = null; canvas.style.cursor = "grab"; });
  canvas.addEventListener("pointermove", function (e) {
    if (!drag) return;
    cam.yaw -= (e.clientX - drag[0]) * 0.01;
    cam.pitch = Math.max(-1.4, Math.min(1.4, cam.pitch + (e.clientY - drag[1]) * 0.01));
    drag = [e.clientX, e.clientY]; draw();
  });
  canvas.addEventListener("wheel", function (e) { e.preventDefault(); cam.dist *= Math.exp(e.deltaY * 0.001); draw(); }, { passive: false });
  window.addEventListener("keydown", function (e) {
    if (e.key === " ") { e.preventDefault(); setPlaying(!playing); }
    else if (e.key === "ArrowRight") setFrame(frame + 1);
    else if (e.key === "ArrowLeft") setFrame(frame - 1);
  });
  window.addEventListener("resize", draw);
  draw();
})();
</script></body></html>
"""

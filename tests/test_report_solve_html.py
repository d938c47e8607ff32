"""The HTML solve report: self-contained, every figure present, the CLI paths and errors."""
from __future__ import annotations

import re
import sys

import numpy as np
import pytest

from physmocap.cli import main
from physmocap.errors import PhysmocapError
from conftest import page_images

PNG = b"\x89PNG\r\n\x1a\n"


def test_solve_report_html_is_self_contained(demo_solve):
    html = demo_solve["html"].read_text()
    # No network: nothing fetched from anywhere, no external script or stylesheet.
    assert not re.search(r"(src|href)=\"(https?:|//)", html)
    assert "<script" not in html and "<link" not in html
    imgs = page_images(html)
    assert len(imgs) == 7 and all(i.startswith(PNG) and len(i) > 5000 for i in imgs)
    for heading in ("Marker residuals", "Gaps and where the body carried the solve",
                    "Foot plants", "Joint angles", "Foot height and skate", "Joint-limit hits",
                    "Key frames"):
        assert f"<h2>{heading}</h2>" in html
    assert "LKNE 60 fr" in html or "LKNE" in html          # the swapped markers are named


def test_report_command_rebuilds_the_page(demo_solve, tmp_path, capsys):
    out = tmp_path / "again.html"
    assert main(["report", str(demo_solve["json"]), "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    assert len(page_images(out.read_text())) == 7
    # Several reports: one page beside each; -o with several is refused in one line.
    code = main(["report", str(demo_solve["json"]), str(demo_solve["json"]), "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "one report" in err[0]
    code = main(["report", str(tmp_path / "none.json")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "cannot read" in err[0]


def test_a_capture_compared_with_plug_in_gait_gets_its_figure(demo_solve, tmp_path, capsys):
    """A report holding ``plug_in_gait_segments`` (a capture with Plug-in Gait's own solve)
    gets one more figure; the demo's has none."""
    import json
    rep = json.loads(demo_solve["json"].read_text())
    assert "plug_in_gait_segments" not in rep
    rep["plug_in_gait_segments"] = {
        k: {"segment": s, "offset_deg": 1.0, "residual_median_deg": m,
            "residual_p95_deg": 2 * m, "twist_median_deg": m, "swing_median_deg": 0.5,
            "frames": 152} for k, s, m in (("PEL", "Hips", 1.3), ("HED", "Head", 0.1),
                                            ("LFE", "LeftUpperLeg", 2.2))}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(rep))
    out = tmp_path / "r.html"
    assert main(["report", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    html = out.read_text()
    assert "<h2>Against Plug-in Gait</h2>" in html and len(page_images(html)) == 8

def test_the_summary_says_which_toes_the_floor_bent(demo_solve, tmp_path, capsys):
    """The demo's CMU toes carry a marker: none bent. A Plug-in Gait solve's are named."""
    import json
    rep = json.loads(demo_solve["json"].read_text())
    assert rep["toes_bent"] == {}
    assert "<td>toes bent by the floor</td><td>none</td>" in demo_solve["html"].read_text()
    rep["toes_bent"] = {"LeftToes": {"frames_over_1deg": 199, "max_deg": 47.2,
                                     "standing_height_m": 0.0144}}
    src = tmp_path / "r.json"
    src.write_text(json.dumps(rep))
    out = tmp_path / "r.html"
    assert main(["report", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "LeftToes 199 fr, up to 47 deg" in out.read_text()
    del rep["toes_bent"]                                 # a report from before: no row
    src.write_text(json.dumps(rep))
    assert main(["report", str(src), "-o", str(out)]) == 0, capsys.readouterr().err
    assert "toes bent by the floor" not in out.read_text()


def test_report_page_never_replaces_the_files_it_reads(demo_solve, capsys):
    """``report R.json -o X``: X naming the report, or the BVH or C3D the report names (found
    through the report, not given) is refused in one line, the file untouched."""
    for path in (demo_solve["json"], demo_solve["bvh"], demo_solve["c3d"]):
        before = path.read_bytes()
        code = main(["report", str(demo_solve["json"]), "-o", str(path)])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 1 and len(err) == 1 and "overwrite an input" in err[0], err
        assert path.read_bytes() == before


def test_key_frames_include_the_worst_frame(demo_solve):
    from physmocap.report.solve_html import key_frames
    from physmocap.report.trace import trace_from_files

    tr, _ = trace_from_files(demo_solve["json"])
    frames = key_frames(tr)
    r = np.nan_to_num(np.where(tr.outliers, np.nan, tr.residual)).max(1)
    assert int(np.argmax(r)) in frames and 2 <= len(frames) <= 4
    assert frames == sorted(frames) and all(0 <= f < tr.n_frames for f in frames)


def test_a_long_take_is_drawn_from_at_most_max_columns(demo_solve, monkeypatch):
    """The time-by-row pictures of a take longer than ``MAX_COLUMNS`` frames are drawn from
    that many columns (matplotlib made RGBA arrays of every frame: 143 MB more for a 3-minute
    take), still spanning the whole take; a shorter take is drawn frame by frame."""
    from physmocap.report import solve_html as sh
    from physmocap.report.trace import trace_from_files

    tr, _ = trace_from_files(demo_solve["json"])
    F = tr.n_frames
    whole = sh.fig_residuals(tr)
    assert whole.axes[0].images[0].get_array().shape == (len(tr.labels), F)
    monkeypatch.setattr(sh, "MAX_COLUMNS", 40)
    for make in (sh.fig_residuals, sh.fig_carried, sh.fig_plants):
        ax = make(tr).axes[0]
        assert ax.images[0].get_array().shape[1] <= 40
        assert ax.get_xlim() == pytest.approx((0.0, F / tr.fps))


def test_columns_keep_what_a_frame_shows(monkeypatch):
    """A column holds the largest of its frames (one outlier frame among 50 shows), NaN only
    where every frame is (a gap); plants by majority; the columns cover every frame."""
    from physmocap.report import solve_html as sh

    monkeypatch.setattr(sh, "MAX_COLUMNS", 10)
    a = np.ones((103, 2))
    a[57, 0] = 50.0                               # one frame far off
    a[:11, 1] = np.nan                            # a gap over the whole first column
    b, k = sh._columns(a, "max")
    assert k == 11 and b.shape == (10, 2)         # ceil(103 / 10) frames a column
    assert b[57 // k, 0] == 50.0 and np.isnan(b[0, 1]) and not np.isnan(b[1:, 1]).any()
    plants = np.zeros((103, 1), bool)
    plants[:8] = True                             # 8 of the first column's 11 frames
    plants[11:14] = True                          # 3 of the second's
    m, _ = sh._columns(plants, "majority")
    assert m[:2, 0].tolist() == [1.0, 0.0]
    same, k1 = sh._columns(a[:10], "max")
    assert k1 == 1 and np.array_equal(same, a[:10], equal_nan=True)


def test_missing_matplotlib_is_a_clear_error(monkeypatch):
    from physmocap.report._mpl import pyplot

    monkeypatch.setitem(sys.modules, "matplotlib", None)    # import fails as if not installed
    with pytest.raises(PhysmocapError, match=r"physmocap\[report\]"):
        pyplot()

"""Small helpers for self-contained HTML pages: figures as embedded PNG, escaped text."""
from __future__ import annotations

import base64
import html
import io
import json

__all__ = ["figure_png", "img_tag", "esc", "PAGE_STYLE", "report_page", "report_value",
           "asked_speeds_text", "fast_turns_text"]

esc = html.escape

#: Inline CSS shared by the pages (no external stylesheet: pages must work offline).
PAGE_STYLE = """
body { font-family: system-ui, -apple-system, 'Segoe UI', sans-serif; margin: 24px auto;
       max-width: 1180px; color: #222; background: #fff; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table.kv td { padding: 2px 12px 2px 0; } table.kv td:first-child { color: #666; }
figure { margin: 8px 0 20px 0; } figure img { max-width: 100%; }
figcaption { color: #555; font-size: 13px; }
"""


def figure_png(fig, dpi: int = 90) -> bytes:
    """PNG bytes of a matplotlib figure (the figure is closed)."""
    from ._mpl import pyplot
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    pyplot().close(fig)
    return buf.getvalue()


def img_tag(png: bytes, alt: str) -> str:
    """An ``<img>`` with the PNG embedded as a data URL (no file or network needed)."""
    return (f'<img alt="{esc(alt)}" src="data:image/png;base64,'
            f'{base64.b64encode(png).decode("ascii")}">')


def report_page(title: str, rows, sections, report: dict) -> str:
    """A whole self-contained page: the heading ``title``, a table of ``rows`` ``(label,
    value)``, one figure per section ``(name, figure, caption)`` (embedded as PNG; each figure
    is closed) and the JSON ``report`` folded away at the end."""
    table = "".join(f"<tr><td>{esc(k)}</td><td>{esc(str(v))}</td></tr>" for k, v in rows)
    body = [f"<h1>{esc(title)}</h1>", f'<table class="kv">{table}</table>']
    for name, fig, caption in sections:
        body.append(f"<h2>{esc(name)}</h2><figure>{img_tag(figure_png(fig), name)}"
                    f"<figcaption>{esc(caption)}</figcaption></figure>")
    body.append("<h2>JSON report</h2><details><summary>show</summary><pre>"
                + esc(json.dumps(report, indent=1, default=float)) + "</pre></details>")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{PAGE_STYLE}</style></head><body>\n"
            + "\n".join(body) + "\n</body></html>\n")


def report_value(rep: dict):
    """``value(key, fmt="{}")``: ``rep[key]`` formatted, or ``None`` where the report has no
    such figure (its summary row is left out)."""
    def value(key: str, fmt: str = "{}"):
        v = rep.get(key)
        return None if v is None else fmt.format(v)
    return value


def asked_speeds_text(asked: dict | None) -> str | None:
    """The report's ``asked_speeds`` in a line (``matching.coverage``)."""
    if not asked:
        return None
    from ..matching.coverage import ranges_text
    keeps = ranges_text(asked["database_speeds_m_s"])
    if not asked["uncovered_s"]:
        return f"none (the database's clips keep {keeps})"
    at = ranges_text([asked["uncovered_speed_range_m_s"]])
    return f"{asked['uncovered_s']:.1f} s at {at} (the database's clips keep {keeps})"


def fast_turns_text(turns: dict | None) -> str | None:
    """The report's ``turns`` in a line (``matching.coverage.fast_turns``)."""
    if not turns:
        return None
    return (f"{turns['too_fast_s']:.1f} s (the run's fastest {turns['max_rad_s']:.2f} rad/s "
            f"over a second; the database's clips keep up to {turns['database_keeps_rad_s']:.2f})")

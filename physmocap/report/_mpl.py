"""matplotlib, imported lazily with the file-only Agg backend (an optional extra: ``report``)."""
from __future__ import annotations

from ..errors import PhysmocapError

__all__ = ["pyplot"]


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed); a clear error if missing."""
    try:
        import matplotlib
    except ImportError:
        raise PhysmocapError("plots need matplotlib: pip install 'physmocap[report]'") from None
    # Agg renders to files only: reports are made on servers and CI with no display.
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt

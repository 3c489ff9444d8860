"""The panel size of pgascol.blas's replicated matrices across nodes: how
many bytes of another node's part gemm and syrk fetch in one Rget
(operands.panels). PGASCOL_BLAS_PANEL_BYTES, else the plateau that
`python -m pgascol.blas.calibrate` measured and stored (default_path),
else PANEL_BYTES."""
import json
import os

from ..node.calibration import cache_path

#: The panel in bytes when neither PGASCOL_BLAS_PANEL_BYTES nor a calibration says.
PANEL_BYTES = 4 << 20

_calibrated = None      # the stored panel size, read once per process


def default_path():
    """The calibration's file: PGASCOL_BLAS_CALIBRATION, else ~/.cache/pgascol/blas-<host>.json."""
    return cache_path("blas", "PGASCOL_BLAS_CALIBRATION")


def load(path=None):
    """The stored panel size in bytes, or None."""
    try:
        with open(path or default_path()) as f:
            return int(json.load(f)["panel_bytes"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def panel_bytes():
    """PGASCOL_BLAS_PANEL_BYTES, else the calibrated plateau, else PANEL_BYTES."""
    env = os.environ.get("PGASCOL_BLAS_PANEL_BYTES")
    if env:
        return int(env)
    global _calibrated
    if _calibrated is None:
        _calibrated = load() or PANEL_BYTES
    return _calibrated

"""The calibration file: where single copy beats copy-in/copy-out on this machine.

Written by ``mpiexec -n 2 python -m pgascol calibrate`` (pgascol/tools/calibrate.py
measures), read here by every later job: {collective: smallest size in bytes from
which single copy wins, or None for never}. PGASCOL_CMA_MIN_* variables still
override it (pgascol/node/config.py)."""
import json
import os
import socket


def cache_path(name, variable):
    """Where a per-host measurement file lives: the path in environment
    variable `variable` if set, else ~/.cache/pgascol/<name>-<host>.json
    (or under $XDG_CACHE_HOME)."""
    env = os.environ.get(variable)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pgascol", "%s-%s.json" % (name, socket.gethostname()))


def default_path():
    return cache_path("calibration", "PGASCOL_CALIBRATION")


def load(path=None):
    """{collective: bytes or None} from the calibration file, or {} if absent/unreadable."""
    path = path or default_path()
    try:
        with open(path) as f:
            data = json.load(f)
        return {k: (None if v is None else int(v)) for k, v in data["cma_min"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}

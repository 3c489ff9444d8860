"""The calibration file: the path table this machine learned, kept for later jobs.

Each job learns, per collective, size class and team shape, which path is
fastest (pgascol/comm/tune.pxi); `mpiexec -n 2 python -m pgascol calibrate`
learns the same table ahead of time (pgascol/tools/calibrate.py). Both store
it here, and later jobs start from it:

    {"format": "pgascol-calibration/2",
     "fingerprint": {"cpu": ..., "caches": ..., "cores": ..., "kernel": ...,
                     "mpi": ..., "pgascol": ...},
     "tables": {shape: {collective: {size class: path}}},
     "sources": {shape: "calibrate" or "learned"}, "written": date}

A shape is "<nodes>n<ranks>r", with "o" appended when ranks outnumber CPUs;
a size class k holds calls of 2**k to 2**(k+1) - 1 bytes (the bytes
tune.pxi counts for that collective). A file whose fingerprint differs from
this machine's (another CPU, cache, core count, kernel, MPI library or
pgascol version), a corrupt one and an unreadable one are ignored
(`status()` says why, `pgascol info` shows it); a read-only or missing cache
directory only means nothing is kept."""
import json
import os

FORMAT = "pgascol-calibration/2"
_CPU_SYSFS = "/sys/devices/system/cpu/cpu0/cache"


def cache_path(name, variable):
    """Where a per-host measurement file lives: the path in environment
    variable `variable` if set, else ~/.cache/pgascol/<name>-<host>.json
    (or under $XDG_CACHE_HOME)."""
    env = os.environ.get(variable)
    if env:
        return env
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pgascol", "%s-%s.json" % (name, os.uname().nodename))


def default_path():
    return cache_path("calibration", "PGASCOL_CALIBRATION")


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


def _caches(root=_CPU_SYSFS):
    """{"L1d": bytes, "L2": ..., "L3": ...} of CPU 0 from sysfs ({} where hidden)."""
    out = {}
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        return out
    for e in entries:
        if not e.startswith("index"):
            continue
        try:
            with open(os.path.join(root, e, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(root, e, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(root, e, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
        out["L%s%s" % (level, "d" if kind == "Data" else "")] = int(size.rstrip("KMG")) * mult
    return out


def _mpi_library():
    try:
        from mpi4py import MPI
        return MPI.Get_library_version().strip().splitlines()[0].strip()
    except Exception:   # no MPI here (pgascol info without mpi4py's library): still a fingerprint
        return "unknown"


_fingerprint = None


def fingerprint():
    """What a learned table depends on (computed once per process)."""
    global _fingerprint
    if _fingerprint is None:
        from .. import __version__
        _fingerprint = {"cpu": _cpu_model(), "caches": _caches(), "cores": os.cpu_count() or 0,
                        "kernel": os.uname().release, "mpi": _mpi_library(), "pgascol": __version__}
    return _fingerprint


_loaded = {}    # path -> (tables, status)


def read(path=None):
    """(tables, status) of the calibration file: tables {shape: {collective:
    {class: path}}} ({} where there is none to use) and a one-line status:
    "used", "none" (no file), or why it is ignored."""
    path = path or default_path()
    if path in _loaded:
        return _loaded[path]
    try:
        with open(path) as f:
            doc = json.load(f)
    except FileNotFoundError:
        got = ({}, "none")
    except OSError as e:
        got = ({}, "ignored: unreadable (%s)" % (e.strerror or e))
    except ValueError:
        got = ({}, "ignored: not valid JSON")
    else:
        got = _check(doc)
    _loaded[path] = got
    return got


def _check(doc):
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        return {}, "ignored: not a %s file (written by another pgascol version?)" % FORMAT
    theirs, mine = doc.get("fingerprint"), fingerprint()
    if not isinstance(theirs, dict):
        return {}, "ignored: no fingerprint"
    differs = [k for k in mine if theirs.get(k) != mine[k]]
    if differs:
        return {}, "ignored: made on another machine or set-up (%s differ)" % ", ".join(differs)
    tables = doc.get("tables")
    try:
        clean = {str(shape): {str(c): {int(k): str(p) for k, p in classes.items()} for c, classes in colls.items()}
                 for shape, colls in tables.items()}
    except (AttributeError, TypeError, ValueError):
        return {}, "ignored: its tables are malformed"
    return clean, "used"


def load(path=None):
    """{shape: {collective: {class: path}}} to start from ({} if none usable)."""
    return read(path)[0]


def save(tables, source, path=None):
    """Merge `tables` ({shape: {collective: {class: path}}}) into the file
    (entries of other shapes kept where the fingerprint matches) and write
    it atomically. Returns the path, or None where it cannot be written (a
    read-only or missing cache directory is not an error)."""
    path = path or default_path()
    _loaded.pop(path, None)
    old, status = read(path)
    _loaded.pop(path, None)
    merged = old if status == "used" else {}
    sources = {}
    if status == "used":
        try:
            with open(path) as f:
                sources = dict(json.load(f).get("sources") or {})
        except (OSError, ValueError, AttributeError, TypeError):
            sources = {}
    for shape, colls in tables.items():
        into = merged.setdefault(shape, {})
        for c, classes in colls.items():
            into.setdefault(c, {}).update(classes)
        sources[shape] = source
    doc = {"format": FORMAT, "fingerprint": fingerprint(), "tables":
           {s: {c: {str(k): p for k, p in sorted(cl.items())} for c, cl in colls.items()}
            for s, colls in merged.items()},
           "sources": sources, "written": _now()}
    try:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        import tempfile     # (here: not on a job's start-up path)
        fd, tmp = tempfile.mkstemp(prefix=".calibration-", dir=d)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(doc, f, indent=1)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return None
    return path


def _now():
    import datetime
    return datetime.datetime.now().isoformat(timespec="seconds")

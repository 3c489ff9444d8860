"""The fingerprint of a benchmark run: what its figures depend on, stored in
every pgascol-bench/1 document (meta["fingerprint"]) so that runs made at
different times can be told comparable or not.

    {"machine": {cpu_model, caches, cores, kernel, governor, mpi_library,
                 simd, env (every PGASCOL_* variable), calibration_digest,
                 ranks_per_core},
     "build": {pgascol, git_revision, core_sha256, compiler, cflags},
     "conditions": {load_before, load_after, busy, steal}}

Two runs are comparable when their "machine" parts are equal; "build" is
what a comparison usually changes (reported, never a mismatch);
"conditions" is the load seen while the run measured (busy and steal: the
fraction of all CPUs' time spent busy and stolen by the hypervisor, from
/proc/stat; None where unreadable). `python -m
pgascol.tools.bench_fingerprint [NP]` prints the fingerprint of the
interpreter that runs it (what `pgascol-bench ab` asks each install).
Importing this module loads neither MPI nor the C extension.
"""
import hashlib
import json
import os
import platform
import sys
import sysconfig

MACHINE_KEYS = ("cpu_model", "caches", "cores", "kernel", "governor", "mpi_library", "simd", "env",
                "calibration_digest", "ranks_per_core")


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _simd():
    """The loops the engine uses: PGASCOL_SIMD=0 pins the baseline; else
    what the CPU runs ("avx2" or "baseline"); None without the C extension."""
    if os.environ.get("PGASCOL_SIMD", "1").strip() == "0":
        return "baseline"
    try:
        from ..engine import _core
        return _core.cpu_simd()
    except Exception:   # not built: the fingerprint says so rather than fail
        return None


def _compiler():
    """The compiler recorded in the C extension's .comment section (gcc's
    "GCC: (Debian 12.2.0-14) 12.2.0"), else the one Python was built with."""
    try:
        from ..engine import _core
        with open(_core.__file__, "rb") as f:
            data = f.read()
        at = data.find(b"GCC: (")
        if at >= 0:
            return data[at:data.find(b"\0", at)].decode("ascii", "replace")
    except Exception:
        pass
    return sysconfig.get_config_var("CC")


def _core_path():
    try:
        from importlib.util import find_spec
        spec = find_spec("pgascol.engine._core")
        return spec.origin if spec else None
    except Exception:
        return None


def physical_cores():
    try:
        import psutil
        return psutil.cpu_count(logical=False)
    except Exception:
        return None


def fingerprint(np_=None, mpi_library=None):
    """This interpreter's fingerprint for a job of np_ ranks (the
    conditions are filled by a LoadProbe)."""
    from ..node.calibration import _caches, _cpu_model, default_path
    from .. import __version__
    from .bench_harness import _git_revision
    logical, physical = os.cpu_count(), physical_cores()
    cores = physical or logical
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("PGASCOL_")}
    return {
        "machine": {
            "cpu_model": _cpu_model(), "caches": _caches(),
            "cores": {"logical": logical, "physical": physical}, "kernel": platform.release(),
            "governor": _read("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
            "mpi_library": mpi_library, "simd": _simd(), "env": env,
            "calibration_digest": _digest(default_path()),
            "ranks_per_core": round(np_ / cores, 3) if np_ and cores else None},
        "build": {"pgascol": __version__, "git_revision": _git_revision(),
                  "core_sha256": _digest(_core_path()) if _core_path() else None,
                  "compiler": _compiler(), "cflags": sysconfig.get_config_var("CFLAGS")},
        "conditions": {"load_before": None, "load_after": None, "busy": None, "steal": None}}


def _cpu_times():
    """(total, busy, steal) jiffies of all CPUs from /proc/stat, or None."""
    line = _read("/proc/stat")
    if not line:
        return None
    fields = [int(x) for x in line.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    steal = fields[7] if len(fields) > 7 else 0
    return sum(fields[:8]), sum(fields[:8]) - idle - steal, steal


class LoadProbe:
    """The machine's load over a stretch of time: start(), then stop() ->
    {"load_before", "load_after", "busy", "steal"}."""

    def start(self):
        self.load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        self.times = _cpu_times()
        return self

    def stop(self):
        after = _cpu_times()
        busy = steal = None
        if self.times and after and after[0] > self.times[0]:
            total = after[0] - self.times[0]
            busy = round((after[1] - self.times[1]) / total, 3)
            steal = round((after[2] - self.times[2]) / total, 3)
        return {"load_before": self.load_before,
                "load_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
                "busy": busy, "steal": steal}


def differences(base_meta, new_meta):
    """The machine keys whose values differ between two runs' meta, as
    [(key, base value, new value)]; [("fingerprint", ...)] where a side has
    none (written before pgascol-bench kept one)."""
    fb, fn = base_meta.get("fingerprint"), new_meta.get("fingerprint")
    if not isinstance(fb, dict) or not isinstance(fn, dict):
        return [("fingerprint", "present" if isinstance(fb, dict) else None,
                 "present" if isinstance(fn, dict) else None)]
    mb, mn = fb.get("machine") or {}, fn.get("machine") or {}
    return [(k, mb.get(k), mn.get(k)) for k in MACHINE_KEYS if mb.get(k) != mn.get(k)]


if __name__ == "__main__":
    np_arg = int(sys.argv[1]) if len(sys.argv) > 1 else None
    try:
        from mpi4py import MPI
        library = MPI.Get_library_version().strip().splitlines()[0].strip()
    except Exception:
        library = None
    json.dump(fingerprint(np_arg, library), sys.stdout)
    sys.stdout.write("\n")

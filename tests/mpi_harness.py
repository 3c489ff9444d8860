"""Run test programs under the MPI launcher and report per-rank outcomes.

Test programs are plain Python files in ``tests/mpi_programs/``.  Every
top-level ``def test_*`` in them is a test; a test may take a ``comm``
parameter and then receives ``MPI.COMM_WORLD``::

    # tests/mpi_programs/comm_coll_buffers.py
    def test_bcast(comm):
        ...

A table of launches, each a `Run` of (programs, rank counts, environment),
becomes pytest items with `program_tests` (tests/test_mpi_programs.py holds
the suite's table)::

    from tests.mpi_harness import Run, program_tests

    TABLE = [
        Run("comm_coll_buffers.py"),                    # 1, 2, 3, 4 and 8 ranks
        Run("comm_coll_buffers.py", (3, 4, 8),
            "vnodes_of_2",                              # a name for the setting
            {"PGASCOL_NODE_SIZE": "2"}, timeout=300),   # extra environment
        Run(("comm_coll_buffers.py",                    # programs sharing a launch
             "comm_coll_vectors.py"), (2,)),
    ]
    test_collectives = program_tests(TABLE)

Every test function of a row's programs, rank count and setting is one
pytest item, e.g. ``test_comm[comm_coll_buffers::test_bcast-np4-vnodes_of_2]``;
all items of one (programs, np, setting) are read from a single ``mpiexec``
launch, cached for the whole pytest run by the ``mpi_jobs`` fixture in
``tests/conftest.py``.  Besides them there is one ``clean_exit-np<N>[-setting]``
item per launch that fails when the job timed out, crashed, or exited with a
non-zero status.  A Run may also name ``exclude``d functions (neither
collected nor run) and ``marks``: a mark, a list of marks, or a callable
``np -> mark(s)`` per function name.

The programs of one launch are loaded in the order given (module-level code
runs once per launch, collectively) and their functions run one program
after the other; with several programs a function's name in a launch is
``<program stem>::<function>``, with one program the bare function name.

Direct use (e.g. to assert on a failure that is expected)::

    result = run_mpi("engine_collectives_results.py", np=4, select="bcast")
    result.failed_ranks("test_bcast_every_root_and_size")  # -> [] or e.g. [1, 3]
    result.check("test_bcast_every_root_and_size")  # raises MPITestFailure with a report
    result.check()                                   # every function + clean exit

Environment variables:

* ``PGASCOL_TEST_NP=2,4`` restricts the rank counts of `program_tests`.
* ``PGASCOL_TEST_LAUNCHER`` overrides the launcher, e.g. ``mpirun`` or
  ``"/opt/ompi/bin/mpiexec --bind-to none"`` (split like a shell would).
* ``PGASCOL_TIMEOUT`` is passed to the ranks; it defaults to ``20``.
* ``PGASCOL_TEST_KILL_AFTER`` (seconds) is each rank's alarm; it defaults to
  the launch's timeout plus the time the host's kill takes (see below).
* ``PGASCOL_TEST_HOSTS=N`` (pytest's ``--hosts N``) launches every job across
  N emulated hosts (tests/cluster/hosts.py: root needed; ranks in blocks of
  ceil(np / N) per host), PGASCOL_TEST_LAUNCHER aside.

Inside the job every rank runs this module as a mini test runner
(``python -m tests.mpi_harness [-k SUBSTRING | --only NAME ...] PROGRAM
[PROGRAM ...] RESULT_DIR [-- PROGRAM_ARGS]``; a PROGRAM as in a Run, or a
path; the same command reruns one function by hand under ``mpiexec``).  It
runs the selected functions in order, synchronises all ranks with a barrier
after each one, and keeps ``RESULT_DIR/rank-<r>.json`` up to date after every
step::

    {"rank": 0, "pid": 1234, "running": null, "finished": true,
     "setup_error": null,
     "results": {"test_x": {"ok": true, "error": null, "seconds": 0.01}}}

``running`` names the function a rank is inside, so when a job hangs (e.g. one
rank failed and the others wait in a collective) the host side can tell which
rank was stuck where.  On timeout the host also asks every rank for a Python
stack dump (faulthandler on SIGUSR1) before it kills the job.

No rank outlives its job.  MPICH's hydra calls setsid(2) for its proxy and
for every rank (``ps -eo pid,pgid,sid,args`` during ``mpiexec -n 2 sleep 3``
shows each with pid = pgid = sid), so the launcher's process group does
not hold them: on timeout the host kills the launcher's group, every
descendant of the launcher, and every rank its report names (found even
after its proxy died and it was reparented).  Should the host itself die
(killed by an outer timeout, say), each rank still carries a kernel alarm
(``PGASCOL_TEST_KILL_AFTER`` seconds, set by the host to the job's timeout
plus the time the host's own kill takes): SIGALRM's default action ends the
process whatever it is doing, in MPI or in C, with or without the GIL.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import faulthandler
import functools
import importlib.util
import inspect
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

# The results of a job, and their reports: tests/mpi_harness_results.py.
from tests.mpi_harness_results import (FunctionOutcome, MPIRunResult, MPITestFailure, RankReport,  # noqa: F401
                                       _read_rank_reports)

TESTS_DIR = Path(__file__).resolve().parent
REPO_ROOT = TESTS_DIR.parent
PROGRAMS_DIR = TESTS_DIR / "mpi_programs"

DEFAULT_NPROCS = (1, 2, 3, 4, 8)
DEFAULT_PGASCOL_TIMEOUT = "20"

# How long ranks get to write their stack dumps, and the launcher to shut
# down on SIGTERM, before everything is killed.
STACK_DUMP_WAIT = 2.0
TERMINATE_GRACE = 2.0
# A rank's own alarm goes off this long after the job's timeout: the host's
# stack dump and kill come first.
KILL_AFTER_MARGIN = STACK_DUMP_WAIT + 2 * TERMINATE_GRACE + 5.0


# ---------------------------------------------------------------------------
# Shared by both sides: finding the test functions of a program
# ---------------------------------------------------------------------------

def resolve_program(program: str | os.PathLike) -> Path:
    """Absolute path of a test program; a relative name is looked up in
    tests/mpi_programs/, then in the working directory."""
    path = Path(program)
    if not path.is_absolute():
        path = PROGRAMS_DIR / path if (PROGRAMS_DIR / path).is_file() else path.resolve()
    if not path.is_file():
        raise FileNotFoundError(f"MPI test program not found: {path}")
    return path


def list_test_functions(program: str | os.PathLike) -> list[str]:
    """Names of the top-level ``def test_*`` functions, in definition order.

    Parses the source instead of importing it, so no MPI is needed."""
    path = resolve_program(program)
    tree = ast.parse(path.read_text(), filename=str(path))
    return [node.name for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")]


def resolve_programs(programs) -> tuple[Path, ...]:
    """The paths of one launch's programs: `programs` is one program or a
    sequence of them (their stems must differ)."""
    if isinstance(programs, (str, os.PathLike)):
        programs = (programs,)
    paths = tuple(resolve_program(p) for p in programs)
    stems = [p.stem for p in paths]
    if not paths or len(set(stems)) != len(stems):
        raise ValueError(f"a launch needs programs of distinct names, not {stems}")
    return paths


def list_tests(programs) -> list[str]:
    """The names of a launch's test functions, in the order they run: bare
    function names for one program, ``<stem>::<function>`` for several."""
    paths = resolve_programs(programs)
    if len(paths) == 1:
        return list_test_functions(paths[0])
    return [f"{p.stem}::{name}" for p in paths for name in list_test_functions(p)]


def _split_name(name: str, paths: tuple[Path, ...]) -> tuple[Path, str]:
    """The program and function a test name of a launch of `paths` names."""
    if len(paths) == 1:
        return paths[0], name
    stem, _, function = name.partition("::")
    return next(p for p in paths if p.stem == stem), function


# ---------------------------------------------------------------------------
# Host side: the launcher
# ---------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _detect_launcher() -> tuple[tuple[str, ...], str]:
    # pgascol.tools.bench_harness finds the launcher for `pgascol-bench` too; importing
    # it loads neither MPI nor the C extension (pgascol/__init__ is lazy).
    from pgascol.tools.bench_harness import find_launcher as find
    prefix, impl = find(os.environ.get("PGASCOL_TEST_LAUNCHER"))
    return tuple(prefix), impl


def find_launcher() -> tuple[list[str], str]:
    """``(argv_prefix, impl)`` for starting MPI jobs, impl being "mpich",
    "openmpi" or "unknown".  Detected once per process."""
    prefix, impl = _detect_launcher()
    return list(prefix), impl


# ---------------------------------------------------------------------------
# Host side: running a job
# ---------------------------------------------------------------------------

# Hydra (MPICH 5.0.2) ends the whole job when a rank is killed by a signal,
# even with -disable-auto-cleanup ("one of the processes terminated badly"),
# while a rank that exits with a status, however bad, leaves the others
# running. Under this shell a rank killed by a signal is an exit status
# (128 + the signal) to hydra: the shell stays, waits, and exits. Hydra also
# tells the survivors of a death with SIGUSR1, which would kill the shell:
# it traps it (its child starts with the default action, and the runner
# catches it for its stack dumps).
SIGNAL_TO_STATUS = ("sh", "-c", 'trap : USR1; "$@"; exit $?', "sh")


def run_mpi(programs, np: int, args=(), env=None,
            timeout: float = 120, select=None, keep_survivors=False) -> MPIRunResult:
    """Run the test functions of `programs` (one program, or a sequence of
    them sharing the launch) on `np` ranks and collect results.

    `args` become the programs' ``sys.argv[1:]``; `env` is added to the
    ranks' environment; `select` is None (all ``test_*`` functions), a
    substring of test names, or a list of exact test names (`list_tests`).
    `keep_survivors` (MPICH's hydra only): the launcher leaves the other
    ranks running when one dies, even by a signal (-disable-auto-cleanup,
    each rank under SIGNAL_TO_STATUS), so that a test sees what they do.
    Test failures and timeouts do not raise: inspect or ``check()`` the
    result.
    """
    programs = resolve_programs(programs)
    hosts = emulated_hosts()
    prefix, impl = find_launcher() if hosts is None else ([], hosts.impl)
    options, wrapper = [], ()
    if keep_survivors:
        if impl != "mpich":
            raise ValueError("keep_survivors needs MPICH's hydra, not %s" % impl)
        options, wrapper = ["-disable-auto-cleanup"], SIGNAL_TO_STATUS
    if select is None:
        functions = list_tests(programs)
        selection = []
    elif isinstance(select, str):
        functions = [n for n in list_tests(programs) if select in n]
        selection = ["-k", select]
    else:
        functions = list(select)
        selection = [arg for name in functions for arg in ("--only", name)]

    rank_env = {**os.environ, **(env or {})}
    rank_env.setdefault("PGASCOL_TIMEOUT", DEFAULT_PGASCOL_TIMEOUT)
    rank_env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), rank_env.get("PYTHONPATH")]))
    # Unbuffered, so output printed right before a hang or crash is not lost.
    rank_env["PYTHONUNBUFFERED"] = "1"
    # as the README asks of a job under Open MPI across hosts (its network
    # atomics lose bitwise accumulates): the programs import mpi4py first
    rank_env.setdefault("OMPI_MCA_osc_rdma_acc_use_amo", "0")
    rank_env.setdefault("PGASCOL_TEST_KILL_AFTER", str(int(timeout + KILL_AFTER_MARGIN + 1)))

    with tempfile.TemporaryDirectory(prefix="pgascol-mpi-") as tmp, cleaned_mpi_shm():
        result_dir = Path(tmp)
        if "PGASCOL_CALIBRATION" not in (env or {}):
            # a job of its own: it starts with no calibration file, as a new user's
            rank_env["PGASCOL_CALIBRATION"] = str(result_dir / "calibration.json")
        ranks_command = [*wrapper, sys.executable, "-m", "tests.mpi_harness",
                         *selection, *map(str, programs), str(result_dir), "--", *map(str, args)]
        if hosts is None:
            command = [*prefix, *options, "-n", str(np), *ranks_command]
        else:
            command = hosts.argv(np, options, ranks_command)
        for _ in range(LAUNCH_ATTEMPTS):
            started = time.time()
            try:
                proc, stdout, stderr, timed_out = _launch(command, rank_env, result_dir, np, timeout)
            finally:
                if hosts is not None:
                    hosts.after_job(started)
            ranks = _read_rank_reports(result_dir, np)
            if not _launcher_failed_to_start(proc, timed_out, stderr, ranks):
                break

    return MPIRunResult(programs=programs, np=np, command=command, functions=functions,
                        returncode=proc.returncode, timed_out=timed_out,
                        timeout=timeout, stdout=stdout, stderr=stderr, ranks=ranks)


# A launcher that fails before any rank starts, with a message of its own
# start-up ran no test: the job is launched once more. Seen: Open MPI
# 5.0.11's PRRTE, once in a CI run of about a hundred launches on a 2-core
# machine ("The PMIx server's listener thread failed to start", exit 213). Any other failure,
# and any job a rank of which reported, counts as it is.
LAUNCH_ATTEMPTS = 2
LAUNCHER_START_FAILURES = ("The PMIx server's listener thread failed to start",)


def _launcher_failed_to_start(proc, timed_out, stderr, ranks) -> bool:
    return (not timed_out and proc.returncode != 0 and all(r.pid is None for r in ranks)
            and any(m in stderr for m in LAUNCHER_START_FAILURES))


def _launch(command, rank_env, result_dir: Path, np: int, timeout: float):
    """Run the job's command: (proc, stdout, stderr, timed_out)."""
    # setsid(2) for the launcher too, so that its process group is nobody
    # else's; hydra's proxy and ranks call setsid(2) themselves, and
    # _kill_job finds them through the process tree and the reports.
    proc = subprocess.Popen(command, cwd=REPO_ROOT, env=rank_env, text=True,
                            errors="replace", stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    timed_out = False
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _dump_rank_stacks(proc, result_dir, np)
        _kill_job(proc, result_dir, np)
        stdout, stderr = proc.communicate()
    except BaseException:  # e.g. Ctrl-C: leave no ranks behind
        _kill_job(proc, result_dir, np)
        raise
    return proc, stdout, stderr, timed_out


# The MPI libraries' own shared-memory files: MPICH and Open MPI remove them
# in MPI_Finalize only, so a job whose ranks are killed (as the failure tests
# do on purpose) or time out leaves them in /dev/shm.
MPI_SHM_PATTERNS = ("mpich_shm_*", "sm_segment.*")


def mpi_shm_entries() -> set[Path]:
    return {p for pattern in MPI_SHM_PATTERNS for p in Path("/dev/shm").glob(pattern)}


@contextlib.contextmanager
def cleaned_mpi_shm():
    """Around any launch of an MPI job: afterwards, remove the MPI segments
    it left behind (see remove_orphaned_mpi_segments)."""
    before = mpi_shm_entries()
    try:
        yield
    finally:
        remove_orphaned_mpi_segments(before)


def remove_orphaned_mpi_segments(before: set[Path]) -> None:
    """Unlink the MPI segments created during a job that no live process
    maps any more: what a killed job left behind. Ranks of an aborted job may
    still be exiting when the launcher returns, so mapped ones are looked at
    again for up to a second."""
    pending = mpi_shm_entries() - before
    for _ in range(10):
        if not pending:
            return
        mapped = set()
        for maps in Path("/proc").glob("[0-9]*/maps"):
            try:
                mapped.update(line.split(None, 5)[-1].strip().removesuffix(" (deleted)")
                              for line in maps.read_text().splitlines() if "/dev/shm/" in line)
            except OSError:
                continue
        for path in [p for p in pending if str(p) not in mapped]:
            try:
                path.unlink()
            except OSError:
                pass
        pending = {p for p in pending if p.exists()}
        time.sleep(0.1)


def hosts_requested() -> int:
    """The number of emulated hosts the jobs run across (0: this machine)."""
    from tests.cluster.hosts import requested
    return requested()


def emulated_hosts():
    """The emulated cluster the jobs run across (PGASCOL_TEST_HOSTS), or None."""
    if not hosts_requested():
        return None
    from tests.cluster.hosts import cluster
    return cluster()


def _rank_pids(result_dir: Path, np: int) -> dict[int, int]:
    """{rank: its PID as this process sees it}: the report's, or on an
    emulated host the one its PID there (the report's) stands for."""
    reports = [r for r in _read_rank_reports(result_dir, np) if r.pid is not None]
    hosts = emulated_hosts()
    if hosts is None:
        return {r.rank: r.pid for r in reports}
    here = hosts.root_pids()
    return {r.rank: here[(r.host, r.pid)] for r in reports if (r.host, r.pid) in here}


def _dump_rank_stacks(proc: subprocess.Popen, result_dir: Path, np: int) -> None:
    """Ask every live rank of the job for a faulthandler stack dump."""
    job = {p.pid for p in _job_processes(proc, result_dir, np)}
    stack_files = []
    for rank, pid in _rank_pids(result_dir, np).items():
        # Only signal pids that are really part of this job.
        if pid in job:
            os.kill(pid, signal.SIGUSR1)
            stack_files.append(result_dir / f"rank-{rank}.stack")
    deadline = time.monotonic() + STACK_DUMP_WAIT
    while time.monotonic() < deadline and not all(f.stat().st_size for f in stack_files):
        time.sleep(0.05)


def _job_processes(proc: subprocess.Popen, result_dir: Path, np: int) -> list:
    """The launcher, its descendants, and the ranks the reports in
    result_dir name (a rank whose proxy died is no descendant any more; its
    report's pid is taken only if that process started with the launcher or
    later, so a reused pid is left alone)."""
    import psutil  # host side only; the ranks never need it

    try:
        launcher = psutil.Process(proc.pid)
        procs = [launcher, *launcher.children(recursive=True)]
        started = launcher.create_time()
    except psutil.NoSuchProcess:
        procs, started = [], None
    known = {p.pid for p in procs}
    for pid in _rank_pids(result_dir, np).values():
        if pid in known:
            continue
        try:
            rank = psutil.Process(pid)
            if started is not None and rank.create_time() >= started:
                procs.append(rank)
        except psutil.NoSuchProcess:
            pass
    return procs


def _kill_job(proc: subprocess.Popen, result_dir: Path, np: int) -> None:
    """Terminate the launcher, its process group and every process of the
    job (_job_processes: hydra's proxy and ranks leave the launcher's group
    by setsid(2)): SIGTERM first so launchers can clean up, SIGKILL for whatever
    survives the grace period."""
    procs = _job_processes(proc, result_dir, np)
    import psutil

    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        deadline = time.monotonic() + TERMINATE_GRACE
        while _still_running(procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _still_running(procs):
            break
    proc.wait()  # reap the launcher (keeps its real exit status)


def _still_running(procs) -> list:
    """The processes that are neither gone nor zombies (orphaned zombies
    may never be reaped in containers, so they count as gone)."""
    import psutil

    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.NoSuchProcess:
            pass
    return alive


# ---------------------------------------------------------------------------
# Host side: pytest integration
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class MPIJob:
    """Everything that identifies one launch; the key of MPIJobCache."""
    programs: tuple[Path, ...]
    np: int
    env: tuple[tuple[str, str], ...]
    timeout: float
    select: tuple[str, ...] | None


class MPIJobCache:
    """Runs each distinct MPIJob once per pytest run (held by the
    ``mpi_jobs`` fixture in tests/conftest.py)."""

    def __init__(self):
        self._results: dict[MPIJob, MPIRunResult] = {}

    def result(self, job: MPIJob) -> MPIRunResult:
        if job not in self._results:
            self._results[job] = run_mpi(job.programs, job.np, env=dict(job.env),
                                         timeout=job.timeout, select=job.select)
        return self._results[job]


def selected_nprocs(nprocs) -> list[int]:
    """`nprocs` restricted by PGASCOL_TEST_NP (e.g. "2,4"), if set."""
    restrict = os.environ.get("PGASCOL_TEST_NP", "").strip()
    if not restrict:
        return list(nprocs)
    wanted = {int(n) for n in restrict.split(",") if n.strip()}
    return [n for n in nprocs if n in wanted]


@dataclass
class Run:
    """One row of a table of launches: `programs` (one, or several sharing
    each launch) on every rank count of `nprocs`, with `env` added to the
    ranks' environment; `setting` names that environment in the test ids
    (empty for none). `timeout` bounds each launch (seconds); `exclude`
    and `marks` are keyed by test name (see `list_tests`). `one_node`: the
    functions that run inside one node only (True: all of them), skipped,
    with the reason, where a launch spans emulated hosts."""
    programs: str | tuple[str, ...]
    nprocs: tuple[int, ...] = DEFAULT_NPROCS
    setting: str = ""
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 120
    exclude: tuple[str, ...] = ()
    marks: dict = field(default_factory=dict)
    one_node: tuple[str, ...] | bool = ()

    def params(self) -> list:
        """pytest params (MPIJob, test name or None for the clean exit)."""
        import pytest

        paths = resolve_programs(self.programs)
        names = list_tests(paths)
        one_node = set(names) if self.one_node is True else set(self.one_node or ())
        unknown = (set(self.marks) | set(self.exclude) | one_node) - set(names)
        if unknown:
            raise ValueError(f"{self.programs} have no test function(s) {sorted(unknown)}")
        run_names = [n for n in names if n not in self.exclude]
        suffix = f"-{self.setting}" if self.setting else ""
        params = []
        for np in selected_nprocs(self.nprocs):
            hosts = min(hosts_requested(), np)
            skipped = one_node if hosts > 1 else set()
            selected = [n for n in run_names if n not in skipped]
            select = tuple(selected) if len(selected) < len(names) else None
            job = MPIJob(paths, np, tuple(sorted(self.env.items())), self.timeout, select)
            for name in run_names:
                test_id = name if len(paths) > 1 else f"{paths[0].stem}::{name}"
                marks = self._marks(name, np)
                if name in skipped:
                    marks = pytest.mark.skip(reason=f"runs inside one node; the {np} ranks are on {hosts} "
                                                    f"emulated hosts (PGASCOL_TEST_HOSTS)")
                params.append(pytest.param(job, name, id=f"{test_id}-np{np}{suffix}", marks=marks))
            if selected:
                params.append(pytest.param(job, None, id=f"clean_exit-np{np}{suffix}"))
        return params

    def _marks(self, name, np):
        import pytest

        mark = self.marks.get(name, ())
        if callable(mark) and not isinstance(mark, pytest.MarkDecorator):
            mark = mark(np)
        return mark


def program_tests(rows):
    """A pytest test function parametrised with one item per test function,
    rank count and setting of every Run in `rows` (plus one clean-exit item
    per launch). Assign it to a module-level ``test_*`` name; see the module
    docstring."""
    import pytest

    params = [param for row in rows for param in row.params()]
    ids = [param.id for param in params]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"rows that give the same test ids (give them settings): {repeated}")

    @pytest.mark.parametrize(("mpi_job", "mpi_test"), params)
    def run_program_test(mpi_jobs, mpi_job, mpi_test):
        result = mpi_jobs.result(mpi_job)
        # The report is the whole story; the harness's frames would be noise.
        if mpi_test is None:
            if not result.exited_cleanly():
                pytest.fail(result.exit_report(), pytrace=False)
        elif not result.passed(mpi_test):
            pytest.fail(result.report(mpi_test), pytrace=False)

    return run_program_test


# ---------------------------------------------------------------------------
# Rank side: the mini runner executed by every rank of the job
# ---------------------------------------------------------------------------

class _RankLog:
    """Keeps RESULT_DIR/rank-<r>.json current.  Each write replaces the file
    atomically, so whatever happens to the rank afterwards, the host reads a
    complete, up-to-date file (written data is the kernel's once write()
    returns: a killed rank loses none of it, and no fsync is needed)."""

    def __init__(self, result_dir: Path, rank: int):
        self.path = result_dir / f"rank-{rank}.json"
        self.state = {"rank": rank, "pid": os.getpid(), "host": socket.gethostname(), "running": None,
                      "finished": False, "setup_error": None, "results": {}}
        self.write()

    def write(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(self.state, f)
        os.replace(tmp, self.path)

    def update(self, **changes) -> None:
        self.state.update(changes)
        self.write()

    def start(self, name: str) -> None:
        self.update(running=name)

    def finish(self, name: str, error: str | None, seconds: float) -> None:
        self.state["results"][name] = {"ok": error is None, "error": error,
                                       "seconds": seconds}
        self.update(running=None)


def _load_program(path: Path, argv: list[str]):
    sys.argv = [str(path), *argv]
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    # Registered so that objects of classes defined in the program can be
    # pickled between ranks (mpi4py's lowercase communication methods).
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _format_error(exc: BaseException) -> str:
    # Skip the runner's own frame; the traceback starts in the test function.
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__.tb_next))


def _rank_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.mpi_harness",
                                     usage="%(prog)s [-k SUBSTRING | --only NAME ...] "
                                           "PROGRAM [PROGRAM ...] RESULT_DIR [-- PROGRAM_ARGS]",
                                     description="Run the test functions of MPI test "
                                                 "programs on this rank.")
    selection = parser.add_mutually_exclusive_group()
    selection.add_argument("-k", dest="substring",
                           help="only run test functions whose name contains this")
    selection.add_argument("--only", action="append", metavar="NAME",
                           help="run exactly these test functions (repeatable)")
    parser.add_argument("programs", nargs="+", type=Path)
    parser.add_argument("result_dir", type=Path)
    # Split off by hand: argparse would let PROGRAM absorb what follows "--".
    cut = argv.index("--") if "--" in argv else len(argv)
    opts, program_args = parser.parse_args(argv[:cut]), argv[cut + 1:]

    # The last resort against orphans: the kernel ends this rank if the host
    # could not (SIGALRM's default action; nothing here handles it).
    kill_after = int(os.environ.get("PGASCOL_TEST_KILL_AFTER", "0") or 0)
    if kill_after > 0:
        signal.alarm(kill_after)

    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    # The host sends SIGUSR1 when the job times out; the dump happens in the
    # C signal handler, so it works even while blocked inside an MPI call.
    # Installed before the log publishes our pid, which the host signals.
    stack_file = open(opts.result_dir / f"rank-{comm.rank}.stack", "w")
    faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    log = _RankLog(opts.result_dir, comm.rank)

    try:
        programs = resolve_programs(opts.programs)
        names = opts.only or [n for n in list_tests(programs)
                              if opts.substring is None or opts.substring in n]
        modules = {path: _load_program(path, program_args) for path in programs}
        functions = []
        for name in names:
            path, function = _split_name(name, programs)
            functions.append(getattr(modules[path], function))
        setup_error = None
    except BaseException as exc:
        setup_error = "".join(traceback.format_exception(exc))
    # Either every rank runs the tests or none does: a rank that cannot load
    # the programs would otherwise leave the others waiting in collectives.
    if not comm.allreduce(setup_error is None, op=MPI.LAND):
        log.update(setup_error=setup_error or "the programs failed to load on another rank")
        return

    for name, function in zip(names, functions):
        log.start(name)
        kwargs = {"comm": comm} if "comm" in inspect.signature(function).parameters else {}
        start = time.perf_counter()
        try:
            function(**kwargs)
            error = None
        except BaseException as exc:  # SystemExit too: the rank must go on
            error = _format_error(exc)
        log.finish(name, error, time.perf_counter() - start)
        # Keep the ranks in step, so one rank's failure does not leak into
        # the next function (a rank stuck in a collective needs the timeout).
        comm.Barrier()
    log.update(finished=True)


if __name__ == "__main__":
    _rank_main(sys.argv[1:])

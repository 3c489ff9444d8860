"""The results of an MPI job of tests/mpi_harness.py, host side: what each
rank's report file (RESULT_DIR/rank-<r>.json, and the stack it dumped at a
timeout) says, per test function and rank (passed, failed, running, not
reached, no report), and the failure reports pytest shows: who failed,
the tracebacks, where stuck ranks were, the launcher's command and output.
tests/mpi_harness.py imports these names; use them from there."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path

# How much launcher output a failure report shows.
OUTPUT_TAIL_LINES = 40


class MPITestFailure(AssertionError):
    """A test function (or the job as a whole) did not pass on every rank."""


@dataclass
class FunctionOutcome:
    ok: bool
    error: str | None
    seconds: float


@dataclass
class RankReport:
    rank: int
    pid: int | None = None          # None: the rank never started the runner
    host: str | None = None         # its hostname (pid is its PID there)
    running: str | None = None      # function the rank was inside at the end
    finished: bool = False          # ran all functions and the final barrier
    setup_error: str | None = None  # the program could not be loaded
    results: dict[str, FunctionOutcome] = field(default_factory=dict)
    stack: str | None = None        # Python stack dumped at timeout

    def state(self, name: str) -> str:
        """One of passed, failed, running, not reached, no report."""
        if name in self.results:
            return "passed" if self.results[name].ok else "failed"
        if self.running == name:
            return "running"
        return "not reached" if self.pid is not None else "no report"

    def whereabouts(self) -> str:
        """Where the rank was when the job ended."""
        if self.pid is None:
            return "never reported (the rank did not start the test runner)"
        if self.running:
            return f"inside {self.running}"
        if self.finished:
            return "done with all test functions"
        if self.setup_error:
            return "at loading the program"
        if self.results:
            return f"in the barrier after {list(self.results)[-1]}"
        return "before the first test function"


@dataclass
class MPIRunResult:
    programs: tuple[Path, ...]
    np: int
    command: list[str]
    functions: list[str]            # the functions selected for this run
    returncode: int | None
    timed_out: bool
    timeout: float
    stdout: str
    stderr: str
    ranks: list[RankReport]

    def passed(self, name: str) -> bool:
        return not self.failed_ranks(name)

    def failed_ranks(self, name: str) -> list[int]:
        """Ranks on which `name` did not pass (failed, hung, crashed, not run)."""
        return [r.rank for r in self.ranks if r.state(name) != "passed"]

    def exited_cleanly(self) -> bool:
        return (not self.timed_out and self.returncode == 0
                and all(r.finished for r in self.ranks))

    def check(self, name: str | None = None) -> None:
        """Raise MPITestFailure unless `name` passed on every rank; without
        a name, unless every selected function passed and the job exited
        cleanly."""
        __tracebackhide__ = True
        if name is not None:
            if not self.passed(name):
                raise MPITestFailure(self.report(name))
            return
        failures = [self.report(n) for n in self.functions if not self.passed(n)]
        if not self.exited_cleanly():
            failures.append(self.exit_report())
        if failures:
            raise MPITestFailure("\n\n".join(failures))

    def check_exit(self) -> None:
        """Raise MPITestFailure unless the job exited cleanly."""
        __tracebackhide__ = True
        if not self.exited_cleanly():
            raise MPITestFailure(self.exit_report())

    # -- report text --------------------------------------------------------

    def title(self, name: str | None = None) -> str:
        """The programs of the job, or the test `name` as its report shows it."""
        if name is None:
            return " ".join(p.name for p in self.programs)
        return name if len(self.programs) > 1 else f"{self.programs[0].name}::{name}"

    def _job_status(self) -> str:
        if self.timed_out:
            return f"job TIMED OUT after {self.timeout:g} s and was killed"
        return f"job exit status {self.returncode}"

    def report(self, name: str) -> str:
        """Per-rank account of one function: who failed, tracebacks,
        where stuck ranks were, and the launcher's output."""
        states = {r.rank: r.state(name) for r in self.ranks}
        bad = [rank for rank, state in states.items() if state != "passed"]
        lines = [f"{self.title(name)} with np={self.np}: "
                 f"did not pass on rank(s) {_ranks(bad)}; {self._job_status()}"]
        for rank, state in states.items():
            lines.append(f"  rank {rank}: {self._describe(self.ranks[rank], name, state)}")
        # Identical tracebacks (typical when every rank fails) are shown once.
        errors: dict[tuple[str, str], list[int]] = {}
        for report in self.ranks:
            if report.state(name) == "failed":
                key = ("traceback", report.results[name].error)
            elif report.setup_error:
                key = ("program failed to load", report.setup_error)
            else:
                continue
            errors.setdefault(key, []).append(report.rank)
        for (heading, error), ranks in errors.items():
            lines += ["", f"--- rank {_ranks(ranks)}: {heading} ---", error.rstrip()]
        if any(state == "running" for state in states.values()):
            lines += self._stacks()
        lines += self._launcher_output()
        return "\n".join(lines)

    def exit_report(self) -> str:
        """Why the job as a whole did not finish cleanly."""
        lines = [f"{self.title()} with np={self.np}: {self._job_status()}"]
        lines += [f"  rank {r.rank}: {r.whereabouts()}" for r in self.ranks]
        return "\n".join(lines + self._stacks() + self._launcher_output())

    def _describe(self, report: RankReport, name: str, state: str) -> str:
        if state == "passed":
            return f"passed ({report.results[name].seconds:.2f} s)"
        if state == "failed":
            return "FAILED (traceback below)"
        if state == "running":
            how = "was still running it when killed" if self.timed_out else "died inside it"
            return f"STUCK/CRASHED: {how}"
        if state == "not reached":
            return f"not reached; the rank stopped {report.whereabouts()}"
        return f"no report: {report.whereabouts()}"

    def _stacks(self) -> list[str]:
        lines = []
        for r in self.ranks:
            if r.stack:
                lines += ["", f"--- rank {r.rank}: Python stack at timeout ---",
                          r.stack.rstrip()]
        return lines

    def _launcher_output(self) -> list[str]:
        lines = ["", f"--- launcher command: {shlex.join(self.command)}"]
        for label, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            tail = text.rstrip().splitlines()[-OUTPUT_TAIL_LINES:]
            if tail:
                lines += [f"--- launcher {label} (last {len(tail)} lines) ---", *tail]
        return lines


def _ranks(ranks: list[int]) -> str:
    return ", ".join(map(str, ranks)) or "none"


def _read_rank_reports(result_dir: Path, np: int) -> list[RankReport]:
    reports = []
    for rank in range(np):
        report = RankReport(rank)
        json_file = result_dir / f"rank-{rank}.json"
        if json_file.exists():
            data = json.loads(json_file.read_text())
            report.pid = data["pid"]
            report.host = data.get("host")
            report.running = data["running"]
            report.finished = data["finished"]
            report.setup_error = data["setup_error"]
            report.results = {name: FunctionOutcome(**outcome)
                              for name, outcome in data["results"].items()}
        stack_file = result_dir / f"rank-{rank}.stack"
        if stack_file.exists():
            report.stack = stack_file.read_text(errors="replace") or None
        reports.append(report)
    return reports

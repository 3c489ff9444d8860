"""The C core's own tests (tests/c/*.c): each is compiled with the core's
sources, run, and must print 'N passed, 0 failed'. They exercise the core on
teams of forked processes, without Python or MPI in the way."""
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
PROGRAMS = sorted((ROOT / "tests" / "c").glob("test_*.c"))


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_c_program(program, tmp_path):
    exe = tmp_path / program.stem
    sources = [str(p) for p in sorted(CSRC.rglob("*.c"))]
    # -O3 as setup.py builds the core: the kernels vectorise only there
    build = subprocess.run(["gcc", "-O3", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
                            "-I", str(CSRC), *sources, str(program), "-o", str(exe), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    summary = re.findall(r"^(\d+) passed, (\d+) failed", run.stdout, re.M)
    assert run.returncode == 0 and summary and summary[-1][1] == "0", run.stdout[-3000:] + run.stderr[-3000:]
    assert int(summary[-1][0]) > 0

"""The C core's own tests (tests/c/*.c): each is compiled with the core's
sources, run, and must print 'N passed, 0 failed'. They exercise the core on
teams of forked processes, without Python or MPI in the way."""
import graphlib
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
PROGRAMS = sorted((ROOT / "tests" / "c").glob("test_*.c"))


# -O3 as setup.py builds the core: the kernels vectorise only there
CFLAGS = ["-O3", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-I", str(CSRC)]


@pytest.fixture(scope="module")
def core_objects(tmp_path_factory):
    """The core's sources compiled once (each program links them): the
    compile of every source at -O3 costs 15-20 s a program."""
    out = tmp_path_factory.mktemp("csrc")
    objs = []
    for src in sorted(CSRC.rglob("*.c")):
        obj = out / (str(src.relative_to(CSRC)).replace("/", "_") + ".o")
        build = subprocess.run(["gcc", *CFLAGS, "-c", str(src), "-o", str(obj)], capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        objs.append(str(obj))
    return objs


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.stem)
def test_c_program(program, tmp_path, core_objects):
    exe = tmp_path / program.stem
    build = subprocess.run(["gcc", *CFLAGS, *core_objects, str(program), "-o", str(exe), "-lm"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    summary = re.findall(r"^(\d+) passed, (\d+) failed", run.stdout, re.M)
    assert run.returncode == 0 and summary and summary[-1][1] == "0", run.stdout[-3000:] + run.stderr[-3000:]
    assert int(summary[-1][0]) > 0


# csrc/'s layers and the layers below each: a file may include and call
# files of its own layer or of one below it, never another, and no two
# files may depend on each other, directly or through others. The
# collectives and the PGAS layer's one-sided updates (rma) are side by side.
LAYERS = {"base": (), "team": ("base",), "coll": ("base", "team"), "rma": ("base",),
          "upc": ("base", "team", "coll")}


def _layer(rel):
    return rel.split("/")[0]


def _check_dag(graph, what):
    for src, dsts in graph.items():
        for dst in dsts:
            assert _layer(dst) == _layer(src) or _layer(dst) in LAYERS[_layer(src)], \
                f"{what}: {src} -> {dst}, a file of a layer above or beside it"
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as e:
        pytest.fail(f"csrc files in a circle of {what}: {' -> '.join(e.args[1])}")


def test_csrc_layers_have_no_cycle(tmp_path):
    files = sorted(CSRC.rglob("*.[ch]"))
    rels = {str(f.relative_to(CSRC)) for f in files}
    assert all(r.split("/")[0] in LAYERS and r.count("/") == 1 for r in rels), sorted(rels)
    # The includes (of csrc headers, named relative to csrc/).
    includes = {}
    for f in files:
        rel = str(f.relative_to(CSRC))
        includes[rel] = re.findall(r'^#include "([^"]+)"', f.read_text(), re.M)
        unknown = set(includes[rel]) - rels
        assert not unknown, f"{rel} includes {sorted(unknown)}, not csrc/<layer>/<file> names"
    _check_dag(includes, "includes")
    # The calls: which file defines each function a file's object calls
    # (inline functions of the headers included, inlined or not, count as
    # calls of the file that uses them).
    if shutil.which("gcc") is None or shutil.which("nm") is None:
        pytest.skip("the call graph needs gcc and nm")
    defined, called = {}, defaultdict(set)
    for f in (f for f in files if f.suffix == ".c"):
        rel = str(f.relative_to(CSRC))
        obj = tmp_path / (rel.replace("/", "_") + ".o")
        build = subprocess.run(["gcc", "-O0", "-std=gnu11", "-I", str(CSRC), "-c", str(f), "-o", str(obj)],
                               capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        for line in subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout.splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[1] in "TDRB":
                defined[fields[2]] = rel
            elif len(fields) == 2 and fields[0] == "U":
                called[rel].add(fields[1])
    calls = {rel: {defined[s] for s in syms if s in defined and defined[s] != rel} for rel, syms in called.items()}
    assert calls["coll/coll_gather.c"], "the call graph came out empty"
    _check_dag(calls, "calls")

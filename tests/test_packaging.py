"""The release's packaging, as far as it can be checked in a second: the
sdist's file list (MANIFEST.in) holds everything the test suite reads, the
version is written in one place, and pyproject.toml claims only the Python
versions and dependency floors that .ci/release builds and tests. Building
and installing the wheels themselves takes minutes: .ci/release does it."""
import functools
import os
import re
from pathlib import Path

import pytest
from packaging.version import Version  # a dependency of pytest

import pgascol
from pgascol import _version

try:
    import tomllib
except ImportError:  # Python < 3.11: pytest itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
RELEASE = ROOT / ".ci" / "release"

# Build products of a checkout, which no sdist may carry (Cython writes
# pgascol/**/*.c at build time).
BUILT = re.compile(r"(\.so|\.o|\.py[cod])$|(^|/)__pycache__/|^pgascol/.*\.c$")


@functools.lru_cache(maxsize=None)
def sdist_files():
    """The files MANIFEST.in puts into the sdist, by setuptools' own reading
    (setuptools adds setup.py, pyproject.toml and the packages' modules itself)."""
    # setuptools' own reading of MANIFEST.in (Python 3.12's venvs come without it)
    FileList = pytest.importorskip("setuptools.command.egg_info").FileList
    manifest = ROOT / "MANIFEST.in"
    if not manifest.exists():
        pytest.skip("no MANIFEST.in beside the tests (an installed copy of them)")
    files = FileList()
    cwd = os.getcwd()
    os.chdir(ROOT)  # FileList matches paths relative to the working directory
    try:
        for line in manifest.read_text().splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                files.process_template_line(line)
    finally:
        os.chdir(cwd)
    return frozenset(Path(f).as_posix() for f in files.files)


def tree(folder):
    """Every file under ROOT/folder but build products, relative to ROOT."""
    found = set()
    for path in (ROOT / folder).rglob("*"):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and not BUILT.search(rel) and "/.pytest_cache/" not in "/" + rel:
            found.add(rel)
    return found


@pytest.mark.parametrize("folder", ["tests", "tests/mpi4py_suite", "tests/mpi_programs", "tests/c",
                                    "bench", "csrc", "docs", "examples"])
def test_sdist_holds_every_file_the_tests_read(folder):
    assert (ROOT / folder).is_dir(), folder
    missing = tree(folder) - sdist_files()
    assert not missing, "MANIFEST.in leaves out of the sdist: %s" % sorted(missing)


def test_sdist_holds_the_docs_readme_names():
    named = set(re.findall(r"\b(docs/[\w./-]+\.md)\b", (ROOT / "README.md").read_text()))
    assert named, "README.md names no docs/*.md"
    assert named <= sdist_files(), sorted(named - sdist_files())
    assert {"README.md", "CHANGELOG.md", "LICENSE", ".ci/release"} <= sdist_files()


def test_sdist_holds_no_build_products():
    built = sorted(f for f in sdist_files() if BUILT.search(f))
    assert not built, built


def test_version_is_written_once():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pgascol._version.__version__"}
    assert pgascol.__version__ == _version.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?", pgascol.__version__), pgascol.__version__


def test_installed_metadata_reports_the_version():
    from importlib import metadata
    try:
        installed = metadata.version("pgascol")
    except metadata.PackageNotFoundError:
        pytest.skip("pgascol is not installed (imported from a source tree)")
    assert installed == pgascol.__version__, (
        "the installed metadata says %s, pgascol/_version.py %s: reinstall (pip install -e .)"
        % (installed, pgascol.__version__))


def test_changelog_opens_with_this_version():
    changelog = ROOT / "CHANGELOG.md"
    if not changelog.exists():
        pytest.skip("no CHANGELOG.md beside the tests")
    first = re.search(r"^## (\S+)", changelog.read_text(), re.M)
    assert first and first.group(1) == pgascol.__version__, first and first.group(0)


def release_setting(name):
    """A NAME="..." line of .ci/release, split into words."""
    if not RELEASE.exists():
        pytest.skip("no .ci/release beside the tests")
    found = re.search(r'^%s="([^"]*)"' % name, RELEASE.read_text(), re.M)
    assert found, "%s sets no %s" % (RELEASE, name)
    return found.group(1).split()


def test_requires_python_is_what_the_release_builds():
    floor = re.fullmatch(r">=\s*3\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert floor, PYPROJECT["project"]["requires-python"]
    built = release_setting("PYTHONS")
    minors = sorted(int(v.split(".")[1]) for v in built)
    assert minors[0] == int(floor.group(1)), (built, PYPROJECT["project"]["requires-python"])
    assert minors == list(range(minors[0], minors[-1] + 1)), built
    classified = sorted(int(c.rsplit(".", 1)[1]) for c in PYPROJECT["project"]["classifiers"]
                        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c))
    assert classified == minors, (classified, built)


def test_dependency_floors_are_the_ones_tested():
    floors = {}
    for dep in PYPROJECT["project"]["dependencies"]:
        name, bound = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*>=\s*([\d.]+)", dep).groups()
        floors[name.lower()] = Version(bound)
    tested = {name: Version(v) for name, v in (pin.lower().split("==") for pin in release_setting("LOWEST"))}
    assert tested == floors, "pyproject's floors %s, .ci/release tests %s" % (floors, tested)


def test_the_release_quick_check_names_test_files_that_exist():
    files = release_setting("QUICK")
    assert files and all(f.startswith("tests/test_") for f in files), files
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, "%s's QUICK names files that are gone: %s" % (RELEASE, missing)

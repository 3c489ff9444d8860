"""The package's public names: `from pgascol import *` gives every error
class a program may catch, nothing named in __all__ is missing, and the
old names of renamed modules still import (deprecated) for one release."""
import importlib
import inspect
import re
import sys

import pytest

import pgascol
from pgascol import errors


def test_every_exported_error_class_is_in_all():
    exported = {name for name, obj in vars(pgascol).items()
                if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ == errors.__name__}
    assert exported and exported <= set(pgascol.__all__), sorted(exported - set(pgascol.__all__))


def test_all_names_exist():
    missing = [name for name in pgascol.__all__ if not hasattr(pgascol, name)]
    assert not missing, missing
    assert len(set(pgascol.__all__)) == len(pgascol.__all__)


# The modules renamed for one meaning per name keep their old names for one
# release: importing one warns, naming the new module, and gives its objects.
DEPRECATED_MODULES = [
    ("pgascol.upc.ops", "pgascol.upc.operators",
     ("ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR", "XOR", "MIN", "MAX", "FUNC", "NONCOMM_FUNC", "OPERATORS",
      "TYPES", "Operator")),
    ("pgascol.sparse.ops", "pgascol.sparse.products", ("mv", "mm", "TRANS", "SCATTERED")),
    ("pgascol.sparse.handle", "pgascol.sparse.matrix", ("SparseMatrix", "from_scipy", "from_local_rows")),
]


@pytest.mark.parametrize("old, new, names", DEPRECATED_MODULES, ids=[old for old, _, _ in DEPRECATED_MODULES])
def test_a_deprecated_module_warns_and_gives_the_new_modules_objects(old, new, names):
    current = importlib.import_module(new)
    sys.modules.pop(old, None)                  # a fresh import, so that it warns again
    with pytest.warns(DeprecationWarning, match=re.escape(new)):
        alias = importlib.import_module(old)
    for name in names:
        assert getattr(alias, name) is getattr(current, name), (old, name)


def test_the_packages_export_the_renamed_modules_objects():
    from pgascol import sparse, upc
    from pgascol.sparse import matrix, products
    from pgascol.upc import operators
    assert upc.ADD is operators.ADD and upc.OPERATORS is operators.OPERATORS and upc.TYPES is operators.TYPES
    assert sparse.SparseMatrix is matrix.SparseMatrix and sparse.from_scipy is matrix.from_scipy
    assert sparse.mv is products.mv and sparse.mm is products.mm


def test_an_unbuilt_checkout_in_the_working_directory_says_what_happened(tmp_path):
    """Ranks started in a directory that holds a pgascol checkout import its
    source folder: without built extensions, `import pgascol` says so and
    what to do, instead of failing later on a missing module."""
    import shutil
    import subprocess
    from importlib.machinery import EXTENSION_SUFFIXES
    from pathlib import Path
    src = Path(pgascol.__file__).parent
    shutil.copytree(src, tmp_path / "pgascol", ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    (tmp_path / "setup.py").write_text("")
    r = subprocess.run([sys.executable, "-c", "import pgascol"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert "imported from the source folder %s" % (tmp_path / "pgascol") in r.stderr
    assert "Start the job from another directory" in r.stderr
    # built (an extension beside it): imported as it is
    (tmp_path / "pgascol" / "engine" / ("_core" + EXTENSION_SUFFIXES[0])).write_text("")
    r = subprocess.run([sys.executable, "-c", "import pgascol; print(pgascol.__file__)"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and str(tmp_path) in r.stdout, r.stderr

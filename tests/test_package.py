"""The package's public names: `from pgascol import *` gives every error
class a program may catch, and nothing named in __all__ is missing."""
import inspect

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

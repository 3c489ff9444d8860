"""pgascol's exception classes (pgascol/errors.py): once mpi4py's MPI is
loaded, every one, however raised, is also an MPI.Exception, as mpi4py's
own errors are, and keeps its message, fields and class across pickling."""
import pickle

import pytest
from mpi4py import MPI

from pgascol import errors

CLASSES = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.PgascolError)]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_every_error_is_an_mpi_exception_with_its_fields(cls):
    e = cls("what went wrong", 3, 5)
    assert isinstance(e, cls) and isinstance(e, MPI.Exception)
    assert type(e).__name__ == cls.__name__
    assert (str(e), e.peer, e.errno) == ("what went wrong", 3, 5)
    assert e.Get_error_class() == getattr(MPI, cls.ERROR_CLASS)
    with pytest.raises(MPI.Exception) as caught:
        raise cls("raised")
    assert isinstance(caught.value, cls)
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is type(e) and (str(back), back.peer, back.errno) == ("what went wrong", 3, 5)
    # the class itself travels too, as a program sends an error's kind to other ranks
    assert pickle.loads(pickle.dumps((type(e), str(e)))) == (type(e), "what went wrong")


def test_a_timeout_is_still_a_timeout_error():
    # its built-in layout is OSError's: made without OSError parsing the arguments
    e = errors.PgascolTimeoutError("Bcast did not complete", errno=110)
    assert isinstance(e, TimeoutError) and str(e) == "Bcast did not complete" and e.errno == 110


def test_an_explicit_error_class_wins():
    e = errors.ArgumentError("root 9 out of range", error_class=MPI.ERR_ROOT)
    assert e.Get_error_class() == MPI.ERR_ROOT and int(e) == MPI.ERR_ROOT

# C error codes (csrc/base/common.h) as Python exceptions (pgascol/errors.py).

cdef int _raise(int code, pgc_error *err, int cause=PGC_OK) except -1:
    raise _error(code, err, cause)


cdef object _error(int code, pgc_error *err, int cause=PGC_OK):
    """The Python exception matching a C error code. cause: for
    PGC_EABORTED, the code the aborting member gave (the team header's
    abort_code): a revoked team raises RevokedError, one a death aborted
    carries MPI's ERR_PROC_FAILED. Once MPI is loaded, an MPI.Exception
    too (PgascolError.__new__ makes its twin, pgascol/errors.py)."""
    msg = err.msg.decode(errors="replace") if err.msg[0] else "pgascol error %d" % code
    cls = {PGC_EINVAL: ArgumentError, PGC_ETIMEDOUT: PgascolTimeoutError,
           PGC_EPEERDEAD: PeerDeadError, PGC_EABORTED: TeamAbortedError,
           PGC_ECLOSED: TeamClosedError, PGC_EMISMATCH: CollectiveMismatchError,
           PGC_EREFUSED: RootRefusedError, PGC_EPEERREFUSED: PeerRefusedError,
           PGC_ETYPE: DatatypeMismatchError}.get(code, PgascolError)
    if code == PGC_EABORTED and cause == PGC_EREVOKED:
        cls = RevokedError
    exc = cls(msg, err.peer, err.sys_errno)
    if code == PGC_EABORTED and cause == PGC_EPEERDEAD:
        exc._error_class = PeerDeadError("").Get_error_class()
    return exc

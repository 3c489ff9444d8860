# Process-wide entries that are no team's: a team configuration's check,
# the single-copy probe, the sweep of stale segments, and the hook that
# long engine waits call.

#: PGASCOL_TIMEOUT's upper bound (31 years): its deadline must fit 64-bit ns.
MAX_TIMEOUT_S = 1e9


def check_config(dict config):
    """Refuse a team configuration the core cannot work with (ArgumentError)."""
    chunk, staging = config["chunk_bytes"], config["staging_bytes"]
    if chunk < 64 or chunk % 64 or staging < 2 * chunk:
        raise ArgumentError("chunk_bytes (PGASCOL_CHUNK_BYTES) must be a positive multiple of 64 "
                            "and staging_bytes (PGASCOL_STAGING_BYTES) at least two chunks "
                            "(got %d and %d)" % (chunk, staging))
    xchg = config["xchg_chunk_bytes"]
    if xchg < 64 or xchg % 64:
        raise ArgumentError("xchg_chunk_bytes (PGASCOL_XCHG_CHUNK_BYTES) must be a positive multiple "
                            "of 64 (got %d)" % xchg)
    # `not 0 < x <= max` also refuses nan; inf would overflow the deadline
    if not 0 < config["timeout_s"] <= MAX_TIMEOUT_S:
        raise ArgumentError("the timeout (PGASCOL_TIMEOUT) must be a positive number of seconds, "
                            "at most %g (got %r)" % (MAX_TIMEOUT_S, config["timeout_s"]))
    unknown = [name for name in config.get("adapt", ()) if name not in COLLECTIVES]
    if unknown:
        raise ArgumentError("adapt: unknown collectives %s" % ", ".join(map(str, unknown)))
    if config.get("stream", 1) not in (0, 1, 2):
        raise ArgumentError("stream (PGASCOL_STREAM) must be 0, 1 or 2 (got %r)" % config["stream"])
    if config.get("segment", "memfd") not in ("memfd", "named"):
        raise ArgumentError("segment (PGASCOL_SEGMENT) must be 'memfd' or 'named' (got %r)" % config["segment"])
    recv_min = config.get("recv_stream_min", 0)
    if not isinstance(recv_min, int) or recv_min < 0:
        raise ArgumentError("recv_stream_min (PGASCOL_RECV_STREAM_MIN) must be a number of bytes >= 0 "
                            "(got %r)" % (recv_min,))
    if config.get("simd", 1) not in (0, 1):
        raise ArgumentError("simd (PGASCOL_SIMD) must be 0 or 1 (got %r)" % config["simd"])
    radix = config.get("bcast_radix", 4)
    if not 2 <= radix <= 16:
        raise ArgumentError("the Bcast tree radix (PGASCOL_BCAST_RADIX) must be 2 to 16 (got %r)" % radix)


def cma_probe_fork():
    """Probe single copy on this machine with a forked child.
    Returns (True, "") or (False, reason)."""
    cdef pgc_error err
    memset(&err, 0, sizeof(err))
    if pgc_cma_probe_fork(&err) == PGC_OK:
        return True, ""
    return False, err.msg.decode(errors="replace")


def sweep_stale_segments():
    """Remove /dev/shm segments of ours whose members are all dead; returns the count."""
    return pgc_team_sweep_stale()


cdef object _wait_progress = None


cdef void _call_wait_progress() noexcept nogil:
    # from a sleeping wait (csrc/team/sync.c), with or without the GIL; an
    # exception is reported as unraisable, the wait goes on
    with gil:
        if _wait_progress is not None:  # unset since this wait began
            _wait_progress()


def set_wait_progress(fn):
    """Call fn() (no arguments, with the GIL) between the sleeps of every long
    engine wait, at most every PGC_PROGRESS_EVERY_NS (2 ms); None: no hook.
    The comm layer registers one that makes MPI progress."""
    global _wait_progress
    pgc_set_wait_progress(NULL)
    _wait_progress = fn
    if fn is not None:
        pgc_set_wait_progress(_call_wait_progress)


def count_pace_setup(int slot, int nslots, uint64_t period_ns, uint64_t start_ns):
    """Call k of count_pace returns at start_ns (time.monotonic_ns) + k
    periods + slot/nslots of one (csrc/base/count.h)."""
    pgc_count_pace_setup(slot, nslots, period_ns, start_ns)


def count_pace():
    """Sleep until this rank's time for its next call (pgascol-bench instructions:
    the ranks enter each call of a cheap case in rank order). A Cython
    function, not ctypes: its call is counted, and a ctypes call costs some
    2,800 instructions where this one costs tens. The GIL is kept: the
    worker has one thread, and a release would count its own."""
    pgc_count_pace()

# The bounded wait of the inter-node MPI legs (_mpi_wait): PGASCOL_TIMEOUT,
# the node team's health and the other nodes' alerts (failure.pxi) end it.

cdef object _Testall = MPI.Request.Testall


# How long _mpi_wait polls with sched_yield before it sleeps between polls.
# A pipelined leg on an oversubscribed node often waits a few ms for a peer
# that shares its CPU, and a sleeping poller answers MPI's next step late
# each time (docs/PERFORMANCE.md, "Inter-node waits poll, yield for 50 ms,
# then sleep").
cdef double _MPI_YIELD_S = 0.05


cdef int _mpi_wait(_State st, object reqs, str what, object statuses=None) except -1:
    """Complete the requests of an inter-node leg, bounded as the engine's
    waits are: PGASCOL_TIMEOUT, and the node team's health (a local member
    that gave up or died ends the wait too). Otherwise a rank whose peers on
    other nodes failed before their MPI call would block forever. Testall
    drives MPI's progress; after a short spin (none when ranks outnumber
    CPUs: st.mpi_spin) it yields (an oversubscribed node keeps its CPUs for
    the ranks that do the work), and sleeps 100 us
    between polls only once the wait has lasted _MPI_YIELD_S. On
    timeout the node team is aborted: the pending MPI operation can never be
    matched reliably, so the communicator is not used again. statuses: a
    list of MPI.Status, one per request, filled on completion."""
    _bounded_wait(st, reqs, statuses, -1, what)
    return 0


# Open MPI 5.0.11 writes a truncated message's bytes past the receive
# buffer's end before it reports MPI_ERR_TRUNCATE (a receive of 799992 bytes
# of an 800000-byte message writes 8 more): a receive whose message may be
# longer than its buffer is probed first there (_mpi_probe); MPICH reports
# the truncation and writes nothing past the buffer.
cdef bint _TRUNCATION_UNSAFE = "Open MPI" in MPI.Get_library_version()


cdef object _mpi_probe(_State st, int source, str what, object status):
    """The next message from `source` on the private communicator, any tag,
    matched (MPI.Message; status: its tag and size), waited for as
    _mpi_wait waits. For a message whose size the receiver cannot know:
    a receive into a buffer too short for it must never be posted (Open MPI
    5.0.11 writes the whole message, past the buffer's end, before it
    reports MPI_ERR_TRUNCATE)."""
    return _bounded_wait(st, None, status, source, what)


# _bounded_wait's source for a Gather(v) root's wait for the other leaders'
# blocks whose receives are posted as their messages are probed (_post_probed).
cdef int _PROBED = -2


cdef inline object _poll(_State st, object reqs, object statuses, int source):
    """One poll of a bounded wait: reqs all complete (True), or the message
    matched from source (source >= 0); None while neither."""
    if source >= 0:
        return st.private_comm.Improbe(source, MPI.ANY_TAG, statuses)
    if source == _PROBED and not _post_probed(st, reqs):
        return None
    return True if _Testall(reqs, statuses) else None


cdef object _bounded_wait(_State st, object reqs, object statuses, int source, str what):
    """_mpi_wait's and _mpi_probe's loop (_poll's result)."""
    got = _poll(st, reqs, statuses, source)
    if got is not None:
        return got
    cdef double start = _monotonic(), now, check = start + 0.1
    cdef int polls = 0
    st.awaited_joins = None
    while got is None:
        polls += 1
        if polls >= st.mpi_spin:
            now = _monotonic()
            if now >= check:
                _mpi_check(st, start, now, what)
                check = now + 0.1
            if now - start < _MPI_YIELD_S:
                os.sched_yield()
            else:
                _sleep(100e-6)
        got = _poll(st, reqs, statuses, source)
    if st.awaited_joins:      # the leg completed with a refuser's scratch data
        q, why = st.awaited_joins[0]
        st.awaited_joins = None
        if st.coll == PGC_COLL_BCAST:   # the root's node's (_needs_node): the root or its leader refused
            raise _bcast_refusal(st, what, why.decode(errors="replace"))
        raise PeerRefusedError("%s: rank %d refused its arguments: %s" % (what, q, why.decode(errors="replace")))
    return got


cdef int _mpi_check(_State st, double start, double now, str what) except -1:
    """A bounded inter-node wait's check, every 100 ms: another node's
    alert, the node team's health, and PGASCOL_TIMEOUT (which aborts the
    node team)."""
    _check_alerts(st, what)     # a leader's, or a Gather(v)/Scatter(v) root's (_abort_across)
    st.core.check_alive()
    if now - start > st.timeout:
        msg = ("%s: the inter-node MPI phase did not complete within PGASCOL_TIMEOUT=%gs "
               "(a rank on another node failed or is not calling %s)" % (what, st.timeout, what))
        st.core.abort(msg)
        raise PgascolTimeoutError(msg)
    return 0

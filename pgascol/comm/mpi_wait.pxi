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
    if _Testall(reqs, statuses):
        return 0
    cdef double start = _monotonic(), now, check = start + 0.1
    cdef int polls = 0
    st.awaited_joins = None
    while not _Testall(reqs, statuses):
        polls += 1
        if polls < st.mpi_spin:
            continue
        now = _monotonic()
        if now >= check:
            _mpi_check(st, start, now, what)
            check = now + 0.1
        if now - start < _MPI_YIELD_S:
            os.sched_yield()
        else:
            _sleep(100e-6)
    if st.awaited_joins:      # the leg completed with a refuser's scratch data
        q, why = st.awaited_joins[0]
        st.awaited_joins = None
        if st.coll == PGC_COLL_BCAST:   # the root's node's (_needs_node): the root refused
            raise RootRefusedError("%s: the root (rank %d) refused its arguments: %s"
                                   % (what, st.root, why.decode(errors="replace")))
        raise PeerRefusedError("%s: rank %d refused its arguments: %s" % (what, q, why.decode(errors="replace")))
    return 0


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

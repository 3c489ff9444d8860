# Barrier: the node engine, and MPI among the node leaders.

cdef int _barrier(_State st) except -1:
    if not st.hier:
        st.core.c_barrier()
        st.count(PGC_COLL_BARRIER, P_ENGINE)
        return 1
    st.core.c_barrier()
    if st.lrank == 0:
        _mpi_wait(st, [st.xcomm.Ibarrier()], "Barrier")
    st.core.c_barrier()
    st.count(PGC_COLL_BARRIER, P_HIER)
    return 1

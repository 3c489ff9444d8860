# Barrier: the node engine, and MPI among the node leaders; then one entry
# into MPI on every rank (_poke_mpi: what MPI's Barrier progresses, ours does).

cdef int _barrier(_State st) except -1:
    if not st.hier:
        st.core.c_barrier()
        st.count(PGC_COLL_BARRIER, P_ENGINE)
        _poke_mpi()
        return 1
    st.core.c_barrier()
    if st.lrank == 0:
        _mpi_wait(st, [st.internode_comm.Ibarrier()], "Barrier")
    st.core.c_barrier()
    st.count(PGC_COLL_BARRIER, P_HIER)
    _poke_mpi()
    return 1

# UPC's collectives on global arrays inside a node (csrc/upc/upc.h): a
# member's share of a call is a program of steps (wait, copy, post, end)
# that pgascol.upc computes and caches; upc_run runs it.

cdef extern from "upc/upc.h" nogil:
    ctypedef struct pgc_upc_step:
        uint64_t kind, a, b, c
    int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n)



#: Step kinds and step numbers of a program (csrc/upc/upc.h).
UPC_WAIT, UPC_COPY, UPC_POST, UPC_END = 1, 2, 3, 4
UPC_ALL = UINT64_MAX
UPC_ENTERED, UPC_STEP0, UPC_DONE = 1, 2, PGC_STEP_DONE
#: The UPC collectives' ids (pgc_coll), by their names in COLLECTIVES.
UPC_COLLECTIVES = {name: i for i, name in enumerate(COLLECTIVES) if name.startswith("upc_all_")}


def upc_run(Team team, int coll, uint32_t arg, const uint64_t[:, ::1] prog, size_t nbytes):
    """Run this member's program (an (n, 4) uint64 array of steps) of UPC
    collective `coll`; nbytes (what it copies) sets the GIL policy (_enter)."""
    if prog.shape[1] != 4:
        raise ArgumentError("a UPC program is an (n, 4) array of steps")
    cdef const pgc_upc_step *p = <const pgc_upc_step *>&prog[0, 0] if prog.shape[0] else NULL
    cdef size_t n = prog.shape[0]
    cdef pgc_team *t = team._begin(nbytes)
    return team._end(pgc_upc_run(t, <pgc_coll>coll, arg, p, n))


def upc_refuse(Team team, int coll):
    """This rank refused its arguments to UPC collective `coll` while its
    node peers may have entered it (pgc_coll_refuse)."""
    team.c_refuse(coll)

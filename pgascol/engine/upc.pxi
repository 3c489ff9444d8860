# UPC's collectives on global arrays inside a node (csrc/upc/upc.h): a
# member's share of a call is a program of steps (wait, copy, post, end)
# that pgascol.upc computes and caches as an UpcProgram, whose run() runs it.

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


cdef class UpcProgram:
    """A member's program of steps for one UPC call (an (n, 4) uint64 array,
    copied once) on a team, with the call's collective, signature argument
    and bytes copied (which set the GIL policy, _enter). Kept in
    pgascol.upc's plan cache: calling it runs the call, one C call."""
    cdef pgc_upc_step *steps
    cdef size_t n, nbytes
    cdef int coll
    cdef uint32_t arg
    cdef Team team

    def __cinit__(self, Team team, int coll, uint32_t arg, const uint64_t[:, ::1] prog, size_t nbytes):
        if prog.shape[1] != 4:
            raise ArgumentError("a UPC program is an (n, 4) array of steps")
        self.team, self.n, self.nbytes, self.coll, self.arg = team, prog.shape[0], nbytes, coll, arg
        self.steps = <pgc_upc_step *>malloc(max(self.n, 1) * sizeof(pgc_upc_step))
        if self.steps == NULL:
            raise MemoryError()
        for i in range(self.n):
            self.steps[i].kind, self.steps[i].a = prog[i, 0], prog[i, 1]
            self.steps[i].b, self.steps[i].c = prog[i, 2], prog[i, 3]

    def __dealloc__(self):
        free(self.steps)

    def __call__(self):
        cdef pgc_team *t = self.team._begin(self.nbytes)
        self.team._end(pgc_upc_run(t, <pgc_coll>self.coll, self.arg, self.steps, self.n))


def upc_refuse(Team team, int coll):
    """This rank refused its arguments to UPC collective `coll` while its
    node peers may have entered it (pgc_coll_refuse; no reason: a UPC
    collective's refusal aborts its waiters' call, pgc_root_refusal_ends_call)."""
    team.c_refuse(coll, NULL)

# UPC's collectives on global arrays inside a node (csrc/upc/upc.h): a
# member's share of a call is a program of steps (wait, copy, post, end)
# that pgascol.upc computes and caches as an UpcProgram, whose run() runs it.

cdef extern from "upc/upc.h" nogil:
    ctypedef struct pgc_upc_step:
        uint64_t kind, a, b, c
    int pgc_upc_run(pgc_team *t, pgc_coll coll, uint32_t arg, const pgc_upc_step *prog, size_t n)
    ctypedef enum pgc_upc_op:
        PGC_UPC_NOPS
    int pgc_upc_op_valid(pgc_upc_op op, pgc_dtype t)
    void pgc_upc_fold(pgc_upc_op op, pgc_dtype t, void *out, const void *src, size_t n)
    void pgc_upc_scan(pgc_upc_op op, pgc_dtype t, void *dst, const void *src, size_t n)
    void pgc_upc_left(pgc_upc_op op, pgc_dtype t, void *dst, const void *carry, size_t n)



#: Step kinds and step numbers of a program (csrc/upc/upc.h).
UPC_WAIT, UPC_COPY, UPC_POST, UPC_END, UPC_OPTYPE, UPC_FOLD, UPC_SCAN, UPC_LEFT, UPC_ARRIVE = 1, 2, 3, 4, 5, 6, 7, 8, 9
UPC_ALL = UINT64_MAX
UPC_SLOT = UPC_INTO = 1 << 63       # an operand in a member's partial-result area; FOLD into *dst
#: UPC's built-in operators, by their pgascol.upc names, as the C core numbers them (pgc_upc_op).
UPC_OPS = {name: i for i, name in enumerate(("ADD", "MULT", "LOGAND", "LOGOR", "AND", "OR", "XOR", "MIN", "MAX"))}
assert len(UPC_OPS) == PGC_UPC_NOPS
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


def upc_op_valid(int op, int dtype):
    """Whether UPC defines built-in operator `op` (UPC_OPS) on dtype code `dtype`."""
    return 0 <= op < PGC_UPC_NOPS and 0 <= dtype < PGC_NDTYPES and bool(pgc_upc_op_valid(<pgc_upc_op>op, <pgc_dtype>dtype))


def upc_fold(int op, int dtype, unsigned char[::1] out, const unsigned char[::1] src):
    """out (one element) = the fold of the elements of src in index order
    (csrc/upc/upc_fold.c), src viewed as bytes; out must be writable."""
    cdef size_t item = _upc_item(op, dtype, out, src)
    if <size_t>out.shape[0] != item or src.shape[0] == 0:
        raise ArgumentError("upc_fold: out holds one element, src at least one")
    with nogil:
        pgc_upc_fold(<pgc_upc_op>op, <pgc_dtype>dtype, &out[0], &src[0], <size_t>src.shape[0] // item)


def upc_scan(int op, int dtype, unsigned char[::1] dst, const unsigned char[::1] src, carry=None):
    """dst = the inclusive scan of src in index order, then, given carry
    (one element), carry op each of them (bytes views; dst writable)."""
    cdef size_t item = _upc_item(op, dtype, dst, src)
    cdef const unsigned char[::1] c
    cdef bint left = carry is not None
    if dst.shape[0] != src.shape[0]:
        raise ArgumentError("upc_scan: dst and src differ in size")
    if left:
        c = carry
        if <size_t>c.shape[0] != item:
            raise ArgumentError("upc_scan: carry is one element")
    if src.shape[0] == 0:
        return
    with nogil:
        pgc_upc_scan(<pgc_upc_op>op, <pgc_dtype>dtype, &dst[0], &src[0], <size_t>src.shape[0] // item)
        if left:
            pgc_upc_left(<pgc_upc_op>op, <pgc_dtype>dtype, &dst[0], &c[0], <size_t>src.shape[0] // item)


cdef size_t _upc_item(int op, int dtype, const unsigned char[::1] out, const unsigned char[::1] src) except 0:
    if not upc_op_valid(op, dtype):
        raise ArgumentError("UPC defines no operator %d on dtype %d" % (op, dtype))
    cdef size_t item = pgc_dtype_size(<pgc_dtype>dtype)
    if <size_t>out.shape[0] % item or <size_t>src.shape[0] % item:
        raise ArgumentError("the buffers are not whole elements of %d bytes" % item)
    return item


def upc_slot_bytes(Team team):
    """The bytes of a member's partial-result area (its inline slot of a call: upc.h)."""
    return team._use().hdr.inline_slot

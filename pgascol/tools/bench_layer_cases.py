"""The PGAS, UPC, BLAS and sparse layers' small operations, as cases of
`pgascol-bench instructions` (bench_callgrind.py): where a call's cost is
its Python and C overhead, not its bytes, an instruction count catches
what a timing on a shared runner cannot.

A case is an operation and a size in bytes per rank. make_case returns
(call, free): `call` makes one operation, the same on every rank
(collective ones on every rank together; one-sided ones each on the
next rank's part, so every rank does the same work); `free` releases what
the case allocated, collectively.

    pgas.get        a.get of the next rank's part (nbytes of float64)
    pgas.put        a.put into the next rank's part
    pgas.fetch_op   an atomic fetch-and-add of one element (8 bytes only)
    pgas.barrier    pgas.barrier (no payload)
    upc.all_broadcast   nbytes from rank 0 to every rank's block
    upc.all_reduce      the sum of nbytes of float64 per rank, to rank 0
    blas.dot        pgascol.blas.dot of two blocked vectors, nbytes per rank
    blas.axpy       pgascol.blas.axpy of the same
    sparse.mv       y = A x, A tridiagonal CSR with nbytes of x per rank
    comm.bcast, comm.gather, comm.scatter, comm.allgather, comm.alltoall,
    comm.allreduce  pgascol.Comm's pickle-based method of mpi4py's most
                    common object, a small tuple (no payload size)
"""
import numpy as np

_OBJECT_METHODS = ("bcast", "gather", "scatter", "allgather", "alltoall", "allreduce")

LAYER_OPS = ("pgas.get", "pgas.put", "pgas.fetch_op", "pgas.barrier", "upc.all_broadcast", "upc.all_reduce",
             "blas.dot", "blas.axpy", "sparse.mv") + tuple("comm." + m for m in _OBJECT_METHODS)
LAYER_MAX_BYTES = 64 << 10      # small operations: where per-call cost matters
FIXED_BYTES = {"pgas.fetch_op": 8, "pgas.barrier": 0, **{"comm." + m: 0 for m in _OBJECT_METHODS}}
# Paced (bench_callgrind.paced): the collectives among them, whose calls make
# few enough instructions that the branches of their waits weigh, and
# sparse.mv, whose ranks count ~0.1% more on the rank that reaches the
# product's barriers first (which rank that is changed from job to job).
# The others make over 20,000 instructions per call (Python around
# one-sided transfers, SciPy's kernels), where those branches weigh below
# 0.05%.
LAYER_PACED = ("pgas.barrier", "upc.all_broadcast", "upc.all_reduce", "sparse.mv") + tuple(
    "comm." + m for m in _OBJECT_METHODS)


def layer_sizes(op, sizes):
    """The sizes a layer case runs at, out of the sweep's."""
    if op in FIXED_BYTES:
        return [FIXED_BYTES[op]]
    return [s for s in sizes if s <= LAYER_MAX_BYTES]


def make_case(op, nbytes, pcomm):
    """(call, free) of one layer case on pgascol communicator pcomm."""
    from .. import pgas
    P, me = pcomm.Get_size(), pcomm.Get_rank()
    n = max(1, nbytes // 8)
    there = ((me + 1) % P) * n              # the next rank's part of a blocked array
    if op in ("pgas.get", "pgas.put", "pgas.fetch_op"):
        a = pgas.zeros(pcomm, n * P, np.float64, block="*")
        buf = np.ones(n)
        call = {"pgas.get": lambda: a.get(there, buf),
                "pgas.put": lambda: a.put(there, buf),
                "pgas.fetch_op": lambda: a.fetch_op(there, 1.0, "sum")}[op]
        pgas.barrier(pcomm)
        return call, _freeing(pcomm, a)
    if op.startswith("comm."):
        return _object_call(op[5:], pcomm, P, me), None
    if op == "pgas.barrier":
        return (lambda: pgas.barrier(pcomm)), _freeing(pcomm)
    if op.startswith("upc."):
        from .. import upc
        if op == "upc.all_broadcast":
            src = pgas.zeros(pcomm, nbytes, np.uint8, block=0)
            dst = pgas.zeros(pcomm, nbytes * P, np.uint8, block=nbytes)
            return (lambda: upc.all_broadcast(dst, src, nbytes)), _freeing(pcomm, src, dst)
        src = pgas.array(pcomm, n * P, np.float64, block=n, fill=1.0)
        dst = pgas.zeros(pcomm, 1, np.float64, block=0)
        return (lambda: upc.all_reduce(dst, src, upc.ADD, n * P, n)), _freeing(pcomm, src, dst)
    if op.startswith("blas."):
        from .. import blas
        x = pgas.array(pcomm, n * P, np.float64, block="*", fill=1.0)
        y = pgas.array(pcomm, n * P, np.float64, block="*", fill=2.0)
        call = (lambda: blas.dot(x, y)) if op == "blas.dot" else (lambda: blas.axpy(x, y, a=0.0))
        return call, _freeing(pcomm, x, y)
    if op == "sparse.mv":
        import scipy.sparse as sp
        from .. import sparse
        N = n * P
        G = sp.diags([np.full(N - 1, -1.0), np.full(N, 2.0), np.full(N - 1, -1.0)], [-1, 0, 1], format="csr")
        A = sparse.from_scipy(pcomm, G, root=None, format="csr")
        x, y = A.vector("col", fill=1.0), A.vector("row")
        return (lambda: sparse.mv(A, x, y, alpha=1.0, beta=0.0)), _freeing(pcomm, x, y, A)
    raise ValueError("no layer case %r (choose from %s)" % (op, ", ".join(LAYER_OPS)))


def _freeing(pcomm, *objects):
    """Free the objects, collectively, once every rank is done with them."""
    def free():
        from .. import pgas
        pgas.barrier(pcomm)
        for o in objects:
            o.free()
    return free


def _memo_apart(build):
    """An object from build() whose pickle costs the same in every job.

    pickle's memo table starts with 8 slots chosen by (address >> 3) & 7, and the
    small tuple and the string inside it are both memoized: when the heap puts the
    tuple in the string's slot, each call probes twice more (+0.2% of a bcast's
    root).  The string is a static singleton, so only the tuple's address varies
    between jobs; build until it lands elsewhere, keeping the rejects alive so
    the allocator cannot hand back the same address.
    """
    def slot(o):
        return (id(o) >> 3) & 7
    rejects = []
    obj = build()
    while any(slot(obj) == slot(item) for item in obj if isinstance(item, str)):
        rejects.append(obj)
        obj = build()
    return obj


def _object_call(method, pcomm, P, me):
    """One call of a pickle-based method on a small tuple (a step, a name, a loss)."""
    from mpi4py import MPI
    obj = _memo_apart(lambda: (me, "x", 1.5))
    return {"bcast": lambda: pcomm.bcast(obj, 0),
            "gather": lambda: pcomm.gather(obj, 0),
            "scatter": lambda: pcomm.scatter([obj] * P if me == 0 else None, 0),
            "allgather": lambda: pcomm.allgather(obj),
            "alltoall": lambda: pcomm.alltoall([obj] * P),
            "allreduce": lambda: pcomm.allreduce(me, op=MPI.SUM)}[method]

# The GIL around an engine call: kept through a small call until its first
# wait for a peer, given up at once for a large one (_enter, _leave).

cdef extern from "Python.h":
    ctypedef struct PyThreadState:
        pass
    PyThreadState *PyEval_SaveThread() nogil

cdef extern from *:
    """
    /* The GIL taken back after an engine call that gave it up (_leave):
     * out of line, under a name of its own, so that an instruction count
     * leaves it out (pgascol-bench instructions: a small call gives the GIL
     * up only if it waited). Not PyEval_RestoreThread itself: the engine's
     * waits call that too, through the progress hook, and callgrind's
     * --toggle-collect would count it there. */
    __attribute__((noinline)) void pgascol_gil_take_back(void *state)
    {
        PyEval_RestoreThread((PyThreadState *)state);
    }
    """
    void pgascol_gil_take_back(void *state) nogil


cdef void _release_gil(pgc_team *t) noexcept nogil:
    # called with the GIL held: by _enter, or by the engine's first wait
    t.before_wait_state = <void *>PyEval_SaveThread()


cdef inline void _enter(pgc_team *t, size_t nbytes) noexcept:
    """Before an engine call that _leave ends, with nothing but that call
    in between: payloads that fit a control line keep the GIL until their
    first wait for a peer (releasing and taking it costs more than the
    whole call when the data is already there); larger ones give it up now."""
    t.before_wait_state = NULL
    if nbytes <= t.cfg.inline_max:
        t.before_wait = _release_gil
    else:
        t.before_wait = NULL
        _release_gil(t)


cdef inline void _leave(pgc_team *t) noexcept:
    t.before_wait = NULL
    if t.before_wait_state != NULL:
        pgascol_gil_take_back(t.before_wait_state)
        t.before_wait_state = NULL

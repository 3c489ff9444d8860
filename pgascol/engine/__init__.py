"""The engine: the Cython layer over the C core (csrc/).

``_core.Team`` is a node team (one shared segment, its members' progress
words) with one method per collective; other Cython modules call its C-level
``c_*`` methods (declared in _core.pxd), Python code its Python methods.
ccore.pxd declares the C core for Cython; no logic lives there."""

"""pgascol.upc names the PGASCol thesis's algorithm variants the spec asks for.

The spec: push and pull for broadcast, scatter, gather and reduce; trees
flat, binomial and hierarchical for the same four; fragmentation none,
static and dynamic halves (gather: static only, halves do not apply to
it); ring (token) scatter and gather; gather_all without a global
synchronisation between its phases; the three-phase prefix reduce; across
nodes, a binomial tree among the node leaders then flat or binomial inside
the node (hier-flat, hier-binomial), gather_all without a global
synchronisation (hier-gather-bcast), exchange with node-level aggregation
(hier-aggregate); NUMA regions as a level (numa). A
variant is there when one of the collective's algorithm names
(pgascol.upc.ALGORITHMS) says it. tests/mpi_programs/upc_collectives.py
forces every named algorithm (test_every_algorithm_forced); this test
checks that every variant of the spec is named."""
import pytest

TREES = ("push", "pull", "binomial", "hier")
REQUIRED = {
    "broadcast": TREES + ("static", "dynamic", "numa", "hier-flat", "hier-binomial"),
    "scatter": TREES + ("static", "dynamic", "ring", "hier-flat"),
    "gather": TREES + ("static", "ring", "hier-flat"),
    "reduce": TREES + ("static", "dynamic"),
    "gather_all": ("gather-bcast", "hier-gather-bcast"),
    "exchange": ("hier-aggregate",),
    "prefix_reduce": ("three-phase",),
}


def missing_variants(algorithms):
    """{collective: [what no algorithm name of it says]} for REQUIRED."""
    out = {}
    for coll, wanted in REQUIRED.items():
        names = algorithms.get(coll, ())
        lack = [w for w in wanted if not any(w in n for n in names)]
        if lack:
            out[coll] = lack
    return out


def test_missing_variants_finds_what_is_not_named():
    assert missing_variants({c: ("a-%s" % "-".join(w),) for c, w in REQUIRED.items()}) == {}
    assert missing_variants({**{c: ("a-%s" % "-".join(w),) for c, w in REQUIRED.items()},
                             "scatter": ("push", "pull")}) == {"scatter": ["binomial", "hier", "static", "dynamic",
                                                                           "ring", "hier-flat"]}


def test_every_variant_of_the_spec_is_named():
    from pgascol import upc
    missing = missing_variants(upc.ALGORITHMS)
    assert not missing, "variants not named yet: %s (named: %s)" % (missing, upc.ALGORITHMS)


def test_every_variant_of_the_reductions_is_named():
    """all_reduce's push, pull, binomial trees, static and dynamic pieces
    and hier, and the three-phase prefix reduce, are all there."""
    from pgascol import upc
    missing = missing_variants(upc.ALGORITHMS)
    assert "reduce" not in missing and "prefix_reduce" not in missing, missing

"""The algorithm a UPC call runs when it names none: chosen per collective,
team shape and size, from measurement.

A rule list says, for one collective and one team shape ("node": the
communicator is one node; "nodes": it spans several), which algorithm runs
up to which size: [[limit, algorithm], ..., [None, algorithm]], the first
whose limit (bytes, the call's nbytes) is >= the size. BUILTIN holds the
rules measured on the development machine (docs/PERFORMANCE.md, "UPC
collectives"); `pgascol calibrate` measures this machine's
(pgascol/tools/calibrate.py: run_upc) and stores them in the file
cache_path("upc", "PGASCOL_UPC_CALIBRATION") names, as
{"rules": {collective: {shape: rules}}}; any collective the file names
(reductions included) replaces the built-in rules of that shape. A
PGASCOL_UPC_<COLLECTIVE> variable still wins over both (plan.algorithm)."""
import json

from ..node.calibration import cache_path

#: Up to LAST bytes a block an ALLSYNC call inside a node runs "last": the
#: member that arrives last makes every copy, both ALLSYNCs in one round
#: (plan.last_program), where a single copier (the root) would be a fan-in
#: then a fan-out, one more member to schedule in between when ranks
#: outnumber cores (docs/PERFORMANCE.md, "Small UPC ALLSYNC calls: the last
#: arrival copies"). Up to
#: SMALL a rooted collective runs with the root copying every block (push
#: for broadcast and scatter, pull for gather); above, every member copies
#: its own block, in parallel. gather_all and exchange move P blocks per
#: rank: "last" only up to LAST_ALL bytes a block. Across nodes the
#: leaders' broadcast (hier-flat: one MPI message per node, then the
#: node's single copy) beats pgascol.Comm's Bcast (hier) on virtual nodes;
#: for the others hier wins or ties (the leader's packing is copies that
#: MPI's shared memory does not make); a cluster's calibration may differ.
LAST = 4 << 10
SMALL = 16 << 10
LAST_ALL = 1 << 10
BUILTIN = {
    "broadcast": {"node": [[LAST, "last"], [SMALL, "push"], [None, "pull"]], "nodes": [[None, "hier-flat"]]},
    "scatter": {"node": [[LAST, "last"], [SMALL, "push"], [None, "pull"]], "nodes": [[None, "hier"]]},
    "gather": {"node": [[LAST, "last"], [SMALL, "pull"], [None, "push"]], "nodes": [[None, "hier"]]},
    "gather_all": {"node": [[LAST_ALL, "last"], [None, "pull"]], "nodes": [[None, "hier"]]},
    "exchange": {"node": [[LAST_ALL, "last"], [None, "pull"]], "nodes": [[None, "hier"]]},
    "permute": {"node": [[None, "push"]], "nodes": [[None, "hier"]]},
}
_loaded = {}


def path():
    return cache_path("upc", "PGASCOL_UPC_CALIBRATION")


def load(where=None):
    """{collective: {shape: rules}} from the calibration file, {} if absent or unreadable."""
    where = where or path()
    if where not in _loaded:
        try:
            with open(where) as f:
                rules = json.load(f)["rules"]
            _loaded[where] = {c: {s: [[None if lim is None else int(lim), str(a)] for lim, a in r]
                                  for s, r in shapes.items()} for c, shapes in rules.items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            _loaded[where] = {}
    return _loaded[where]


def shape_of(nnodes, size):
    """(the team's shape, that shape at this many ranks): rules measured at
    one size of team are kept under "node:<ranks>" / "nodes:<ranks>", and
    apply to teams of that many ranks; "node" / "nodes" to any other.
    Every rank computes the same (global values only), so every rank picks
    the same algorithm."""
    shape = "nodes" if nnodes > 1 else "node"
    return shape, "%s:%d" % (shape, size)


def rules(coll, shape, sized=None):
    """The rules in force for a collective and team shape: the file's for
    this many ranks, else the file's for the shape, else BUILTIN's; or None."""
    mine = load().get(coll, {})
    return (sized and mine.get(sized)) or mine.get(shape) or BUILTIN.get(coll, {}).get(shape)


def choose(coll, nbytes, shape, sized, names):
    """The algorithm of `names` the rules give for a call of nbytes (None: no rule applies)."""
    for limit, alg in rules(coll, shape, sized) or ():
        if (limit is None or nbytes <= limit) and alg in names:
            return alg
    return None


#: A size keeps the previous size's winner while that is within this
#: fraction of the fastest (ties do not flip the rules back and forth).
TIE = 0.10


def winners(times_by_size):
    """[(size, {algorithm: seconds})], sizes ascending -> [(size, winner)]."""
    out, last = [], None
    for size, times in times_by_size:
        best = min(times, key=times.get)
        if last in times and times[last] <= times[best] * (1 + TIE):
            best = last
        out.append((size, best))
        last = best
    return out


def compress(measured):
    """[(size, algorithm fastest there)], sizes ascending -> rules: one
    entry per run of sizes with the same winner, the last open-ended."""
    out = []
    for size, alg in measured:
        if out and out[-1][1] == alg:
            out[-1][0] = size
        else:
            out.append([size, alg])
    if out:
        out[-1][0] = None
    return out


def save(rules_by_coll, where, **about):
    """Write the rules (merged over what the file holds: another
    collective's rules, a reduction's crossovers, stay)."""
    import os
    where = where or path()
    old = {}
    try:
        with open(where) as f:
            old = json.load(f).get("rules", {})
    except (OSError, ValueError, AttributeError):
        pass
    for coll, shapes in rules_by_coll.items():
        old.setdefault(coll, {}).update(shapes)
    os.makedirs(os.path.dirname(os.path.abspath(where)), exist_ok=True)
    with open(where, "w") as f:
        json.dump(dict(about, rules=old), f, indent=1)
    _loaded.pop(where, None)
    return where

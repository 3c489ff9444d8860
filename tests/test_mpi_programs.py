"""The multi-rank test programs of tests/mpi_programs/, run under mpiexec by
tests/mpi_harness.py: one table of launches, each row (programs, rank
counts, setting, environment), and one pytest function per chapter.

Every test function of a program is one pytest item per rank count and
setting, e.g. ``test_comm[comm_coll_buffers::test_bcast-np4-vnodes_of_2]``;
the items of one launch read their outcome from a single mpiexec (see
tests/mpi_harness.py for the clean-exit items, PGASCOL_TEST_NP and rerunning
a function by hand). ``pytest tests/test_mpi_programs.py::test_comm`` runs
one chapter; tests/README.md lists the chapters by feature."""
from pgascol.engine._core import COLLECTIVES
from tests.mpi_harness import Run, list_test_functions, list_tests, program_tests

# pgascol.Comm as mpi4py's communicator: buffer and vector collectives,
# message specifications and its object model, on one shared pgascol.Comm
# per launch.
COMM = ("comm_coll_buffers.py", "comm_coll_vectors.py", "comm_message_specs.py", "comm_communicator.py")


def functions_of(programs, keep):
    """The test names (list_tests: "<program stem>::<function>" for several
    programs) of the functions of `programs` whose bare name `keep` accepts."""
    return tuple(n for n in list_tests(programs) if keep(n.rpartition("::")[2]))


def vnodes(k, node_map=None):
    """Virtual nodes of k ranks (PGASCOL_NODE_SIZE), consecutive ranks
    unless node_map (PGASCOL_NODE_MAP) says otherwise: e.g. k=2 round robin,
    np=3 -> {0,2} {1}, np=4 -> {0,2} {1,3}, np=8 -> {0,4} {1,5} {2,6} {3,7};
    k=3 round robin, np=4 -> {0,2} {1,3}, np=8 -> {0,3,6} {1,4,7} {2,5}."""
    env = {"PGASCOL_NODE_SIZE": str(k)}
    if node_map:
        env["PGASCOL_NODE_MAP"] = node_map
    return env


# Distributed BLAS: the routines, the factorizations and UPCBLAS's interface, in one launch.
BLAS = ("blas_routines.py", "blas_factor.py", "blas_upcblas.py")

# The intra-node engine: every collective, then the paths that follow the measured costs.
ENGINE = ("engine_collectives_results.py", "engine_collectives_paths.py")
# Small thresholds, so that every size of the ENGINE programs lands on
# both sides of each of them.
ENGINE_SMALL = {"PGASCOL_INLINE_MAX": "64", "PGASCOL_CHUNK_BYTES": "4096", "PGASCOL_XCHG_CHUNK_BYTES": "4096",
                "PGASCOL_STAGING_BYTES": "16384"}
CMA_EVERYWHERE = {"PGASCOL_CMA_MIN_" + name.upper(): "0" for name in COLLECTIVES}
# The > 16 MiB messages: with the default thresholds only.
ENGINE_LARGE = functions_of(ENGINE, lambda name: name.startswith("test_large_"))
# Small thresholds for the random mix: every transfer method, a binary Bcast
# tree, streaming stores everywhere.
MIX_SMALL = {"PGASCOL_INLINE_MAX": "64", "PGASCOL_CHUNK_BYTES": "4096", "PGASCOL_XCHG_CHUNK_BYTES": "4096",
             "PGASCOL_STAGING_BYTES": "65536", "PGASCOL_RECV_STREAM_MIN": "1000", "PGASCOL_STREAM": "2",
             "PGASCOL_BCAST_TREE_MIN": "3", "PGASCOL_BCAST_RADIX": "2",
             **{"PGASCOL_CMA_MIN_" + name.upper(): "32768" for name in COLLECTIVES},
             "PGASCOL_TEST_EXPECT_CMA": "1"}
# Programs that assert the paths the built-in thresholds take (the tuner may take a
# size class to MPI on its measurements): tuning off.
BUILT_IN_PATHS = {"PGASCOL_TUNE": "0"}
# Derived datatypes in the data-movement collectives: layouts, then MPI.BOTTOM, zero counts, misuse.
DATATYPES = ("comm_datatypes_layouts.py", "comm_datatypes_special_cases.py")
# Errors on some ranks only: one rank's refusal, several ranks', calls that disagree, types that differ.
ERRORS = ("comm_errors_refusals.py", "comm_errors_several_refusers.py", "comm_errors_mismatch.py",
          "comm_errors_types.py")
# Partial errors become timeouts: short ones.
SHORT_TIMEOUT = {"PGASCOL_TIMEOUT": "3"}
TYPES_DIFFER = "test_a_root_datatype_differing_at_the_same_byte_count_is_refused_and_the_comm_stays_usable"
TYPES_ACROSS = "test_across_nodes_a_rank_of_another_type_than_the_roots_takes_no_bytes_of_it"
TYPES_MOVE_NOTHING = "test_on_one_node_no_bytes_move_between_ranks_of_different_types"
ROOT_MISUSE = "test_root_only_misuse_leaves_the_communicator_usable"
REDUCE_ROOT = "test_a_reduce_root_that_refuses_runs_with_scratch_and_the_others_complete"
ERRORS_AT_8 = (ROOT_MISUSE, "test_a_member_that_refuses_leaves_the_communicator_usable",
               "test_a_spec_mpi4py_refuses_on_one_rank_leaves_the_communicator_usable",
               "test_misuse_on_the_root_and_another_leader_ends_every_rank_at_once",
               "test_a_derived_datatype_on_one_rank_only",
               "test_ranks_on_different_paths_all_fail_at_once",
               TYPES_DIFFER, REDUCE_ROOT, TYPES_ACROSS, TYPES_MOVE_NOTHING,
               "test_a_refusal_of_its_own_arguments_across_nodes_ends_every_rank_at_once",
               "test_refusals_every_rank_makes_alike_leave_no_alert_behind",
               "test_a_refusal_of_a_bcast_reduce_or_scan_by_whole_nodes_never_gives_wrong_data")
ERRORS_NOT_AT_8 = functions_of(ERRORS, lambda name: name not in ERRORS_AT_8)
# The scenarios of node_team.py end their jobs abnormally: tests/test_segment_cleanup.py runs them.
NODE_TEAM_SCENARIOS = tuple(n for n in list_test_functions("node_team.py") if n.startswith("test_scenario_"))

# pgascol.upc, in the style of the GWU UPC test suite: all the cases of
# tests/mpi_programs/upc_cases.py at np 2 and 3 (the data movement's whole
# product; the reductions' every pair of dimensions, PGASCOL_UPC_TEST_PRODUCT=full
# for their whole product), a fixed random twentieth of them elsewhere.
# Arguments that differ between ranks are tried on one node only: across nodes
# a refusal on some ranks leaves the others in MPI until PGASCOL_TIMEOUT.
UPC = ("upc_collectives.py", "upc_semantics.py")
UPC_EVERY_CASE = {"PGASCOL_UPC_TEST_SAMPLE": "all"}
UPC_SAMPLED = {"PGASCOL_UPC_TEST_SAMPLE": "0.05"}
UPC_ONE_NODE_ONLY = ("upc_semantics::test_misuse_arguments_differing_between_ranks",)
UPC_LARGE = ("upc_collectives::test_large_reductions",)

# Every program runs at 1, 2, 3, 4 and 8 ranks (8 oversubscribes a 2-core runner) in its
# default setting. A further setting runs at the counts where it behaves differently: a team of 2,
# an odd count, 8 where oversubscription changes the path; virtual nodes at the counts that give
# distinct shapes (equal and unequal nodes, one rank per node, more nodes than ranks per node).
# The whole table is what CI's time allows (.ci/run: under 60 minutes on 2 cores).
TABLE = [
    # ---- pgascol.Comm: on one node, and as a hierarchy of virtual nodes of 1, 2 and 3 ranks
    Run(COMM, timeout=300),
    Run(COMM, (2, 3), "vnodes_of_1", vnodes(1), timeout=300),
    Run(COMM, (3, 8), "vnodes_of_2", vnodes(2), timeout=300),
    Run(COMM, (4, 8), "vnodes_of_3", vnodes(3), timeout=300),

    # ---- object (pickle-based) collectives: path "shm" on one node; "mpi" (mpi4py's own
    # methods) on virtual nodes and across hosts, where the misuse test is left out: mpi4py
    # leaves the ranks that did nothing wrong blocked in MPI
    Run("comm_coll_objects.py", timeout=400, one_node=("test_misuse_raises_everywhere_and_comm_stays_usable",)),
    Run("comm_coll_objects.py", (4,), "vnodes_of_2", vnodes(2), timeout=400,
        exclude=("test_misuse_raises_everywhere_and_comm_stays_usable",)),

    # ---- derived datatypes and MPI.BOTTOM in the data-movement collectives (their calls
    # must run on the engine: the built-in paths, no tuner to take a size class to MPI)
    Run(DATATYPES, env=BUILT_IN_PATHS, timeout=400),
    Run(DATATYPES, (2, 3), "vnodes_of_1", {**vnodes(1), **BUILT_IN_PATHS}, timeout=400),
    Run(DATATYPES, (3, 8), "vnodes_of_2", {**vnodes(2), **BUILT_IN_PATHS}, timeout=400),

    # ---- errors on some ranks only: timeouts naming the operation; on virtual nodes of 1
    # and 2 ranks the others wait in MPI, not in the engine
    Run(ERRORS, (2, 3, 4), "timeout_3s", SHORT_TIMEOUT),
    Run(ERRORS, (2, 3, 4), "timeout_3s_vnodes_of_1", {**SHORT_TIMEOUT, **vnodes(1)}),
    Run(ERRORS, (3, 4), "timeout_3s_vnodes_of_2", {**SHORT_TIMEOUT, **vnodes(2)}),
    # ... and at np=8 (oversubscribed), the misuse that must leave the communicator usable
    # or end every rank at once, on one node and on unequal virtual nodes (3, 3, 2)
    Run(ERRORS, (8,), "timeout_3s", SHORT_TIMEOUT, exclude=ERRORS_NOT_AT_8),
    Run(ERRORS, (8,), "timeout_3s_vnodes_of_3", {**SHORT_TIMEOUT, **vnodes(3)}, exclude=ERRORS_NOT_AT_8),
    # types that differ, and a root's refusal (Bcast, Gather(v), Scatter(v), Reduce), between nodes
    # whose ranks are not consecutive (a node's second rank on another node)
    Run(ERRORS, (4, 8), "timeout_3s_vnodes_of_2_roundrobin", {**SHORT_TIMEOUT, **vnodes(2, "roundrobin")},
        exclude=functions_of(ERRORS, lambda name: name not in (TYPES_DIFFER, TYPES_ACROSS, ROOT_MISUSE, REDUCE_ROOT))),
    # ... and with each node's leg of a large Bcast single copy (a node that is not
    # oversubscribed takes it from 64 KiB), whose root pushes the tail into its readers'
    # buffers: none into a reader of another type, all pulled by a leader that forwards
    Run(ERRORS, (3, 4), "timeout_3s_vnodes_of_2_cma_bcast",
        {**SHORT_TIMEOUT, **vnodes(2), "PGASCOL_CMA_MIN_BCAST": "65536"},
        exclude=functions_of(ERRORS, lambda name: name not in (TYPES_DIFFER, TYPES_ACROSS))),

    # ---- revoked communicators (ULFM: Open MPI's ci:test-openmpi run; under MPICH, which
    # has none, Revoke raises NotImplementedError and the communicator stays usable)
    Run("comm_ulfm.py", (2, 3, 4)),
    Run("comm_ulfm.py", (2, 3), "vnodes_of_1", vnodes(1)),
    Run("comm_ulfm.py", (4,), "vnodes_of_2", vnodes(2)),

    # ---- rank order whatever the placement on nodes: round robin (k=1 is consecutive
    # again), consecutive (the hierarchical Scan/Exscan; k=2: np=3 -> {0,1} {2}, np=4 ->
    # {0,1} {2,3}; k=3, np=8 -> {0,1,2} {3,4,5} {6,7}) and, for comparison, one node
    Run("comm_placement.py", (3,), "vnodes_of_1_roundrobin", {**vnodes(1, "roundrobin"), **BUILT_IN_PATHS}, timeout=300),
    Run("comm_placement.py", (3, 8), "vnodes_of_2_roundrobin", {**vnodes(2, "roundrobin"), **BUILT_IN_PATHS}, timeout=400),
    Run("comm_placement.py", (4, 8), "vnodes_of_3_roundrobin", {**vnodes(3, "roundrobin"), **BUILT_IN_PATHS}, timeout=400),
    Run("comm_placement.py", (3, 4), "vnodes_of_2_block", {**vnodes(2, "block"), **BUILT_IN_PATHS}, timeout=300),
    Run("comm_placement.py", (8,), "vnodes_of_3_block", {**vnodes(3, "block"), **BUILT_IN_PATHS}, timeout=400),
    Run("comm_placement.py", (3,), env=BUILT_IN_PATHS, timeout=300),

    # ---- the random mix: the defaults; small thresholds; single copy and AVX2 off;
    # virtual nodes, consecutive and round robin; named segments with the path fixed by size
    Run("comm_random_mix.py", timeout=300),
    Run("comm_random_mix.py", (2, 3, 8), "small_thresholds", MIX_SMALL, timeout=300),
    Run("comm_random_mix.py", (2, 3), "no_cma_no_simd", {"PGASCOL_CMA": "0", "PGASCOL_SIMD": "0"}, timeout=300),
    Run("comm_random_mix.py", (3, 8), "vnodes_of_2", vnodes(2), timeout=300),
    Run("comm_random_mix.py", (4, 8), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=300),
    Run("comm_random_mix.py", (4,), "named_by_size", {"PGASCOL_SEGMENT": "named", "PGASCOL_ADAPT": "0"},
        timeout=300),

    # ---- the tuner: learned paths, the same on every rank, right results on each,
    # following a change of cost, kept in the calibration file; one node (oversubscribed
    # at 8); virtual nodes, where it is off and every call runs the hierarchy
    Run("comm_tuning.py", timeout=300),
    Run("comm_tuning.py", (3, 4), "vnodes_of_2", vnodes(2), timeout=300),

    # ---- the intra-node engine: the defaults; small thresholds with single copy off, the
    # baseline loops (no AVX2) and staging written with streaming stores (the defaults
    # write it with ordinary stores); small thresholds with single copy everywhere; and
    # a Bcast down a binary tree (every team of 2 or more), both copy methods
    Run(ENGINE, timeout=600),
    Run(ENGINE, (2, 3, 8), "small_no_cma", timeout=600, exclude=ENGINE_LARGE,
        env={**ENGINE_SMALL, "PGASCOL_CMA": "0", "PGASCOL_SIMD": "0", "PGASCOL_STREAM": "2"}),
    Run(ENGINE, (2, 3, 8), "small_cma", env={**ENGINE_SMALL, **CMA_EVERYWHERE}, timeout=600,
        exclude=ENGINE_LARGE),
    Run(ENGINE, (3, 4, 8), "small_tree", timeout=600, exclude=ENGINE_LARGE,
        env={**ENGINE_SMALL, **CMA_EVERYWHERE, "PGASCOL_BCAST_TREE_MIN": "2", "PGASCOL_BCAST_RADIX": "2",
             "PGASCOL_CMA_MIN_BCAST": "20000"}),

    # ---- PGAS global arrays: on one node (shared memory, C atomics) and across virtual
    # nodes of 1, 2 and 3 ranks (MPI RMA, and both within one array)
    Run("pgas_arrays.py", timeout=300),
    Run("pgas_arrays.py", (2, 3), "vnodes_of_1", vnodes(1), timeout=300),
    Run("pgas_arrays.py", (4, 8), "vnodes_of_2", vnodes(2), timeout=300),
    # Open MPI's network atomics left on (the harness turns them off, as the README asks)
    Run("pgas_arrays.py", (2,), "vnodes_of_1_network_atomics", {**vnodes(1), "OMPI_MCA_osc_rdma_acc_use_amo": "1"},
        exclude=functions_of("pgas_arrays.py", lambda name: not name.startswith("test_bitwise_updates"))),
    Run("pgas_arrays.py", (8,), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=300),

    # ---- UPC collectives on global arrays (pgascol.upc): every collective and algorithm once,
    # inside one node (programs of copies; a forced topology of two NUMA regions for the 'numa'
    # level) and across virtual nodes of 1, 2 and 3 ranks (the hier* algorithms)
    Run("upc_smoke.py", timeout=300),
    Run("upc_smoke.py", (2, 3), "vnodes_of_1", vnodes(1), timeout=300),
    Run("upc_smoke.py", (4,), "vnodes_of_2", vnodes(2), timeout=300),
    Run("upc_smoke.py", (8,), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=300),
    Run("upc_smoke.py", (3, 4), "two_numa_regions", {"PGASCOL_TOPOLOGY": "numa=2,cores=2"}, timeout=300),

    # ---- pgascol.upc: every case on one node at np 2 and 3; a sample at np 1, 4, 8 and on
    # virtual nodes of 1, 2 and 3 ranks (the inter-node legs)
    Run(UPC, (2, 3), "every_case", UPC_EVERY_CASE, timeout=600),
    Run(UPC, (1, 4, 8), "sampled", UPC_SAMPLED, timeout=600, exclude=UPC_LARGE),
    Run(UPC, (3,), "vnodes_of_1_sampled", {**vnodes(1), **UPC_SAMPLED}, timeout=600,
        exclude=UPC_ONE_NODE_ONLY + UPC_LARGE),
    Run(UPC, (4,), "vnodes_of_2_sampled", {**vnodes(2), **UPC_SAMPLED}, timeout=600, exclude=UPC_ONE_NODE_ONLY),
    Run(UPC, (4,), "vnodes_of_3_sampled", {**vnodes(3), **UPC_SAMPLED}, timeout=600,
        exclude=UPC_ONE_NODE_ONLY + UPC_LARGE),

    # ---- buffers in node shared memory (pgascol.empty): one node, with the kernel's single
    # copy off (the shared regions' copies only), and virtual nodes (the intra-node legs)
    Run("comm_shared_buffers.py", timeout=300),
    Run("comm_shared_buffers.py", (2, 3, 8), "no_cma", {"PGASCOL_CMA": "0"}, timeout=300),
    Run("comm_shared_buffers.py", (3, 8), "vnodes_of_2", vnodes(2), timeout=300),
    Run("comm_shared_buffers.py", (8,), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=300),
    # ---- distributed BLAS on global arrays: one node (operands read in place) and virtual
    # nodes of 1, 2 and 3 ranks (Allgatherv, Reduce_scatter, panels fetched with Rget)
    Run(BLAS, timeout=600),
    Run(BLAS, (3,), "vnodes_of_1", vnodes(1), timeout=600),
    Run(BLAS, (4,), "vnodes_of_2", vnodes(2), timeout=600),
    Run(BLAS, (4,), "vnodes_of_3", vnodes(3), timeout=600),
    # UPCBLAS's +1 under an address-space limit, in fresh jobs (little free heap to reuse)
    Run("blas_memory.py", (2, 3, 4, 8), timeout=120),
    Run("blas_memory.py", (4,), "vnodes_of_2", vnodes(2), timeout=120),

    # ---- NodeTeam: one node; virtual nodes of k consecutive ranks (k=2: np=3 -> [2, 1],
    # 4 -> [2, 2], 8 -> 4 x 2; k=3: np=4 -> [3, 1], 8 -> [3, 3, 2]) and round robin
    Run("node_team.py", timeout=60, exclude=NODE_TEAM_SCENARIOS),
    Run("node_team.py", (3, 4, 8), "vnodes_of_2", vnodes(2), timeout=60, exclude=NODE_TEAM_SCENARIOS),
    Run("node_team.py", (4, 8), "vnodes_of_3", vnodes(3), timeout=60, exclude=NODE_TEAM_SCENARIOS),
    Run("node_team.py", (4, 8), "vnodes_of_2_roundrobin", vnodes(2, "roundrobin"), timeout=60,
        exclude=NODE_TEAM_SCENARIOS),
    Run("node_team.py", (4, 8), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=60,
        exclude=NODE_TEAM_SCENARIOS),

    # ---- pgascol.sparse's applications (susdot, CG, NAS CG class S, UPCBLAS's entry points):
    # one node, and virtual nodes of 1, 2 and 3 ranks (the halo exchanged by messages)
    Run("sparse_apps.py", timeout=300),
    Run("sparse_apps.py", (2, 3), "vnodes_of_1", vnodes(1), timeout=300),
    Run("sparse_apps.py", (4,), "vnodes_of_2", vnodes(2), timeout=300),
    Run("sparse_apps.py", (4,), "vnodes_of_3_roundrobin", vnodes(3, "roundrobin"), timeout=300),
]

_taken = []


def chapter(programs):
    """The pytest function of the rows of TABLE that run `programs`."""
    rows = [row for row in TABLE if row.programs == programs]
    _taken.extend(rows)
    return program_tests(rows)


# A chapter of one program is test_ and the program's name without "comm_"
# (pgascol.Comm's chapters are the suite's default); a chapter of several
# programs is named by their layer, or by the feature their names share
# (DATATYPES: test_datatypes, ERRORS: test_errors, ENGINE: test_engine_collectives).
test_comm = chapter(COMM)
test_coll_objects = chapter("comm_coll_objects.py")
test_datatypes = chapter(DATATYPES)
test_errors = chapter(ERRORS)
test_ulfm = chapter("comm_ulfm.py")
test_placement = chapter("comm_placement.py")
test_random_mix = chapter("comm_random_mix.py")
test_tuning = chapter("comm_tuning.py")
test_engine_collectives = chapter(ENGINE)
test_node_team = chapter("node_team.py")
test_pgas_arrays = chapter("pgas_arrays.py")
test_upc_smoke = chapter("upc_smoke.py")
test_upc = chapter(UPC)
test_shared_buffers = chapter("comm_shared_buffers.py")
test_blas = chapter(BLAS)
test_sparse_apps = chapter("sparse_apps.py")
test_blas_memory = chapter("blas_memory.py")

assert len(_taken) == len(TABLE), "a row of TABLE that no chapter above runs"

"""pgascol.pgas's layouts against UPC's formulas (no MPI): owner, local
offset, local sizes, owned ranges and the local run of a global range, for
block 0, 1, 3, "*" and P = 1..8, and the irregular layout."""
import numpy as np
import pytest

from pgascol.pgas.layout import BlockCyclic, Irregular


@pytest.mark.parametrize("P", range(1, 9))
@pytest.mark.parametrize("block", [0, 1, 3, "*", 5])
def test_block_cyclic_follows_upc(P, block):
    for n in (0, 1, 7, 23, 64, 101):
        lay = BlockCyclic(n, P, block)
        B = {0: max(n, 1), "*": max(-(-n // P), 1)}.get(block, block)
        i = np.arange(n)
        own, loc = (i // B) % P, (i // (B * P)) * B + i % B
        assert np.array_equal(lay.owner(i), own) and np.array_equal(lay.local_index(i), loc)
        for r in range(P):
            mine = own == r
            assert lay.local_size(r) == mine.sum()
            assert np.array_equal(lay.global_index(r, loc[mine]), i[mine])
            assert [j for lo, hi in lay.owned(r) for j in range(lo, hi)] == list(i[mine])
            for lo in range(0, n + 1, 3):
                for hi in range(lo, n + 1, 5):
                    first, count = lay.runs(r, lo, hi)
                    sel = loc[mine & (i >= lo) & (i < hi)]
                    assert count == len(sel) and np.array_equal(sel, np.arange(first, first + count))
        for lo in range(0, n + 1, 3):
            for hi in range(lo, n + 1, 5):
                check_pieces(lay, lo, hi, own, loc, none_when=(hi > lo and (hi - 1) // B - lo // B >= P))


def check_pieces(lay, lo, hi, own, loc, none_when):
    """lay.pieces(lo, hi) covers the range once, each piece one owner's run
    of consecutive local elements; None exactly when `none_when`."""
    pieces = lay.pieces(lo, hi)
    assert (pieces is None) == none_when, (lo, hi, pieces)
    if pieces is None:
        return
    covered = []
    for r, first, count, pos in pieces:
        assert count > 0
        g = np.arange(lo + pos, lo + pos + count)
        assert (own[g] == r).all() and np.array_equal(loc[g], np.arange(first, first + count))
        covered += list(g)
    assert covered == list(range(lo, hi))


def test_irregular():
    lay = Irregular([3, 0, 5, 1])
    i = np.arange(9)
    assert np.array_equal(lay.owner(i), [0, 0, 0, 2, 2, 2, 2, 2, 3])
    assert np.array_equal(lay.local_index(i), [0, 1, 2, 0, 1, 2, 3, 4, 0])
    assert [lay.local_size(r) for r in range(4)] == [3, 0, 5, 1]
    assert lay.owned(1) == [] and lay.owned(2) == [(3, 8)]
    assert lay.runs(2, 4, 20) == (1, 4) and lay.runs(1, 0, 9) == (0, 0)
    assert lay.pieces(1, 9) == [(0, 1, 2, 0), (2, 0, 5, 2), (3, 0, 1, 7)]
    own, loc = lay.owner(i), lay.local_index(i)
    for lo in range(10):
        for hi in range(lo, 10):
            check_pieces(lay, lo, hi, own, loc, none_when=False)
    with pytest.raises(ValueError):
        Irregular([2, -1])

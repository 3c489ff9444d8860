"""The per-case decision of `pgascol-bench verdict` and `pgascol-bench ab`:
base against new on their raw samples (pure functions, no MPI).

A case's samples are what its rounds measured: seconds per call (walltime
runs, row["samples_us"]) or instructions per call (instruction-count runs,
row["samples_instr"]). The decision has three outcomes, plus "missing":

- "regression": the new build is slower. Walltime: a one-sided
  Mann-Whitney U test (new slower than base) on the logs of the samples,
  its p-values corrected for the number of cases compared (Holm), is below
  alpha, and the estimated slowdown (Hodges-Lehmann: the median of every
  new/base ratio of one sample each) is at least half of min_effect.
  Instruction counts: the estimated increase (ratio of the medians) is at
  least half of min_effect and every new sample is above every base one.
- "ok": not a regression, and a slowdown of min_effect is ruled out.
  Walltime: the one-sided test "new below base x (1 + min_effect)" is
  significant at alpha (no correction: being wrong here means missing a
  regression of that case, at most alpha for each case that has one).
  Instruction counts: the samples vary by less than half of min_effect.
- "inconclusive": neither; the noise is too high to decide at min_effect
  (more rounds, a quieter machine or the instruction counts decide).

Half of min_effect is the decision line because min_effect is the smallest
slowdown the verdict must catch: a real slowdown of min_effect then lies on
the flagged side of it whatever the noise's sign.
"""
import math

MEASURES = ("time", "instructions")
MIN_SAMPLES = 3     # fewer samples on either side: inconclusive


def samples_of(row, measure):
    """A row's samples for `measure` (None where the row has none: written
    before raw samples were kept, or another measure). Times of an
    interleaved A/B are one per job (block_samples_us: the best of the
    job's rounds), since the rounds of one job share its scheduling (where
    its ranks run, beside what) and are not independent samples."""
    if measure == "instructions":
        got = row.get("samples_instr")
    else:
        got = row.get("block_samples_us") or row.get("samples_us")
    return [float(x) for x in got] if got else None


def holm(pvalues):
    """Holm's step-down adjusted p-values (same order as given)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def hodges_lehmann_ratio(base, new):
    """The median of new_i / base_j over every pair: the estimated factor
    by which new is slower (robust to a few disturbed rounds)."""
    logs = sorted(math.log(n) - math.log(b) for n in new for b in base)
    k = len(logs)
    mid = logs[k // 2] if k % 2 else (logs[k // 2 - 1] + logs[k // 2]) / 2
    return math.exp(mid)


def _mwu_greater(x, y):
    """One-sided Mann-Whitney U p-value of "x tends to be larger than y"."""
    from scipy.stats import mannwhitneyu
    if max(x) == min(x) == max(y) == min(y):
        return 1.0      # all equal: no evidence either way (scipy warns)
    return float(mannwhitneyu(x, y, alternative="greater").pvalue)


def test_times(base, new, min_effect):
    """The walltime test of one case: {"ratio", "p_slower", "p_bounded"}
    (p_bounded: of "new below base x (1 + min_effect)")."""
    lb = [math.log(v) for v in base]
    ln = [math.log(v) for v in new]
    bound = math.log1p(min_effect)
    return {"ratio": hodges_lehmann_ratio(base, new),
            "p_slower": _mwu_greater(ln, lb),
            "p_bounded": _mwu_greater([v + bound for v in lb], ln)}


def decide(cases, measure, min_effect, alpha=0.05):
    """Decide every case, the correction counting them all. `cases`: {key:
    (base samples or None, new samples or None)}. Returns {key:
    {"verdict", "ratio", "p_slower", "p_adjusted", "p_bounded", "spread",
    "reason"}} (p values None for instruction counts)."""
    out, tested = {}, []
    for key, (base, new) in cases.items():
        d = {"verdict": None, "ratio": None, "p_slower": None, "p_adjusted": None, "p_bounded": None,
             "spread": None, "reason": ""}
        out[key] = d
        if base is None or new is None:
            d.update(verdict="inconclusive", reason="no raw samples on the %s side (a run written "
                     "before pgascol-bench kept them)" % ("base" if base is None else "new"))
        elif min(base) <= 0 or min(new) <= 0:
            d.update(verdict="inconclusive", reason="a sample is not positive")
        elif min(len(base), len(new)) < MIN_SAMPLES:
            d.update(verdict="inconclusive", reason="fewer than %d samples on a side" % MIN_SAMPLES)
        elif measure == "instructions":
            _decide_counts(d, base, new, min_effect)
        else:
            d.update(test_times(base, new, min_effect))
            d["spread"] = max(max(s) / min(s) - 1 for s in (base, new))
            tested.append(key)
    m = len(cases)
    adjusted = holm([out[k]["p_slower"] for k in tested] + [1.0] * (m - len(tested)))
    for key, p_adj in zip(tested, adjusted):
        d = out[key]
        d["p_adjusted"] = p_adj
        if p_adj < alpha and d["ratio"] - 1 >= min_effect / 2:
            d.update(verdict="regression", reason="slower by %.1f%% (p=%.2g after correction for %d "
                     "cases)" % ((d["ratio"] - 1) * 100, p_adj, m))
        elif d["p_bounded"] < alpha:
            d.update(verdict="ok", reason="a slowdown of %g%% is ruled out (p=%.2g)"
                     % (min_effect * 100, d["p_bounded"]))
        else:
            d.update(verdict="inconclusive", reason="noise too high to decide at %g%% (rounds vary "
                     "by up to %.0f%%; p=%.2g for a slowdown, %.2g against one of %g%%)" % (
                         min_effect * 100, d["spread"] * 100, p_adj, d["p_bounded"], min_effect * 100))
    return out


def _decide_counts(d, base, new, min_effect):
    """The instruction-count rule (deterministic counts: no test)."""
    mb, mn = _median(base), _median(new)
    d["ratio"] = mn / mb
    d["spread"] = max(max(s) / min(s) - 1 for s in (base, new))
    if d["ratio"] - 1 >= min_effect / 2 and min(new) > max(base):
        d.update(verdict="regression", reason="%.2f%% more instructions per call"
                 % ((d["ratio"] - 1) * 100))
    elif d["spread"] >= min_effect / 2:
        d.update(verdict="inconclusive", reason="counts vary by %.2f%% between rounds, not below "
                 "half of %g%%" % (d["spread"] * 100, min_effect * 100))
    else:
        d.update(verdict="ok", reason="%+.2f%% instructions per call" % ((d["ratio"] - 1) * 100))


def _median(xs):
    s = sorted(xs)
    k = len(s)
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


def exit_status(verdicts):
    """0 no regression, 1 a regression, 3 inconclusive (no regression, and a
    case could not be decided)."""
    kinds = {d["verdict"] for d in verdicts}
    if "regression" in kinds:
        return 1
    if "inconclusive" in kinds:
        return 3
    return 0

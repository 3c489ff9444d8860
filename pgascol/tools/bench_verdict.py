"""`pgascol-bench verdict BASE.json NEW.json`: a regression verdict a CI
runner can trust, from two stored runs (or the two sides of `pgascol-bench
ab`), and the reports CI systems read.

    pgascol-bench verdict BASE.json NEW.json [--min-effect F] [--alpha A] [--strict]
                          [--markdown FILE] [--junit FILE] [--plot FILE.png] [--json FILE]

Each case of pgascol's (impl pgascol or pgascol-shared) present on both
sides is decided on its raw samples (bench_stats.decide); the native MPI
rows are context, never judged. Besides the per-case verdicts:

- the fingerprints (bench_fingerprint): where the machine parts differ, a
  note naming the keys; with --strict, exit 3 and no verdict;
- path changes: a case whose engine path differs between the sides is
  listed apart (a separate signal: a different path is a different
  measurement, whatever the times say);
- missing cases: listed; with --strict they make the verdict inconclusive.

Exit status: 0 no regression, 1 a regression, 2 an error (a file that
cannot be read, a bad option), 3 inconclusive (no regression, but a case
could not be decided at --min-effect, or --strict and the runs differ).
The reports: the text table on stdout, --markdown (a job summary or a
pull-request comment), --junit (one test case per benchmark case: a
regression is a failure, an inconclusive case is skipped), --plot (new
against base, one point per case), --json (the verdict itself).
"""
import json
import math
from xml.sax.saxutils import escape, quoteattr

from .bench_fingerprint import differences
from .bench_harness import OURS, BenchError, _matplotlib, human, load_doc, results_by_case
from .bench_stats import decide, exit_status, samples_of

DEFAULT_MIN_EFFECT = {"time": 0.10, "instructions": 0.01}
DEFAULT_ALPHA = 0.05


def measure_of(doc):
    return doc.get("meta", {}).get("measure") or "time"


def case_name(key):
    op, nbytes, np_, impl = key
    return "%s %s np=%d%s" % (op, human(nbytes) if nbytes else "-", np_,
                              "" if impl == "pgascol" else " " + impl)


def judge(base_doc, new_doc, min_effect=None, alpha=DEFAULT_ALPHA, strict=False, samples=None):
    """The verdict of new against base: {"measure", "min_effect", "alpha",
    "cases": [{"case", "key", "verdict", "ratio", ..., "path_base",
    "path_new"}], "missing": [(side, case)], "path_changes": [...],
    "fingerprint": [(key, base, new)], "strict_stop": bool, "status"}.
    samples: {key: (base, new)} overriding the documents' (a re-measure: only
    those cases are decided)."""
    measure = measure_of(base_doc)
    if measure_of(new_doc) != measure:
        raise BenchError("the runs measure different things: base %s, new %s"
                         % (measure, measure_of(new_doc)))
    if min_effect is None:
        min_effect = DEFAULT_MIN_EFFECT[measure]
    if not min_effect > 0 or not 0 < alpha < 1:
        raise BenchError("--min-effect must be > 0 and --alpha between 0 and 1")
    base, new = results_by_case(base_doc), results_by_case(new_doc)
    ours = lambda rows: {k for k in rows if k[3] in OURS}
    common = sorted(ours(base) & ours(new))
    if samples is not None:         # a re-measure: its cases alone, corrected for their number
        common = [k for k in common if k in samples]
    cases = {k: samples[k] if samples is not None else (samples_of(base[k], measure), samples_of(new[k], measure))
             for k in common}
    decided = decide(cases, measure, min_effect, alpha)
    rows = []
    for k in common:
        pb, pn = base[k].get("path"), new[k].get("path")
        rows.append(dict(decided[k], case=case_name(k), key=list(k), path_base=pb, path_new=pn,
                         base_median=_median(cases[k][0]), new_median=_median(cases[k][1])))
    missing = [("base", case_name(k)) for k in sorted(ours(new) - ours(base))] + \
              [("new", case_name(k)) for k in sorted(ours(base) - ours(new))]
    path_changes = [r["case"] for r in rows if r["path_base"] != r["path_new"]
                    and r["path_base"] not in (None, "-") and r["path_new"] not in (None, "-")]
    fp = differences(base_doc.get("meta", {}), new_doc.get("meta", {}))
    verdict = {"measure": measure, "min_effect": min_effect, "alpha": alpha, "cases": rows,
               "missing": missing, "path_changes": path_changes, "fingerprint": fp,
               "strict_stop": bool(strict and fp)}
    verdict["status"] = status_of(verdict, strict)
    return verdict


def status_of(verdict, strict):
    if verdict["strict_stop"]:
        return 3
    if not verdict["cases"]:
        return 3
    status = exit_status(verdict["cases"])
    if status == 0 and strict and verdict["missing"]:
        return 3
    return status


def _median(xs):
    if not xs:
        return None
    s = sorted(xs)
    k = len(s)
    return s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2


UNIT = {"time": "us", "instructions": "instr"}
STATUS_TEXT = {0: "no regression", 1: "REGRESSION", 3: "inconclusive"}


def _fmt(v):
    if v is None:
        return "-"
    return "%.0f" % v if v >= 1000 else "%.3g" % v


def _ratio_text(r):
    return "-" if r.get("ratio") is None else "%+.1f%%" % ((r["ratio"] - 1) * 100)


def summary_line(v):
    counts = {}
    for r in v["cases"]:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    parts = ["%d %s" % (counts[k], k) for k in ("regression", "inconclusive", "ok") if k in counts]
    return "%s: %s (%s, minimum effect %g%%, alpha %g)" % (
        STATUS_TEXT[v["status"]], ", ".join(parts) or "no case compared", v["measure"],
        v["min_effect"] * 100, v["alpha"])


def notes(v):
    out = []
    for key, b, n in v["fingerprint"]:
        out.append("note: fingerprint differs in %s: base %s, new %s%s" % (
            key, json.dumps(b), json.dumps(n),
            " (--strict: no verdict, exit 3)" if v["strict_stop"] else " (the figures may not be comparable)"))
    for side, case in v["missing"]:
        out.append("missing case (not in %s): %s" % (side, case))
    for case in v["path_changes"]:
        r = next(r for r in v["cases"] if r["case"] == case)
        out.append("path changed: %s: %s -> %s" % (case, r["path_base"], r["path_new"]))
    return out


def text_report(v):
    unit = UNIT[v["measure"]]
    lines = notes(v)
    lines.append("%-34s %12s %12s %8s %9s  %-12s %s" % ("case", "base " + unit, "new " + unit, "change",
                                                       "p(adj)", "verdict", "why"))
    for r in v["cases"]:
        lines.append("%-34s %12s %12s %8s %9s  %-12s %s" % (
            r["case"], _fmt(r["base_median"]), _fmt(r["new_median"]), _ratio_text(r),
            "-" if r["p_adjusted"] is None else "%.2g" % r["p_adjusted"],
            "not judged" if v["strict_stop"] else r["verdict"], r["reason"]))
    lines.append(summary_line(v))
    return "\n".join(lines)


def markdown_report(v, title="pgascol-bench verdict"):
    unit = UNIT[v["measure"]]
    icon = {"regression": ":x:", "inconclusive": ":grey_question:", "ok": ":white_check_mark:"}
    out = ["## %s" % title, "", "**%s**" % summary_line(v), ""]
    for note in notes(v):
        out.append("- %s" % note)
    if notes(v):
        out.append("")
    out += ["| case | base (median, %s) | new (median, %s) | change | verdict | why |" % (unit, unit),
            "|---|---:|---:|---:|---|---|"]
    # regressions first, then the undecided, then the rest
    order = {"regression": 0, "inconclusive": 1, "ok": 2}
    for r in sorted(v["cases"], key=lambda r: order.get(r["verdict"], 3)):
        out.append("| %s | %s | %s | %s | %s %s | %s |" % (
            r["case"], _fmt(r["base_median"]), _fmt(r["new_median"]), _ratio_text(r),
            icon.get(r["verdict"], ""), r["verdict"], r["reason"].replace("|", "/")))
    return "\n".join(out) + "\n"


def junit_report(v, suite="pgascol-bench"):
    """One <testcase> per case: a regression fails, an inconclusive case
    is skipped (with its reason), --strict with other fingerprints skips
    every case."""
    fails = sum(r["verdict"] == "regression" for r in v["cases"]) if not v["strict_stop"] else 0
    skips = len(v["cases"]) if v["strict_stop"] else sum(r["verdict"] == "inconclusive" for r in v["cases"])
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuite name=%s tests="%d" failures="%d" skipped="%d">' % (
               quoteattr(suite + " (" + v["measure"] + ")"), len(v["cases"]), fails, skips)]
    for r in v["cases"]:
        out.append('  <testcase classname=%s name=%s>' % (quoteattr(suite + "." + r["key"][0]),
                                                         quoteattr(r["case"])))
        if v["strict_stop"]:
            out.append('    <skipped message=%s/>' % quoteattr("fingerprints differ (--strict)"))
        elif r["verdict"] == "regression":
            out.append('    <failure message=%s>%s</failure>' % (quoteattr(r["reason"]), escape(
                "base median %s, new median %s" % (_fmt(r["base_median"]), _fmt(r["new_median"])))))
        elif r["verdict"] == "inconclusive":
            out.append('    <skipped message=%s/>' % quoteattr(r["reason"]))
        out.append('    <system-out>%s</system-out>' % escape(r["reason"]))
        out.append('  </testcase>')
    out.append('</testsuite>')
    return "\n".join(out) + "\n"


def plot_verdict(v, path):
    """new against base (medians, log-log), one point per case coloured by
    its verdict, with the lines of no change and of the minimum effect."""
    Figure, FigureCanvasAgg, _ = _matplotlib()
    fig = Figure(figsize=(7, 6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    colours = {"ok": "tab:green", "inconclusive": "tab:gray", "regression": "tab:red"}
    pts = [r for r in v["cases"] if r["base_median"] and r["new_median"]]
    for kind, colour in colours.items():
        mine = [r for r in pts if r["verdict"] == kind]
        if mine:
            ax.scatter([r["base_median"] for r in mine], [r["new_median"] for r in mine], s=16,
                       color=colour, label="%s (%d)" % (kind, len(mine)))
    if pts:
        lo = min(min(r["base_median"], r["new_median"]) for r in pts) / 1.5
        hi = max(max(r["base_median"], r["new_median"]) for r in pts) * 1.5
        ax.plot([lo, hi], [lo, hi], "-", color="black", linewidth=0.8, label="no change")
        ax.plot([lo, hi], [lo * (1 + v["min_effect"]), hi * (1 + v["min_effect"])], "--",
                color="tab:red", linewidth=0.8, label="+%g%%" % (v["min_effect"] * 100))
        for r in pts:
            if r["verdict"] == "regression":
                ax.annotate(r["case"], (r["base_median"], r["new_median"]), fontsize=6)
    ax.set_xscale("log")
    ax.set_yscale("log")
    unit = "us per call" if v["measure"] == "time" else "instructions per call"
    ax.set_xlabel("base (median, %s)" % unit)
    ax.set_ylabel("new (median, %s)" % unit)
    ax.set_title(summary_line(v), fontsize=8, loc="left", wrap=True)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    try:
        fig.savefig(path, format="png")
    except OSError as e:
        raise BenchError("cannot write %s: %s" % (path, e)) from None
    return path


def write_reports(v, args, title="pgascol-bench verdict"):
    """Print the table; write --markdown, --junit, --plot, --json."""
    print(text_report(v))
    for attr, make in (("markdown", lambda: markdown_report(v, title)), ("junit", lambda: junit_report(v)),
                       ("verdict_json", lambda: json.dumps(_jsonable(v), indent=1) + "\n")):
        path = getattr(args, attr, None)
        if path:
            try:
                with open(path, "w") as f:
                    f.write(make())
            except OSError as e:
                raise BenchError("cannot write %s: %s" % (path, e)) from None
            print("# wrote %s" % path)
    if getattr(args, "plot", None):
        print("# wrote %s" % plot_verdict(v, args.plot))


def _jsonable(v):
    out = dict(v)
    out["cases"] = [{k: (None if isinstance(x, float) and math.isnan(x) else x) for k, x in r.items()}
                    for r in v["cases"]]
    return out


def add_verdict_options(p, defaults_note=True):
    p.add_argument("--min-effect", type=float, metavar="F",
                   help="the smallest slowdown to catch, as a fraction (default 0.10 for times, "
                        "0.01 for instruction counts); a case is flagged when it is significantly "
                        "slower by at least half of it")
    p.add_argument("--alpha", type=float, default=DEFAULT_ALPHA,
                   help="significance level, corrected for the number of cases (default 0.05)")
    p.add_argument("--strict", action="store_true",
                   help="different fingerprints or a missing case: exit 3 instead of a verdict")
    p.add_argument("--markdown", metavar="FILE", help="write a Markdown summary")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML, one test case per benchmark case")
    p.add_argument("--plot", metavar="FILE.png", help="plot new against base (needs matplotlib)")
    p.add_argument("--verdict-json", metavar="FILE", help="write the verdict as JSON")


def add_parser(sub):
    p = sub.add_parser("verdict", help="decide base against new on their raw samples; exit 0 no "
                                        "regression, 1 regression, 2 error, 3 inconclusive")
    p.add_argument("base", metavar="BASE.json")
    p.add_argument("new", metavar="NEW.json")
    add_verdict_options(p)
    return p


def cmd_verdict(args):
    if args.plot:
        _matplotlib()
    v = judge(load_doc(args.base), load_doc(args.new), args.min_effect, args.alpha, args.strict)
    write_reports(v, args)
    return v["status"]

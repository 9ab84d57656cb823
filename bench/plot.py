#!/usr/bin/python3
"""Draws the summary of bench/bench.mjs into one PNG.

    /usr/bin/python3 bench/plot.py [SUMMARY] [OUT.png]

SUMMARY: a file holding the summary JSON (as --json-out writes it) or the
bench's output (its last "BENCH_JSON {...}" line is read); "-" or none reads
standard input. OUT.png defaults to bench.png next to this script. Runs with
Debian's /usr/bin/python3 and its matplotlib (python3-matplotlib), Agg backend.

Panels, each drawn when the summary has its data:
  (a) p50 and p99 latency of print(1) against the calls in flight, stdio and
      streamable HTTP;
  (b) calls/s against the calls in flight;
  (c) the speed-up of mcp-exec over the reference (a fresh /usr/bin/python3
      per call), reference p50 / mcp-exec p50 per snippet, log scale, each bar
      labelled with both p50s; sessions against the reference doing the same
      work.
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

TRANSPORTS = {"stdio": ("tab:blue", "o"), "http": ("tab:orange", "s")}


def read_summary(arg):
    if arg in (None, "-"):
        text = sys.stdin.read()
    else:
        with open(arg, encoding="utf-8") as f:
            text = f.read()
    stripped = text.strip()
    if stripped.startswith("{"):
        return json.loads(stripped)
    for line in reversed(text.splitlines()):
        if line.startswith("BENCH_JSON "):
            return json.loads(line[len("BENCH_JSON "):])
    sys.exit(f"plot.py: no summary JSON (nor a BENCH_JSON line) in {arg or 'stdin'}")


def title(summary):
    m = summary.get("machine") or {}
    server = summary.get("server") or {}
    date = (summary.get("date") or "")[:16].replace("T", " ")
    first = f"mcp-exec {server.get('version', '?')} benchmark"
    if summary.get("quick"):
        first += " (--quick: tiny counts, not a measurement)"
    second = ", ".join(
        x
        for x in (
            f"{m['cpus']} CPUs ({m['cpu_model']})" if m.get("cpus") else None,
            f"{m.get('os', 'Linux')} {m['kernel']}" if m.get("kernel") else None,
            f"{m['mem_gib']} GiB" if m.get("mem_gib") else None,
            f"{date} UTC" if date else None,
        )
        if x
    )
    return first + "\n" + second


def by_transport(rows):
    out = {}
    for r in rows:
        out.setdefault(r["transport"], []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r["in_flight"])
    return out


def in_flight_axis(ax, levels):
    ax.set_xscale("log", base=2)
    ax.set_xticks(levels)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(min(levels) / 1.3, max(levels) * 1.3)
    ax.set_xlabel("calls in flight on one connection")
    ax.grid(True, which="major", alpha=0.3)


def mark_slots(ax, conc):
    slots = {s.get("max_concurrent") for s in (conc.get("servers") or {}).values()}
    slots.discard(None)
    if len(slots) == 1:
        k = slots.pop()
        ax.axvline(k, color="grey", linestyle=":", linewidth=1)
        ax.annotate(
            f" max_concurrent = {k}",
            xy=(k, 1),
            xycoords=("data", "axes fraction"),
            va="top",
            ha="left",
            fontsize=8,
            color="grey",
        )


def latency_panel(ax, conc):
    groups = by_transport(conc["rows"])
    for transport, rs in groups.items():
        color, marker = TRANSPORTS.get(transport, ("tab:green", "^"))
        x = [r["in_flight"] for r in rs]
        ax.plot(x, [r["p50_ms"] for r in rs], color=color, marker=marker, label=f"{transport} p50")
        ax.plot(
            x,
            [r["p99_ms"] for r in rs],
            color=color,
            marker=marker,
            linestyle="--",
            markerfacecolor="white",
            label=f"{transport} p99",
        )
    in_flight_axis(ax, conc["levels"])
    ax.set_ylim(bottom=0)
    ax.set_ylabel("latency per call, ms (client side)")
    ax.set_title("(a) print(1) latency against concurrency")
    mark_slots(ax, conc)
    ax.legend(fontsize=8, loc="upper left")


def throughput_panel(ax, conc):
    groups = by_transport(conc["rows"])
    for transport, rs in groups.items():
        color, marker = TRANSPORTS.get(transport, ("tab:green", "^"))
        x = [r["in_flight"] for r in rs]
        y = [r["calls_per_s"] for r in rs]
        ax.plot(x, y, color=color, marker=marker, label=transport)
        below = transport == "http"
        for xi, yi in zip(x, y):
            ax.annotate(
                f"{yi:.0f}",
                (xi, yi),
                textcoords="offset points",
                xytext=(0, -12 if below else 6),
                ha="center",
                fontsize=8,
                color=color,
            )
    in_flight_axis(ax, conc["levels"])
    ax.set_ylim(bottom=0, top=max(r["calls_per_s"] for r in conc["rows"]) * 1.15)
    ax.set_ylabel("calls/s")
    calls, secs = conc["calls_per_level"], conc["max_s_per_level"]
    ax.set_title(f"(b) print(1) throughput (\u2264 {calls} calls / \u2264 {secs} s per level)")
    mark_slots(ax, conc)
    ax.legend(fontsize=8, loc="lower right")


def speedup_bars(summary):
    """[(label, speed-up, note, kind)]: one-shot snippets, then sessions."""
    rows = summary.get("rows") or []
    p50 = {(r["snippet"], r["side"]): r["p50_ms"] for r in rows}
    bars = []
    for snippet, ratio in (summary.get("ratio_ref_p50_over_mcp_p50") or {}).items():
        mcp, ref = p50.get((snippet, "mcp-exec")), p50.get((snippet, "reference"))
        if mcp is None or ref is None:
            continue
        bars.append((snippet, ref / mcp, f"{mcp:.1f} ms vs. {ref:.1f} ms", "one-shot"))
    for s in summary.get("sessions") or []:
        bars.append(
            (
                f"{s['snippet']} (ref.: {s['one_shot']})",
                s["reference_p50_ms"] / s["p50_ms"],
                f"{s['p50_ms']:.1f} ms vs. {s['reference_p50_ms']:.1f} ms",
                "session",
            )
        )
    return bars


def speedup_panel(ax, summary, bars):
    colors = {"one-shot": "tab:blue", "session": "tab:green"}
    labels = [b[0] for b in bars]
    values = [b[1] for b in bars]
    y = list(range(len(bars)))
    ax.barh(y, values, color=[colors[b[3]] for b in bars], height=0.6)
    ax.set_yticks(y)
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo = min(min(values), 1) / 1.5
    hi = max(values) * 4
    ax.set_xlim(lo, hi)
    ax.axvline(1, color="black", linewidth=0.8)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}x"))
    for yi, (_, v, note, _) in zip(y, bars):
        ax.annotate(
            f" {v:.1f}x  ({note})",
            (v, yi),
            va="center",
            ha="left",
            fontsize=8,
        )
    ax.grid(True, axis="x", which="major", alpha=0.3)
    n = summary.get("n") or {}
    ax.set_xlabel(
        "speed-up: reference p50 / mcp-exec p50 (log scale); "
        "labels: mcp-exec p50 vs. reference p50"
    )
    ax.set_title(
        f"(c) mcp-exec over stdio against a fresh {summary.get('reference', 'python3')} per call "
        f"({n.get('mcp-exec', '?')} / {n.get('reference', '?')} sequential calls per snippet)"
    )
    kinds = sorted({b[3] for b in bars})
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[k]) for k in kinds]
    names = {"one-shot": "one-shot run", "session": "call into a live session"}
    ax.legend(handles, [names[k] for k in kinds], fontsize=8, loc="upper right")


def main(argv):
    if len(argv) > 3:
        sys.exit(__doc__)
    summary = read_summary(argv[1] if len(argv) > 1 else None)
    out = argv[2] if len(argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench.png")
    conc = summary.get("concurrency")
    has_conc = bool(conc and conc.get("rows"))
    bars = speedup_bars(summary)
    if not has_conc and not bars:
        sys.exit("plot.py: the summary has neither concurrency rows nor snippet ratios to draw")

    if has_conc and bars:
        fig = plt.figure(figsize=(13, 10.5), layout="constrained")
        grid = fig.add_gridspec(2, 2, height_ratios=[1, 0.35 + 0.09 * len(bars)])
        latency_panel(fig.add_subplot(grid[0, 0]), conc)
        throughput_panel(fig.add_subplot(grid[0, 1]), conc)
        speedup_panel(fig.add_subplot(grid[1, :]), summary, bars)
    elif has_conc:
        fig, (a, b) = plt.subplots(1, 2, figsize=(13, 5.5), layout="constrained")
        latency_panel(a, conc)
        throughput_panel(b, conc)
    else:
        fig, ax = plt.subplots(figsize=(13, 1.8 + 0.45 * len(bars)), layout="constrained")
        speedup_panel(ax, summary, bars)
    fig.suptitle(title(summary), fontsize=12)
    fig.savefig(out, dpi=110)
    print(out)


if __name__ == "__main__":
    main(sys.argv)

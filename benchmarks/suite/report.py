"""The suite's results: medians over rounds, the ratios that matter, the Markdown and JSON files and
the PNG plots (throughput bars, latency percentile curves)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

MAGNETAR = "magnetar + magnetar.client"
MAGNETAR_OFFICIAL = "magnetar + official client"
PULSAR_OFFICIAL = "Apache Pulsar + official client"
PERCENTILES = [("p50", "50"), ("p95", "95"), ("p99", "99"), ("p99_9", "99.9"), ("p99_99", "99.99"), ("max", "max")]
#: the throughput scenarios that the ratio table compares
#: the broker figures of every measurement (probe.py), medians over the rounds
BROKER_FIGURES = ["broker_cpu_s_per_million", "broker_rss_mb_peak", "broker_rss_mb_end", "broker_cpu_system_share",
                  "entries_per_million", "broker_cpu_us_per_entry"]
PULSAR_LITE_OFFICIAL = "pulsar-lite + official client"
PULSAR_LITE_MAGNETAR = "pulsar-lite + magnetar.client"
#: the broker cost scenarios and issue 27's goal for magnetar's CPU against pulsar-lite's
COST_GOALS = {"cost-100": 1.0, "cost-1024": 1.0, "cost-100-unbatched": 3.0}
RATIO_KEYS = ["produce-100", "produce-1024", "consume-100", "consume-1024", "fanout", "topics-100", "catch-up", "sync"]


def error_reason(error: str) -> str:
    """The line of a worker's error that says what went wrong: the exit status and the last line of
    its stderr (the exception's message), not the traceback above it."""
    head, _, tail = error.partition(": ")
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return f"{head}: {lines[-1]}" if lines else error


def brief(result: dict[str, Any]) -> str:
    """One line for the progress log."""
    if "error" in result:
        return f"ERROR {error_reason(result['error'])[:200]}"
    text = f"{result.get('msg_per_s', 0):>12,.0f} msg/s"
    if result.get("broker_cpu_s_per_million") is not None:
        text += f"  broker {result['broker_cpu_s_per_million']:.2f} CPU s/M"
    if result.get("broker_cpu_us_per_entry") is not None:
        text += f"  {result['entries_per_million']:,.0f} entries/M, {result['broker_cpu_us_per_entry']:.1f} CPU us/entry"
    if "latency_ms" in result:
        lat = result["latency_ms"]
        text += f"  p50 {lat['p50']:.2f} p99 {lat['p99']:.2f} p99.9 {lat['p99_9']:.2f} max {lat['max']:.2f} ms"
    return text


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(results: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per scenario and system: the median msg/s over the rounds without errors, every round's
    msg/s, and the median of each latency percentile."""
    summary: dict[str, dict[str, dict[str, Any]]] = {}
    for key, by_system in results.items():
        summary[key] = {}
        for label, rounds in by_system.items():
            ok = [r for r in rounds if "error" not in r]
            entry: dict[str, Any] = {"msg_per_s": _median([r["msg_per_s"] for r in ok]),
                                     "rounds_msg_per_s": [r.get("msg_per_s") for r in ok],
                                     "errors": [r["error"] for r in rounds if "error" in r]}
            for name in BROKER_FIGURES:
                # memory from every round (a refused one used it too), CPU only from those that counted
                of = rounds if name.startswith("broker_rss") else ok
                entry[name] = _median([r[name] for r in of if r.get(name) is not None])
            entry["load_average"] = [r["load_average"] for r in rounds if "load_average" in r]
            lats = [r["latency_ms"] for r in ok if r.get("latency_ms", {}).get("count")]
            if lats:
                entry["latency_ms"] = {name: _median([lat[name] for lat in lats]) for name, _ in PERCENTILES}
            summary[key][label] = entry
    return summary


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def ratios(summary: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """magnetar (its client) against the best other pair, and magnetar against Apache Pulsar with the
    official client, per throughput scenario."""
    rows = []
    for key in RATIO_KEYS:
        by_system = summary.get(key)
        if not by_system:
            continue
        peers = {label: e["msg_per_s"] for label, e in by_system.items()
                 if not label.startswith("magnetar") and e["msg_per_s"]}
        best = max(peers, key=lambda label: peers[label]) if peers else None
        mag = (by_system.get(MAGNETAR) or {}).get("msg_per_s")
        mag_official = (by_system.get(MAGNETAR_OFFICIAL) or {}).get("msg_per_s")
        pulsar = (by_system.get(PULSAR_OFFICIAL) or {}).get("msg_per_s")
        rows.append({"scenario": key, "magnetar": mag, "best_peer": best, "best_peer_msg_per_s": peers.get(best),
                     "magnetar_vs_best_peer": _ratio(mag, peers.get(best)),
                     "magnetar_official": mag_official, "pulsar_official": pulsar,
                     "magnetar_official_vs_pulsar": _ratio(mag_official, pulsar)})
    return rows


def _figure(summary: dict[str, Any], key: str, label: str, name: str) -> float | None:
    return ((summary.get(key) or {}).get(label) or {}).get(name)


def cost_ratios(summary: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per cost scenario: the broker's CPU seconds per million messages (produced + received +
    acknowledged) for magnetar, pulsar-lite and Apache Pulsar under one client, and magnetar's ratios."""
    rows = []
    for key, goal in COST_GOALS.items():
        if key not in summary:
            continue
        labels = (MAGNETAR_OFFICIAL, PULSAR_LITE_OFFICIAL, PULSAR_OFFICIAL, MAGNETAR, PULSAR_LITE_MAGNETAR)
        cpu = {label: _figure(summary, key, label, "broker_cpu_s_per_million") for label in labels}
        per_entry = {label: _figure(summary, key, label, "broker_cpu_us_per_entry") for label in labels}
        entries = {label: _figure(summary, key, label, "entries_per_million") for label in labels}
        rows.append({"scenario": key, "goal_vs_pulsar_lite": goal, "cpu_s_per_million": cpu,
                     "cpu_us_per_entry": per_entry, "entries_per_million": entries,
                     "official_vs_pulsar_lite_per_entry": _ratio(per_entry[MAGNETAR_OFFICIAL],
                                                                 per_entry[PULSAR_LITE_OFFICIAL]),
                     "magnetar_client_vs_pulsar_lite_per_entry": _ratio(per_entry[MAGNETAR],
                                                                        per_entry[PULSAR_LITE_MAGNETAR]),
                     "magnetar_system_share": _figure(summary, key, MAGNETAR_OFFICIAL, "broker_cpu_system_share"),
                     "official_vs_pulsar_lite": _ratio(cpu[MAGNETAR_OFFICIAL], cpu[PULSAR_LITE_OFFICIAL]),
                     "official_vs_pulsar": _ratio(cpu[MAGNETAR_OFFICIAL], cpu[PULSAR_OFFICIAL]),
                     "magnetar_client_vs_pulsar_lite": _ratio(cpu[MAGNETAR], cpu[PULSAR_LITE_MAGNETAR])})
    return rows


def memory_rows(doc: dict[str, Any], summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per scenario: each Pulsar broker's peak and end resident memory (the highest over its clients),
    and magnetar's peak against pulsar-lite's."""
    peers = {"magnetar": "magnetar", "pulsar-lite": "pulsar-lite", "apache-pulsar": "Apache Pulsar"}
    rows = []
    for scenario in doc["scenarios"]:
        key = scenario["key"]
        row: dict[str, Any] = {"scenario": key}
        for peer in peers:
            labels = [s["label"] for s in doc["systems"] if s["peer"] == peer]
            for name in ("broker_rss_mb_peak", "broker_rss_mb_end"):
                values = [v for v in (_figure(summary, key, label, name) for label in labels) if v is not None]
                row[f"{peer}:{name}"] = max(values) if values else None
        row["magnetar_vs_pulsar_lite_peak"] = _ratio(row["magnetar:broker_rss_mb_peak"],
                                                     row["pulsar-lite:broker_rss_mb_peak"])
        rows.append(row)
    return rows


def _fmt(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def _ratio_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | magnetar + magnetar.client | best other pair | ratio | magnetar + official | "
             "Apache Pulsar + official | ratio |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        best = f"{_fmt(r['best_peer_msg_per_s'])} ({r['best_peer']})" if r["best_peer"] else "–"
        lines.append(f"| {r['scenario']} | {_fmt(r['magnetar'])} | {best} | **{_fmt(r['magnetar_vs_best_peer'], 2)}x** "
                     f"| {_fmt(r['magnetar_official'])} | {_fmt(r['pulsar_official'])} | "
                     f"**{_fmt(r['magnetar_official_vs_pulsar'], 2)}x** |")
    return lines


def _cost_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | magnetar + official | pulsar-lite + official | Apache Pulsar + official | "
             "magnetar / pulsar-lite (goal) | magnetar / Apache Pulsar (goal < 1) | magnetar + magnetar.client | "
             "pulsar-lite + magnetar.client | ratio | magnetar's system (kernel) share |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cpu = r["cpu_s_per_million"]
        lines.append(f"| {r['scenario']} | {_fmt(cpu[MAGNETAR_OFFICIAL], 2)} | {_fmt(cpu[PULSAR_LITE_OFFICIAL], 2)} | "
                     f"{_fmt(cpu[PULSAR_OFFICIAL], 2)} | **{_fmt(r['official_vs_pulsar_lite'], 2)}x** "
                     f"(≤ {r['goal_vs_pulsar_lite']:.0f}x) | **{_fmt(r['official_vs_pulsar'], 2)}x** | "
                     f"{_fmt(cpu[MAGNETAR], 2)} | {_fmt(cpu[PULSAR_LITE_MAGNETAR], 2)} | "
                     f"**{_fmt(r['magnetar_client_vs_pulsar_lite'], 2)}x** | {_fmt(r['magnetar_system_share'], 2)} |")
    return lines


def _entry_table(rows: list[dict[str, Any]]) -> list[str]:
    labels = (MAGNETAR_OFFICIAL, PULSAR_LITE_OFFICIAL, PULSAR_OFFICIAL, MAGNETAR, PULSAR_LITE_MAGNETAR)
    lines = ["| scenario | " + " | ".join(labels) + " | magnetar / pulsar-lite per entry, official | "
             "magnetar / pulsar-lite per entry, magnetar.client |", "|---|" + "---|" * (len(labels) + 2)]
    for r in rows:
        cells = [f"{_fmt(r['entries_per_million'][label])} / {_fmt(r['cpu_us_per_entry'][label], 1)}" for label in labels]
        lines.append(f"| {r['scenario']} | " + " | ".join(cells) + f" | **{_fmt(r['official_vs_pulsar_lite_per_entry'], 2)}x**"
                     f" | **{_fmt(r['magnetar_client_vs_pulsar_lite_per_entry'], 2)}x** |")
    return lines


def _memory_table(rows: list[dict[str, Any]]) -> list[str]:
    lines = ["| scenario | magnetar peak / end | pulsar-lite peak / end | Apache Pulsar peak / end | "
             "magnetar / pulsar-lite peak (goal < 2) |", "|---|---|---|---|---|"]
    for r in rows:
        cells = [f"{_fmt(r[f'{peer}:broker_rss_mb_peak'], 1)} / {_fmt(r[f'{peer}:broker_rss_mb_end'], 1)}"
                 for peer in ("magnetar", "pulsar-lite", "apache-pulsar")]
        lines.append(f"| {r['scenario']} | " + " | ".join(cells) + f" | **{_fmt(r['magnetar_vs_pulsar_lite_peak'], 2)}x** |")
    return lines


def load_range(summary: dict[str, Any]) -> tuple[float, float] | None:
    """The lowest and highest 1-minute load average seen at the start or end of a measurement."""
    values = [x for by in summary.values() for e in by.values() for pair in e.get("load_average", []) for x in pair]
    return (min(values), max(values)) if values else None


def _throughput_table(doc: dict[str, Any], summary: dict[str, Any], keys: list[str], figure: str = "msg_per_s",
                      digits: int = 0) -> list[str]:
    lines = ["| system | durability | " + " | ".join(keys) + " |", "|---|---|" + "---|" * len(keys)]
    for s in doc["systems"]:
        durability = doc["peers"].get(s["peer"], {}).get("durability", "")
        cells = []
        for key in keys:
            entry = summary.get(key, {}).get(s["label"], {})
            cell = _fmt(entry.get(figure), digits)
            if entry.get("errors"):
                cell += " (error)"
            cells.append(cell)
        lines.append(f"| {s['label']} | {durability.split(' (')[0]} | " + " | ".join(cells) + " |")
    return lines


def _latency_table(doc: dict[str, Any], summary: dict[str, Any], key: str) -> list[str]:
    lines = ["| system | achieved msg/s | p50 | p95 | p99 | p99.9 | p99.99 | max |", "|---|---|---|---|---|---|---|---|"]
    for s in doc["systems"]:
        entry = summary.get(key, {}).get(s["label"], {})
        lat = entry.get("latency_ms")
        if lat is None:
            lines.append(f"| {s['label']} | {'error' if entry.get('errors') else '–'} |" + " – |" * 6)
            continue
        lines.append(f"| {s['label']} | {_fmt(entry['msg_per_s'])} | "
                     + " | ".join(f"{lat[name]:.2f}" for name, _ in PERCENTILES) + " |")
    return lines


def _cost_section(doc: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    rows = cost_ratios(summary)
    load = load_range(summary)
    out = ["## The broker's own cost", "",
           "CPU seconds of the broker process (user + system, all threads, from /proc/PID/stat) per million "
           "messages produced, received and acknowledged (lower is better). CPU seconds, not wall time: the "
           "machine is shared, and a broker kept off the CPU by other work spends the same CPU seconds on the "
           "same messages. " + (f"Load average (1 min) during the measurements: {load[0]:.1f} to {load[1]:.1f}."
                                if load else ""), ""]
    if rows:
        out += _cost_table(rows) + [""]
        out += ["Entries (batches) per million messages as the consumer received them, and the broker's CPU "
                "microseconds per entry (each cell: entries per million / CPU µs per entry): a ratio per message that moved because the producer "
                "packed fewer messages per entry (a loaded machine's official producer does) shows here as more "
                "entries, not as a dearer broker.", ""]
        out += _entry_table(rows) + [""]
    out += ["Resident memory of the broker (MB, VmRSS sampled every 50 ms during each measurement: the peak, "
            "and the value at its end; the highest over the clients run against that broker).", ""]
    return out + _memory_table(memory_rows(doc, summary)) + [""]


def markdown(doc: dict[str, Any], summary: dict[str, Any], ratio_rows: list[dict[str, Any]]) -> str:
    """The results file."""
    out = [f"# Peer suite results ({doc['mode']} run, {doc['date_utc']} UTC)", "",
           f"`{doc['command']}`: {doc['rounds']} round(s), {doc['duration_s']:.0f} s. {doc['note']}. "
           "Figures are medians over the rounds; each measurement ran in its own process.", ""]
    if doc["machine"].get("servers_pinned_to_cpus"):
        out += [f"Every server was pinned to CPU(s) {doc['machine']['servers_pinned_to_cpus']} (taskset, all threads): "
                "an edge box; the clients were not.", ""]
    out += _cost_section(doc, summary)
    out += ["## The ratios that matter", "",
           "Throughput in msg/s (for `sync`: one-at-a-time durable sends per second). magnetar's own client "
           "against the best pair among the others, and both brokers with the official client.", ""]
    out += _ratio_table(ratio_rows)
    sync = (summary.get("sync") or {})
    fsync = doc["machine"].get("fsync_per_s_before_and_after") or []
    if fsync and sync:
        disk = statistics.median(fsync)
        out += ["", f"One-at-a-time durable sends against this disk's fsync rate ({disk:,.0f} appends + fsync per s, "
                "measured before and after the rounds): "
                + "; ".join(f"{label} {_fmt(e['msg_per_s'])}/s = {_fmt(_ratio(e['msg_per_s'], disk), 2)}x"
                            for label, e in sync.items() if e["msg_per_s"]) + "."]
    out += ["", "## Start-up and memory", "", "| peer | version | durability | start-up to port open, s | "
            "RSS idle, MB | RSS at the end, MB |", "|---|---|---|---|---|---|"]
    for name, peer in doc["peers"].items():
        out.append(f"| {name} | {peer.get('version', '?')} | {peer['durability']} | {_fmt(peer.get('startup_s'), 2)} | "
                   f"{_fmt(peer.get('rss_mb_idle'), 1)} | {_fmt(peer.get('rss_mb_end'), 1)} |")
    throughput_keys = [s["key"] for s in doc["scenarios"] if s["kind"] == "throughput"]
    titles = {s["key"]: s["title"] for s in doc["scenarios"]}
    out += ["", "## Throughput (msg/s)", ""]
    out += [f"- `{key}`: {titles[key]}" for key in throughput_keys] + [""]
    out += _throughput_table(doc, summary, throughput_keys)
    measured = [s["key"] for s in doc["scenarios"] if s["kind"] in ("throughput", "cost")]
    out += ["", "## The broker's CPU seconds per million messages of each scenario", "",
            "A consume scenario's figure includes its fill (the messages were produced, then consumed and "
            "acknowledged); a fan-out's is per delivery.", ""]
    out += _throughput_table(doc, summary, measured, "broker_cpu_s_per_million", 2)
    out += ["", "## The broker's peak resident memory in each scenario (MB)", ""]
    out += _throughput_table(doc, summary, [s["key"] for s in doc["scenarios"]], "broker_rss_mb_peak", 1)
    for scenario in doc["scenarios"]:
        if scenario["kind"] == "latency":
            out += ["", f"## {scenario['title']} (ms)", ""] + _latency_table(doc, summary, scenario["key"])
    out += ["", "## Machine, versions, notes", "", f"- machine: `{json.dumps(doc['machine'])}`",
            f"- clients: `{json.dumps(doc['client_versions'])}`"]
    out += [f"- {name}: {note}" for name, note in doc["notes"].items()]
    out += [f"- {name} started with: `{peer['command']}`" for name, peer in doc["peers"].items()]
    errors = [(key, label, e) for key, by in summary.items() for label, entry in by.items() for e in entry["errors"]]
    if errors:
        out += ["", "## Errors", ""] + [f"- {key} / {label}: {error_reason(e)[:300]}" for key, label, e in errors]
    return "\n".join(out) + "\n"


def plots(doc: dict[str, Any], summary: dict[str, Any], output: Path) -> list[Path]:
    """suite-throughput.png (bars) and suite-latency.png (percentile curves)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [s["label"] for s in doc["systems"]]
    keys = [s["key"] for s in doc["scenarios"] if s["kind"] == "throughput"]
    written = []
    if keys:
        fig, ax = plt.subplots(figsize=(max(10, 1.6 * len(keys)), 6))
        width = 0.8 / max(1, len(labels))
        for i, label in enumerate(labels):
            values = [(summary.get(k, {}).get(label, {}).get("msg_per_s") or 0) / 1000 for k in keys]
            ax.bar([x + i * width for x in range(len(keys))], values, width, label=label)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))], keys)
        ax.set_ylabel("thousand msg/s (median of rounds)")
        ax.set_title("Throughput, side by side (higher is better)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        written.append(output / "suite-throughput.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    latency_keys = [s["key"] for s in doc["scenarios"] if s["kind"] == "latency"]
    if latency_keys:
        cols = min(3, len(latency_keys))
        rows = (len(latency_keys) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), squeeze=False)
        titles = {s["key"]: s["title"] for s in doc["scenarios"]}
        for ax, key in zip(axes.flat, latency_keys, strict=False):
            for label in labels:
                lat = summary.get(key, {}).get(label, {}).get("latency_ms")
                if lat:
                    ax.plot([p for _, p in PERCENTILES], [max(lat[n], 0.001) for n, _ in PERCENTILES], marker="o",
                            label=label)
            ax.set_yscale("log")
            ax.set_title(titles[key], fontsize=9)
            ax.set_xlabel("percentile")
            ax.set_ylabel("ms (log)")
        axes.flat[0].legend(fontsize=6)
        for ax in list(axes.flat)[len(latency_keys):]:
            ax.axis("off")
        fig.tight_layout()
        written.append(output / "suite-latency.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    return written


def write(doc: dict[str, Any], output: Path) -> None:
    """suite.json, suite.md and the plots in ``output``; the ratios, then the tables, on stdout."""
    output.mkdir(parents=True, exist_ok=True)
    summary = summarise(doc["results"])
    ratio_rows = ratios(summary)
    doc = {**doc, "summary": summary, "ratios": ratio_rows, "cost_ratios": cost_ratios(summary),
           "memory": memory_rows(doc, summary)}
    (output / "suite.json").write_text(json.dumps(doc, indent=1) + "\n")
    text = markdown(doc, summary, ratio_rows)
    (output / "suite.md").write_text(text)
    try:
        pngs = plots(doc, summary, output)
    except ImportError:
        pngs = []
        text += "\n(no plots: matplotlib is not installed; pip install -e '.[bench]')\n"
    print(text)
    print(f"wrote {output / 'suite.md'}, {output / 'suite.json'}" + "".join(f", {p}" for p in pngs))

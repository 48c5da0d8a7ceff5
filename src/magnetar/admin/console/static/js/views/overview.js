// Overview: the broker at a glance, with live charts: the last ten minutes the broker kept
// (/magnetar/v1/history), then samples of /metrics while the console is open.
import { get, metricSum, parseMetrics, poll } from "../api.js";
import { bytes, card, duration, h, human, replace } from "../dom.js";
import { LiveChart, SeriesBuffer } from "../charts.js";

const POLL_MS = 3000;
const rates = new SeriesBuffer(["in msg/s", "out msg/s"]);
const throughput = new SeriesBuffer(["in KiB/s", "out KiB/s"]);
const fsync = new SeriesBuffer(["fsync round ms"]);
const connections = new SeriesBuffer(["connections"]);
let latest = null;
let previous = null;
const listeners = new Set();

function summarize(metrics) {
  return {
    rateIn: metricSum(metrics, "pulsar_rate_in"),
    rateOut: metricSum(metrics, "pulsar_rate_out"),
    throughputIn: metricSum(metrics, "pulsar_throughput_in"),
    throughputOut: metricSum(metrics, "pulsar_throughput_out"),
    storage: metricSum(metrics, "pulsar_storage_size"),
    backlog: metricSum(metrics, "pulsar_msg_backlog"),
    topics: (metrics.pulsar_storage_size || []).length,
    loaded: metricSum(metrics, "magnetar_topics_loaded"),
    connections: metricSum(metrics, "magnetar_connections"),
    memory: metricSum(metrics, "magnetar_process_resident_memory_bytes"),
    fsyncSum: metricSum(metrics, "magnetar_fsync_round_seconds_sum"),
    fsyncCount: metricSum(metrics, "magnetar_fsync_round_seconds_count"),
  };
}

async function sample() {
  if (document.hidden) return;
  try {
    const metrics = parseMetrics(await poll("/metrics"));
    const now = summarize(metrics);
    const rounds = previous ? now.fsyncCount - previous.fsyncCount : 0;
    now.fsyncMs = rounds > 0 ? ((now.fsyncSum - previous.fsyncSum) / rounds) * 1000 : (latest ? latest.fsyncMs : 0);
    previous = now;
    latest = now;
    rates.add([now.rateIn, now.rateOut]);
    throughput.add([now.throughputIn / 1024, now.throughputOut / 1024]);
    fsync.add([now.fsyncMs]);
    connections.add([now.connections]);
    for (const fn of listeners) fn(now);
  } catch { /* the broker may be restarting or refuse: keep the last samples */ }
}

/** Seed the charts with the broker's history, then sample /metrics every few seconds for as long
 * as the console is open. */
export async function startBrokerSampling() {
  try {
    const history = await poll("/magnetar/v1/history");
    rates.seed(history, ["rateIn", "rateOut"]);
    throughput.seed({ ...history, throughputIn: history.throughputIn.map((v) => v / 1024),
      throughputOut: history.throughputOut.map((v) => v / 1024) }, ["throughputIn", "throughputOut"]);
    fsync.seed(history, ["fsyncMs"]);
    connections.seed(history, ["connections"]);
  } catch { /* an older broker, or refused: the charts start with the page */ }
  sample();
  setInterval(sample, POLL_MS);
}

/** The overview page. */
export async function overviewView() {
  const [info, health] = await Promise.all([get("/magnetar/v1/broker"), get("/admin/v2/brokers/health").catch((e) => `unavailable (${e.status})`)]);
  const cards = h("div", { class: "cards", id: "overview-cards" });
  const charts = [
    new LiveChart("Messages per second", rates, "msg/s"),
    new LiveChart("Throughput", throughput, "KiB/s"),
    new LiveChart("Fsync round latency", fsync, "ms"),
    new LiveChart("Connections", connections, ""),
  ];
  const started = Date.now() / 1000 - info.uptimeSeconds;
  const draw = (now) => {
    replace(cards,
      card("Version", info.version),
      card("Uptime", duration(Date.now() / 1000 - started)),
      card("Health", health),
      card("Connections", now ? human(now.connections) : "–"),
      card("Rate in", now ? `${human(now.rateIn)} msg/s` : "–"),
      card("Rate out", now ? `${human(now.rateOut)} msg/s` : "–"),
      card("Throughput in", now ? `${bytes(now.throughputIn)}/s` : "–"),
      card("Throughput out", now ? `${bytes(now.throughputOut)}/s` : "–"),
      card("Storage used", now ? bytes(now.storage) : "–"),
      card("Backlog", now ? human(now.backlog) : "–"),
      card("Topics loaded", now ? human(now.loaded) : "–"),
      card("Fsync round", now ? `${now.fsyncMs.toFixed(2)} ms` : "–"),
      card("Memory (RSS)", now ? bytes(now.memory) : "–"));
    for (const chart of charts) chart.update();
  };
  listeners.add(draw);
  const node = h("section", { "aria-labelledby": "overview-title" },
    h("h1", { id: "overview-title" }, "Overview"),
    h("p", { class: "muted" }, `Broker ${info.brokerServiceUrl} · HTTP ${info.webServiceUrl} · cluster ${info.cluster}`),
    cards,
    h("h2", {}, `Last ${10} minutes`),
    h("div", { class: "charts" }, charts.map((c) => c.el)));
  draw(latest);
  requestAnimationFrame(() => charts.forEach((c) => c.rebuild()));
  return { node, title: "Overview", cleanup: () => listeners.delete(draw) };
}

// A topic's page: overview with live rates, subscriptions, producers, messages, storage, schema,
// partitions and policies, one tab (and one URL) each.
import { del, get, poll, post, put, topicPath } from "../api.js";
import { bytes, card, h, human, link, replace, table, when } from "../dom.js";
import { LiveChart, SeriesBuffer } from "../charts.js";
import { confirmed } from "../ui.js";
import { refreshTree, remember, reveal } from "../tree.js";
import { consumer, guard, readOnlyNotice, tenantAdmin } from "../access.js";
import { policyForms } from "../policies.js";
import { tabs } from "./namespace.js";
import { subscriptionsPanel } from "./subscriptions.js";
import { messagesPanel } from "./messages.js";

const POLL_MS = 2000;
const buffers = new Map();

function bufferOf(key) {
  if (!buffers.has(key)) buffers.set(key, { rates: new SeriesBuffer(["in msg/s", "out msg/s"]), backlog: new SeriesBuffer(["backlog"]) });
  return buffers.get(key);
}

function overviewCards(stats) {
  const backlog = Object.values(stats.subscriptions || {}).reduce((sum, s) => sum + (s.msgBacklog || 0), 0);
  return [card("Rate in", `${human(stats.msgRateIn)} msg/s`), card("Rate out", `${human(stats.msgRateOut)} msg/s`),
    card("Throughput in", `${bytes(stats.msgThroughputIn)}/s`), card("Throughput out", `${bytes(stats.msgThroughputOut)}/s`),
    card("Storage", bytes(stats.storageSize)), card("Backlog", human(backlog)),
    card("Producers", (stats.publishers || []).length), card("Subscriptions", Object.keys(stats.subscriptions || {}).length),
    card("Deduplication", stats.deduplicationStatus || "–")];
}

function backlogTable(stats) {
  return table("Backlog per subscription", [{ label: "Subscription" }, { label: "Type" }, { label: "Backlog", num: true },
    { label: "Consumers", num: true }, { label: "Rate out", num: true }],
  Object.entries(stats.subscriptions || {}).map(([name, s]) => [name, s.type, s.msgBacklog, (s.consumers || []).length, `${human(s.msgRateOut)} msg/s`]),
  "No subscriptions.");
}

/** Seed a topic's charts with the history the broker keeps of it (from the first page that asked). */
async function seedFromHistory(t, partitions, rates, backlog) {
  if (rates.times.length) return;
  try {
    const history = await poll(`/magnetar/v1/history/${topicPath(t)}`, { partitions });
    rates.seed(history, ["rateIn", "rateOut"]);
    backlog.seed(history, ["backlog"]);
  } catch { /* refused or an older broker: the charts start with the page */ }
}

function overviewPanel(key, loadStats, first, seeded) {
  const { rates, backlog } = bufferOf(key);
  const cards = h("div", { class: "cards" });
  const subs = h("div", {});
  const charts = [new LiveChart("Messages per second", rates, "msg/s"), new LiveChart("Backlog", backlog, "msgs")];
  const draw = (stats) => {
    replace(cards, overviewCards(stats));
    replace(subs, backlogTable(stats));
    charts.forEach((c) => c.update());
  };
  const sample = async () => {
    if (document.hidden) return;
    try {
      const stats = await loadStats(poll);
      rates.add([stats.msgRateIn || 0, stats.msgRateOut || 0]);
      backlog.add([Object.values(stats.subscriptions || {}).reduce((sum, s) => sum + (s.msgBacklog || 0), 0)]);
      draw(stats);
    } catch { /* keep the last numbers */ }
  };
  draw(first);
  requestAnimationFrame(() => charts.forEach((c) => c.rebuild()));
  const timer = setInterval(sample, POLL_MS);
  seeded.then(sample);
  return { node: h("div", {}, cards, h("div", { class: "charts" }, charts.map((c) => c.el)), h("h2", {}, "Backlog per subscription"), subs),
    cleanup: () => clearInterval(timer) };
}

function producersPanel(stats) {
  return table("Producers", [{ label: "Producer" }, { label: "Access mode" }, { label: "Rate in", num: true },
    { label: "Throughput", num: true }, { label: "Connected since" }, { label: "Address" }, { label: "Client" }],
  (stats.publishers || []).map((p) => [p.producerName, p.accessMode, `${human(p.msgRateIn)} msg/s`, `${bytes(p.msgThroughputIn)}/s`,
    p.connectedSince || "", p.address || "", p.clientVersion || ""]), "No producers connected.");
}

async function storagePanel(base, t, redraw, admin) {
  const [internal, compaction] = await Promise.all([get(`${base}/internalStats`), get(`${base}/compaction`).catch(() => null)]);
  const compacted = internal.compactedLedger;
  return h("div", {},
    h("div", { class: "cards" }, card("Entries added", human(internal.entriesAddedCounter)), card("Entries", human(internal.numberOfEntries)),
      card("Size", bytes(internal.totalSize)), card("Ledgers", (internal.ledgers || []).length),
      card("Last confirmed", internal.lastConfirmedEntry || "–"), card("Compaction", compaction ? compaction.status : "–"),
      card("Compacted entries", compacted && compacted.entries >= 0 ? human(compacted.entries) : "none")),
    h("h2", {}, "Ledgers"),
    table("Ledgers", [{ label: "Ledger" }, { label: "Entries", num: true }, { label: "Size", num: true }],
      (internal.ledgers || []).map((l) => [l.ledgerId, l.entries, bytes(l.size)]), "No ledgers."),
    h("h2", {}, "Cursors"),
    table("Cursors", [{ label: "Cursor" }, { label: "Mark delete" }, { label: "Read position" }, { label: "Consumed", num: true },
      { label: "Ack holes", num: true }, { label: "Active" }],
    Object.entries(internal.cursors || {}).map(([name, c]) => [name, c.markDeletePosition, c.readPosition, c.messagesConsumedCounter ?? "",
      c.totalNonContiguousDeletedMessagesRange ?? 0, c.active ? "yes" : "no"]), "No cursors."),
    compaction && compaction.lastError ? h("p", { class: "notice error" }, compaction.lastError) : null,
    h("div", { class: "actions" },
      guard(h("button", { type: "button", onclick: () => confirmed(`Compact ${t.topic} now?`, "Compaction started", () => put(`${base}/compaction`), redraw) }, "Trigger compaction"), admin),
      guard(h("button", { type: "button", class: "danger", onclick: () => confirmed(`Terminate ${t.topic}? No more messages will be accepted.`,
        "Topic terminated", () => post(`${base}/terminate`), redraw) }, "Terminate topic"), admin)));
}

async function schemaPanel(t) {
  const path = `/admin/v2/schemas/${encodeURIComponent(t.tenant)}/${encodeURIComponent(t.namespace)}/${encodeURIComponent(t.topic)}/schemas`;
  let versions = [];
  try { versions = (await get(path)).getSchemaResponses || []; } catch (err) { if (err.status !== 404) throw err; }
  if (!versions.length) return h("p", { class: "muted" }, "No schema: messages are bytes.");
  return h("div", {}, versions.slice().reverse().map((v) => h("section", { class: "panel" },
    h("h3", {}, `Version ${v.version} `, h("span", { class: "badge" }, v.type), h("span", { class: "muted" }, ` ${when(v.timestamp)}`)),
    h("pre", { class: "mono" }, (() => { try { return JSON.stringify(JSON.parse(v.data), null, 2); } catch { return v.data; } })()))));
}

function partitionsPanel(t, stats, count) {
  return table("Partitions", [{ label: "Partition" }, { label: "Rate in", num: true }, { label: "Rate out", num: true }, { label: "Storage", num: true }],
    Array.from({ length: count }, (_, i) => {
      const p = { ...t, topic: `${t.topic}-partition-${i}` };
      const full = `${t.domain}://${t.tenant}/${t.namespace}/${p.topic}`;
      const s = (stats.partitions || {})[full] || {};
      return [link(`/console/topics/${topicPath(p)}`, p.topic), `${human(s.msgRateIn)} msg/s`, `${human(s.msgRateOut)} msg/s`, bytes(s.storageSize)];
    }));
}

/** The topic page; query "tab" picks the view. */
export async function topicView(t, query) {
  const base = `/admin/v2/${topicPath(t)}`;
  const { partitions } = await get(`${base}/partitions`);
  const loadStats = (fetcher = get) => (partitions > 0 ? fetcher(`${base}/partitioned-stats`, { perPartition: "true" }) : fetcher(`${base}/stats`));
  const [stats, admin, consume] = await Promise.all([loadStats(), tenantAdmin(t.tenant), consumer(base)]);
  const tab = query.get("tab") || "overview";
  const page = `/console/topics/${topicPath(t)}`;
  const items = [["overview", "Overview"], ["subscriptions", "Subscriptions"], ["producers", "Producers"]];
  if (partitions > 0) items.push(["partitions", `Partitions (${partitions})`]);
  else if (t.domain === "persistent") items.push(["messages", "Messages"], ["storage", "Storage"]);
  items.push(["schema", "Schema"], ["policies", "Policies"]);
  const holder = h("div", { id: "tab-body" });
  const redraw = () => document.dispatchEvent(new CustomEvent("navigate", { detail: { url: location.pathname + location.search, replace: true } }));
  let cleanup = null;
  if (tab === "overview") {
    const { rates, backlog } = bufferOf(page);
    const o = overviewPanel(page, loadStats, stats, seedFromHistory(t, partitions, rates, backlog));
    holder.append(o.node);
    cleanup = o.cleanup;
  }
  else if (tab === "subscriptions") holder.append(await subscriptionsPanel(base, loadStats, partitions > 0, consume));
  else if (tab === "producers") holder.append(producersPanel(stats));
  else if (tab === "partitions") holder.append(partitionsPanel(t, stats, partitions));
  else if (tab === "messages") holder.append(await messagesPanel(t, Object.keys(stats.subscriptions || {}).sort(), query, consume));
  else if (tab === "storage") holder.append(await storagePanel(base, t, redraw, admin));
  else if (tab === "schema") holder.append(await schemaPanel(t));
  else if (tab === "policies") holder.append(await policyForms("topic", base));
  reveal(t.tenant, t.namespace);
  remember(t.tenant, t.namespace);
  const ns = `/console/namespaces/${encodeURIComponent(t.tenant)}/${encodeURIComponent(t.namespace)}`;
  const node = h("section", {},
    h("div", { class: "breadcrumbs" }, link("/console/tenants", "Tenants"), " / ", link(`/console/tenants/${encodeURIComponent(t.tenant)}`, t.tenant),
      " / ", link(ns, t.namespace), " /"),
    h("h1", {}, t.topic, h("span", { class: "badge" }, t.domain), partitions > 0 ? h("span", { class: "badge" }, `${partitions} partitions`) : null),
    tabs(page, items, tab),
    readOnlyNotice(consume, "read or move this topic's subscriptions: that needs the consume permission"),
    readOnlyNotice(admin, `delete, terminate or compact this topic or change its policies: only admins of tenant ${t.tenant} may`),
    holder,
    h("div", { class: "actions", style: "margin-top:1rem" }, guard(h("button", { type: "button", class: "danger", onclick: () => confirmed(
      `Delete topic ${t.topic}? Its messages are lost.`, `Topic ${t.topic} deleted`,
      () => del(partitions > 0 ? `${base}/partitions` : base, { force: "true" }),
      async () => { await refreshTree(); document.dispatchEvent(new CustomEvent("navigate", { detail: { url: ns } })); }) }, "Delete topic"), admin)));
  return { node, title: t.topic, cleanup };
}

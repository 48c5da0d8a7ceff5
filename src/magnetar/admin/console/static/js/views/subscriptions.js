// A topic's subscriptions: backlog, consumers, and the cursor actions (each confirmed, then redrawn).
import { call, del, post, put } from "../api.js";
import { field, h, human, replace, select, table } from "../dom.js";
import { act, confirmed } from "../ui.js";
import { guard } from "../access.js";

function consumersTable(sub) {
  return table(`Consumers of ${sub.name}`,
    [{ label: "Consumer" }, { label: "Permits", num: true }, { label: "Unacked", num: true }, { label: "Blocked" },
      { label: "Rate out", num: true }, { label: "Address" }],
    (sub.consumers || []).map((c) => [c.consumerName, c.availablePermits, c.unackedMessages,
      c.blockedConsumerOnUnackedMsgs ? "yes" : "no", `${human(c.msgRateOut)} msg/s`, c.address || ""]),
    "No consumers connected.");
}

function parseMessageId(text) {
  const m = /^\s*(\d+):(\d+)(?::(-?\d+))?\s*$/.exec(text);
  return m ? { ledgerId: Number(m[1]), entryId: Number(m[2]), partitionIndex: m[3] ? Number(m[3]) : -1 } : null;
}

function actionForms(base, sub, redraw, consume) {
  const s = `${base}/subscription/${encodeURIComponent(sub.name)}`;
  const [skipWrap, skipInput, skipError] = field("Messages to skip", { type: "number", min: 1, value: 1, name: "skip" });
  const [expireWrap, expireInput, expireError] = field("Expire older than (s)", { type: "number", min: 0, value: 60, name: "expire" });
  const [resetWrap, resetInput, resetError] = field("Reset to a time or message id", { name: "reset", placeholder: "2026-11-24T10:00 or 12:34" });
  const invalid = (input, error, reason) => { error.textContent = reason; input.setAttribute("aria-invalid", String(Boolean(reason))); return Boolean(reason); };
  const skip = async () => {
    const n = Number(skipInput.value);
    if (invalid(skipInput, skipError, Number.isInteger(n) && n >= 1 ? "" : "A whole number, 1 or more.")) return;
    await confirmed(`Skip ${n} message(s) of ${sub.name}?`, `Skipped ${n} on ${sub.name}`, () => post(`${s}/skip/${n}`), redraw);
  };
  const expire = async () => {
    const n = Number(expireInput.value);
    if (invalid(expireInput, expireError, Number.isInteger(n) && n >= 0 ? "" : "A whole number of seconds.")) return;
    await confirmed(`Expire messages older than ${n} s on ${sub.name}?`, `Expired on ${sub.name}`, () => post(`${s}/expireMessages/${n}`), redraw);
  };
  const reset = async () => {
    const text = resetInput.value.trim();
    const id = parseMessageId(text);
    const time = id ? NaN : Date.parse(text);
    if (invalid(resetInput, resetError, id || !Number.isNaN(time) ? "" : "A date and time, or a message id ledger:entry.")) return;
    const what = id ? `message id ${text}` : new Date(time).toLocaleString();
    await confirmed(`Reset ${sub.name} to ${what}?`, `Reset ${sub.name} to ${what}`,
      () => (id ? call("POST", `${s}/resetcursor`, { body: id }) : post(`${s}/resetcursor/${time}`)), redraw);
  };
  return h("div", { class: "form-row" },
    h("div", {}, skipWrap, guard(h("button", { type: "button", class: "small", onclick: skip }, "Skip"), consume)),
    h("div", {}, expireWrap, guard(h("button", { type: "button", class: "small", onclick: expire }, "Expire"), consume)),
    h("div", {}, resetWrap, guard(h("button", { type: "button", class: "small", onclick: reset }, "Reset cursor"), consume)),
    h("div", { class: "actions" },
      guard(h("button", { type: "button", class: "small", onclick: () => confirmed(`Clear the whole backlog of ${sub.name}?`,
        `Backlog of ${sub.name} cleared`, () => post(`${s}/skip_all`), redraw) }, "Clear backlog"), consume),
      guard(h("button", { type: "button", class: "small danger", onclick: () => confirmed(`Unsubscribe ${sub.name}? Its consumers are disconnected.`,
        `Unsubscribed ${sub.name}`, () => del(s, { force: "true" }), redraw) }, "Unsubscribe"), consume)));
}

function createForm(base, redraw, consume) {
  const [nameWrap, nameInput, nameError] = field("Subscription name", { name: "subscription", autocomplete: "off" });
  const [posWrap, posInput] = select("Start at", [["latest", "latest"], ["earliest", "earliest"]], "latest", { name: "position" });
  return h("form", { novalidate: true, class: "panel", onsubmit: async (e) => {
    e.preventDefault();
    const name = nameInput.value.trim();
    nameError.textContent = name ? "" : "Give the subscription a name.";
    if (!name) return;
    await act(`Subscription ${name} created`, () => put(`${base}/subscription/${encodeURIComponent(name)}`, undefined,
      { messageId: posInput.value }), redraw);
  } }, h("h3", {}, "Create a subscription"), h("div", { class: "form-row" }, nameWrap, posWrap,
    h("div", {}, guard(h("button", { type: "submit" }, "Create subscription"), consume))));
}

/** The subscriptions panel of a topic; loadStats() gives fresh stats for each redraw. */
export async function subscriptionsPanel(base, loadStats, partitioned, consume) {
  const panel = h("div", { id: "subscriptions" });
  const redraw = async () => {
    const stats = await loadStats();
    const subs = Object.entries(stats.subscriptions || {}).map(([name, s]) => ({ name, ...s })).sort((a, b) => a.name.localeCompare(b.name));
    const summary = table("Subscriptions", [{ label: "Subscription" }, { label: "Type" }, { label: "Backlog", num: true },
      { label: "Unacked", num: true }, { label: "Consumers", num: true }, { label: "Rate out", num: true }],
    subs.map((s) => [s.name, s.type, h("span", { "data-backlog": s.name }, s.msgBacklog), s.unackedMessages,
      (s.consumers || []).length, `${human(s.msgRateOut)} msg/s`]), "No subscriptions.");
    const details = subs.map((s) => h("section", { class: "panel", "data-subscription": s.name, "aria-labelledby": `sub-${s.name}` },
      h("h3", { id: `sub-${s.name}` }, `${s.name} `, h("span", { class: "badge" }, s.type),
        h("span", { class: `badge ${s.msgBacklog ? "warn" : "ok"}` }, `backlog ${s.msgBacklog}`)),
      consumersTable(s),
      partitioned ? h("p", { class: "muted" }, "Actions apply to every partition.") : null,
      actionForms(base, s, redraw, consume)));
    replace(panel, summary, details, createForm(base, redraw, consume));
  };
  await redraw();
  return panel;
}

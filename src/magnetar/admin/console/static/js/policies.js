// Policy forms for namespaces and topics: one form per policy, validated as the REST API validates.
import { call, get } from "./api.js";
import { field, h, replace, select } from "./dom.js";
import { act } from "./ui.js";

const STRATEGIES = ["UNDEFINED", "ALWAYS_INCOMPATIBLE", "ALWAYS_COMPATIBLE", "BACKWARD", "FORWARD", "FULL",
  "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"];
const QUOTA_POLICIES = ["producer_request_hold", "producer_exception", "consumer_backlog_eviction"];

/** Every editable policy: REST path per scope, value shape and fields (min: smallest accepted integer). */
export const POLICIES = [
  { id: "retention", title: "Retention", help: "How long and how much acknowledged data is kept (-1: no limit).",
    paths: { namespace: "retention", topic: "retention" }, shape: "object",
    fields: [{ name: "retentionTimeInMinutes", label: "Time (minutes)", min: -1 }, { name: "retentionSizeInMB", label: "Size (MB)", min: -1 }] },
  { id: "messageTTL", title: "Message TTL", help: "Unacknowledged messages older than this expire (seconds, 0: never).",
    paths: { namespace: "messageTTL", topic: "messageTTL" }, shape: "scalar", fields: [{ name: "value", label: "TTL (seconds)", min: 0 }] },
  { id: "backlogQuota", title: "Backlog quota", help: "The largest backlog (bytes, -1: no limit) or oldest (seconds) and what happens beyond it.",
    paths: { namespace: "backlogQuotaMap", topic: "backlogQuotaMap" }, shape: "quota",
    fields: [{ name: "limitSize", label: "Limit size (bytes)", min: -1 }, { name: "limitTime", label: "Limit time (seconds)", min: -1 },
      { name: "policy", label: "When exceeded", options: QUOTA_POLICIES }] },
  { id: "deduplication", title: "Deduplication", help: "Drop messages a producer sends twice (by sequence id).",
    paths: { namespace: "deduplication", topic: "deduplicationEnabled" }, shape: "scalar", fields: [{ name: "value", label: "Enabled", bool: true }] },
  { id: "delayedDelivery", title: "Delayed delivery", help: "Whether consumers may receive messages later than published.",
    paths: { namespace: "delayedDelivery", topic: "delayedDelivery" }, shape: "object",
    fields: [{ name: "active", label: "Active", bool: true }, { name: "tickTime", label: "Tick (ms)", min: 0 },
      { name: "maxDeliveryDelayInMillis", label: "Longest delay (ms, 0: any)", min: 0 }] },
  { id: "maxProducers", title: "Max producers per topic", help: "0: no limit.",
    paths: { namespace: "maxProducersPerTopic", topic: "maxProducers" }, shape: "scalar", fields: [{ name: "value", label: "Producers", min: 0 }] },
  { id: "maxConsumers", title: "Max consumers per subscription", help: "0: no limit.",
    paths: { namespace: "maxConsumersPerSubscription", topic: "maxConsumersPerSubscription" }, shape: "scalar",
    fields: [{ name: "value", label: "Consumers", min: 0 }] },
  { id: "maxUnacked", title: "Max unacked messages per consumer", help: "0: no limit.",
    paths: { namespace: "maxUnackedMessagesPerConsumer", topic: "maxUnackedMessagesOnConsumer" }, shape: "scalar",
    fields: [{ name: "value", label: "Messages", min: 0 }] },
  { id: "subscriptionExpiration", title: "Subscription expiration", help: "Inactive subscriptions are deleted after this many minutes (0: never).",
    paths: { namespace: "subscriptionExpirationTime" }, shape: "scalar", fields: [{ name: "value", label: "Minutes", min: 0 }] },
  { id: "compactionThreshold", title: "Compaction threshold", help: "Compact automatically past this backlog (bytes, 0: off).",
    paths: { namespace: "compactionThreshold", topic: "compactionThreshold" }, shape: "scalar", fields: [{ name: "value", label: "Bytes", min: 0 }] },
  { id: "schemaCompatibility", title: "Schema compatibility strategy", help: "Which new schema versions producers may register.",
    paths: { namespace: "schemaCompatibilityStrategy", topic: "schemaCompatibilityStrategy" }, shape: "strategy",
    fields: [{ name: "value", label: "Strategy", options: STRATEGIES }] },
  { id: "autoTopicCreation", title: "Auto topic creation", help: "Whether topics are created on first use, and how.",
    paths: { namespace: "autoTopicCreation" }, shape: "object",
    fields: [{ name: "allowAutoTopicCreation", label: "Allowed", bool: true },
      { name: "topicType", label: "Type", options: ["non-partitioned", "partitioned"] },
      { name: "defaultNumPartitions", label: "Partitions", min: 1, optional: true }] },
];

function current(policy, value) {
  if (value === null || value === undefined || value === "" || (typeof value === "object" && !Object.keys(value).length)) return {};
  if (policy.shape === "quota") return value.destination_storage || {};
  if (policy.shape === "object") return value;
  return { value };
}

function inputFor(f, value) {
  if (f.bool) {
    const id = `p-${Math.random().toString(36).slice(2, 9)}`;
    const input = h("input", { type: "checkbox", id, name: f.name, checked: Boolean(value) });
    return [h("div", {}, h("label", { for: id }, input, " ", f.label)), input, h("div", { class: "error-text" })];
  }
  if (f.options) return select(f.label, f.options.map((o) => [o, o]), value ?? f.options[0], { name: f.name });
  return field(f.label, { type: "number", step: 1, name: f.name, value: value ?? "", inputmode: "numeric",
    min: f.min, "data-min": f.min });
}

/** The value a form holds, or null with reasons shown next to the fields (the REST API's rules). */
function readForm(policy, inputs) {
  const out = {};
  let ok = true;
  for (const f of policy.fields) {
    const [input, error] = inputs[f.name];
    error.textContent = "";
    input.setAttribute("aria-invalid", "false");
    if (f.bool) { out[f.name] = input.checked; continue; }
    if (f.options) { out[f.name] = input.value; continue; }
    const text = input.value.trim();
    if (text === "" && f.optional) continue;
    const n = Number(text);
    let reason = "";
    if (text === "" || !Number.isInteger(n)) reason = "Enter a whole number.";
    else if (f.min !== undefined && n < f.min) reason = `Must be ${f.min} or more.`;
    if (reason) { error.textContent = reason; input.setAttribute("aria-invalid", "true"); ok = false; continue; }
    out[f.name] = n;
  }
  if (!ok) return null;
  return policy.shape === "object" || policy.shape === "quota" ? out : out.value;
}

async function save(policy, base, path, value) {
  if (policy.shape === "quota") return call("POST", `${base}/backlogQuota`, { body: value, query: { backlogQuotaType: "destination_storage" } });
  if (policy.shape === "strategy") return call("PUT", `${base}/${path}`, { body: value });
  return call("POST", `${base}/${path}`, { body: value });
}

async function remove(policy, base, path) {
  if (policy.shape === "quota") return call("DELETE", `${base}/backlogQuota`, { query: { backlogQuotaType: "destination_storage" } });
  return call("DELETE", `${base}/${path}`);
}

function shown(value) {
  if (value === null || value === undefined || value === "" ) return "not set";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** One policy's form: its current value, inputs, Save and Remove. */
async function policyForm(policy, scope, base) {
  const path = policy.paths[scope];
  const section = h("form", { novalidate: true, class: "panel", "data-policy": policy.id, "aria-labelledby": `policy-${policy.id}` });
  const draw = async () => {
    let value = null;
    let refused = null;
    try { value = await get(`${base}/${path}`); } catch (err) { refused = err; }
    const now = current(policy, value);
    const inputs = {};
    const wraps = policy.fields.map((f) => {
      const [wrap, input, error] = inputFor(f, now[f.name]);
      inputs[f.name] = [input, error];
      return wrap;
    });
    const disabled = refused && refused.status === 403;
    replace(section,
      h("h3", { id: `policy-${policy.id}` }, policy.title),
      h("p", { class: "muted" }, policy.help, " Current: ", h("code", { "data-current": policy.id }, refused ? `unavailable (${refused.status})` : shown(value))),
      h("div", { class: "form-row" }, wraps,
        h("div", { class: "actions" },
          h("button", { type: "submit", disabled }, "Save"),
          h("button", { type: "button", class: "button-quiet", disabled, onclick: () =>
            act(`${policy.title} removed`, () => remove(policy, base, path), draw) }, "Remove"))));
    section.onsubmit = async (e) => {
      e.preventDefault();
      const v = readForm(policy, inputs);
      if (v === null) { section.querySelector('[aria-invalid="true"]')?.focus(); return; }
      await act(`${policy.title} saved`, () => save(policy, base, path, v), draw);
    };
  };
  await draw();
  return section;
}

/** Every policy form of a scope ("namespace" or "topic") under the REST base path. */
export async function policyForms(scope, base) {
  const forms = await Promise.all(POLICIES.filter((p) => p.paths[scope]).map((p) => policyForm(p, scope, base)));
  return h("div", { class: "policies" }, forms);
}

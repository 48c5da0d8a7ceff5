// A namespace: its topics (create, delete) and its policies.
import { del, get, parseTopic, put, topicPath } from "../api.js";
import { field, h, link, select, table } from "../dom.js";
import { act, confirmed } from "../ui.js";
import { refreshTree, remember, reveal } from "../tree.js";
import { guard, readOnlyNotice, tenantAdmin } from "../access.js";
import { policyForms } from "../policies.js";
import { checkName } from "./tenants.js";

function reload() { document.dispatchEvent(new CustomEvent("navigate", { detail: { url: location.pathname + location.search, replace: true } })); }
function go(url) { document.dispatchEvent(new CustomEvent("navigate", { detail: { url } })); }

/** Tab links of a page: [[id, label]], the current one marked. */
export function tabs(base, items, currentTab) {
  return h("nav", { class: "tabs", "aria-label": "Views" }, items.map(([id, label]) =>
    link(`${base}?tab=${id}`, label)).map((a, i) => {
    if (items[i][0] === currentTab) a.setAttribute("aria-current", "page");
    return a;
  }));
}

async function listTopics(t, n) {
  const rows = [];
  for (const domain of ["persistent", "non-persistent"]) {
    const base = `/admin/v2/${domain}/${t}/${n}`;
    const [plain, partitioned] = await Promise.all([get(base), get(`${base}/partitioned`)]);
    for (const name of partitioned) rows.push({ name, partitioned: true });
    for (const name of plain) if (!/-partition-\d+$/.test(name)) rows.push({ name, partitioned: false });
  }
  return rows.sort((a, b) => a.name.localeCompare(b.name));
}

function createTopicForm(tenant, namespace, admin) {
  const [nameWrap, nameInput, nameError] = field("Topic name", { name: "topic", required: true, autocomplete: "off" });
  const [domainWrap, domainInput] = select("Domain", [["persistent", "persistent"], ["non-persistent", "non-persistent"]], "persistent", { name: "domain" });
  const [partsWrap, partsInput, partsError] = field("Partitions (0: not partitioned)", { name: "partitions", type: "number", min: 0, max: 10000, value: 0 });
  return h("form", { novalidate: true, class: "panel", "aria-labelledby": "create-topic-title", onsubmit: async (e) => {
    e.preventDefault();
    const name = checkName(nameInput, nameError, "topic");
    const parts = Number(partsInput.value);
    partsError.textContent = Number.isInteger(parts) && parts >= 0 && parts <= 10000 ? "" : "A whole number from 0 to 10000.";
    partsInput.setAttribute("aria-invalid", String(Boolean(partsError.textContent)));
    if (!name || partsError.textContent) return;
    const t = { domain: domainInput.value, tenant, namespace, topic: name };
    const path = `/admin/v2/${topicPath(t)}`;
    await act(`Topic ${name} created`, () => (parts > 0 ? put(`${path}/partitions`, parts) : put(path)),
      async () => { reveal(tenant, namespace); await refreshTree(); go(`/console/topics/${topicPath(t)}`); });
  } }, h("h2", { id: "create-topic-title" }, "Create a topic"),
  h("div", { class: "form-row" }, nameWrap, domainWrap, partsWrap, h("div", {}, guard(h("button", { type: "submit" }, "Create topic"), admin))));
}

/** One namespace: tab "topics" (default) or "policies". */
export async function namespaceView(tenant, namespace, query) {
  const t = encodeURIComponent(tenant);
  const n = encodeURIComponent(namespace);
  const tab = query.get("tab") || "topics";
  const base = `/console/namespaces/${t}/${n}`;
  const admin = await tenantAdmin(tenant);
  let body;
  if (tab === "policies") {
    body = [h("h2", {}, "Policies"), await policyForms("namespace", `/admin/v2/namespaces/${t}/${n}`)];
  } else {
    const topics = await listTopics(t, n);
    const rows = topics.map(({ name, partitioned }) => {
      const x = parseTopic(name);
      const path = `/admin/v2/${topicPath(x)}${partitioned ? "/partitions" : ""}`;
      return [link(`/console/topics/${topicPath(x)}`, x.topic), x.domain, partitioned ? "partitioned" : "",
        guard(h("button", { type: "button", class: "danger small", "aria-label": `Delete topic ${x.topic}`, onclick: () => confirmed(
          `Delete topic ${name}? Its messages are lost.`, `Topic ${x.topic} deleted`,
          () => del(path, { force: "true" }), async () => { await refreshTree(); reload(); }) }, "Delete"), admin)];
    });
    body = [h("h2", {}, `Topics (${topics.length})`),
      table("Topics", [{ label: "Topic" }, { label: "Domain" }, { label: "Kind" }, { label: "Actions" }], rows, "No topics yet."),
      createTopicForm(tenant, namespace, admin)];
    remember(tenant, namespace);
  }
  reveal(tenant);
  const node = h("section", {},
    h("div", { class: "breadcrumbs" }, link("/console/tenants", "Tenants"), " / ", link(`/console/tenants/${t}`, tenant), " /"),
    h("h1", {}, `Namespace ${tenant}/${namespace}`),
    tabs(base, [["topics", "Topics"], ["policies", "Policies"]], tab),
    readOnlyNotice(admin, `create or delete topics, change policies or delete the namespace: only admins of tenant ${tenant} may`),
    body,
    h("div", { class: "actions" }, guard(h("button", { type: "button", class: "danger", onclick: () => confirmed(
      `Delete namespace ${tenant}/${namespace}? It must have no topics.`, `Namespace ${tenant}/${namespace} deleted`,
      () => del(`/admin/v2/namespaces/${t}/${n}`), async () => { await refreshTree(); go(`/console/tenants/${t}`); }) }, "Delete namespace"), admin)));
  return { node, title: `${tenant}/${namespace}` };
}

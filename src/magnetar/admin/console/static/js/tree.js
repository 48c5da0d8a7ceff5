// The sidebar tree: tenants > namespaces > topics, with counts and a filter, kept as links.
import { get, parseTopic, topicPath } from "./api.js";
import { h, link, replace } from "./dom.js";

let model = [];
let loadedAt = 0;
let refusal = "";
const open = new Set(JSON.parse(sessionStorage.getItem("magnetar.tree.open") || "[]"));
const KNOWN_KEY = "magnetar.tree.known";

function known() { return JSON.parse(sessionStorage.getItem(KNOWN_KEY) || "[]"); }

/** Remember a namespace this role could open, for a tree it cannot list from the top. */
export function remember(tenant, namespace) {
  const key = `${tenant}/${namespace}`;
  const list = known();
  if (list.includes(key)) return;
  list.push(key);
  sessionStorage.setItem(KNOWN_KEY, JSON.stringify(list));
  loadedAt = 0;
}

async function topicsOf(t, n) {
  const topics = new Set();
  for (const domain of ["persistent", "non-persistent"]) {
    const base = `/admin/v2/${domain}/${encodeURIComponent(t)}/${encodeURIComponent(n)}`;
    const [plain, partitioned] = await Promise.all([get(base), get(`${base}/partitioned`)]);
    for (const name of partitioned) topics.add(name);
    for (const name of plain) if (!/-partition-\d+$/.test(name)) topics.add(name);
  }
  return { tenant: t, namespace: n, topics: [...topics].sort().map(parseTopic).filter(Boolean) };
}

// A role that may not list tenants (only superusers may) sees the namespaces it opened, each kept
// only while the broker lets it list their topics.
async function load() {
  let tenants;
  refusal = "";
  try {
    tenants = await get("/admin/v2/tenants");
  } catch (err) {
    if (err.status !== 403) throw err;
    refusal = `${err.status} ${err.reason}`;
    tenants = [...new Set(known().map((key) => key.split("/")[0]))];
  }
  model = await Promise.all(tenants.sort().map(async (tenant) => {
    let namespaces = known().filter((key) => key.split("/")[0] === tenant);
    if (!refusal) namespaces = [];
    try { namespaces = await get(`/admin/v2/namespaces/${encodeURIComponent(tenant)}`); } catch { /* refused */ }
    const children = await Promise.all(namespaces.sort().map(async (ns) => {
      const [t, n] = ns.split("/");
      try { return await topicsOf(t, n); } catch (err) {
        return refusal && err.status === 403 ? null : { tenant: t, namespace: n, topics: [] };
      }
    }));
    return { tenant, namespaces: children.filter(Boolean) };
  }));
  if (refusal) model = model.filter((t) => t.namespaces.length);
  loadedAt = Date.now();
}

function openForm() {
  const input = h("input", { id: "tree-open", name: "namespace", placeholder: "tenant/namespace", autocomplete: "off" });
  const error = h("div", { class: "error-text", "aria-live": "polite" });
  return h("form", { class: "tree-open", novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const m = /^\s*([-=:.\w]+)\/([-=:.\w]+)\s*$/.exec(input.value);
    error.textContent = m ? "" : "Write it as tenant/namespace.";
    if (!m) return;
    open.add(m[1]);
    document.dispatchEvent(new CustomEvent("navigate", { detail: { url: `/console/namespaces/${encodeURIComponent(m[1])}/${encodeURIComponent(m[2])}` } }));
  } }, h("label", { for: "tree-open" }, "Open a namespace"), input, error, h("button", { type: "submit", class: "small" }, "Open"));
}

function toggle(key) {
  return h("button", { type: "button", class: "toggle", "aria-expanded": String(open.has(key)),
    "aria-label": `${open.has(key) ? "Collapse" : "Expand"} ${key}`,
    onclick: () => { if (open.has(key)) open.delete(key); else open.add(key);
      sessionStorage.setItem("magnetar.tree.open", JSON.stringify([...open])); draw(); } },
  open.has(key) ? "▾" : "▸");
}

function current(a) {
  if (a.getAttribute("href") === decodeURI(location.pathname) || a.getAttribute("href") === location.pathname) a.setAttribute("aria-current", "page");
  return a;
}

function draw() {
  const filter = document.getElementById("tree-filter").value.trim().toLowerCase();
  const matches = (text) => !filter || text.toLowerCase().includes(filter);
  const tenantNodes = [];
  for (const t of model) {
    const nsNodes = [];
    for (const ns of t.namespaces) {
      const key = `${ns.tenant}/${ns.namespace}`;
      const topics = ns.topics.filter((x) => matches(`${key}/${x.topic}`));
      if (!matches(key) && !topics.length) continue;
      const expanded = open.has(key) || (filter && topics.length);
      nsNodes.push(h("li", {}, toggle(key),
        current(link(`/console/namespaces/${encodeURIComponent(ns.tenant)}/${encodeURIComponent(ns.namespace)}`, ns.namespace)),
        h("span", { class: "badge", title: "topics" }, ns.topics.length),
        expanded ? h("ul", {}, topics.map((x) => h("li", {},
          current(link(`/console/topics/${topicPath(x)}`, x.topic)),
          x.domain === "non-persistent" ? h("span", { class: "badge" }, "np") : null))) : null));
    }
    if (!matches(t.tenant) && !nsNodes.length) continue;
    const expanded = open.has(t.tenant) || Boolean(filter);
    tenantNodes.push(h("li", {}, toggle(t.tenant),
      current(link(`/console/tenants/${encodeURIComponent(t.tenant)}`, t.tenant)),
      h("span", { class: "badge", title: "namespaces" }, t.namespaces.length),
      expanded ? h("ul", {}, nsNodes) : null));
  }
  const tree = tenantNodes.length ? h("ul", {}, tenantNodes) : h("p", { class: "muted" }, "Nothing matches.");
  if (!refusal) { replace(document.getElementById("tree"), tree); return; }
  replace(document.getElementById("tree"), h("p", { class: "muted", "data-access": "refused" },
    `This role may not list tenants (${refusal}): the tree shows the namespaces opened here.`),
  model.length ? tree : null, openForm());
}

/** Reload the tree (force) or redraw it, reloading when older than 10 s. */
export async function refreshTree(force = true) {
  try {
    if (force || Date.now() - loadedAt > 10000) await load();
  } catch (err) {
    replace(document.getElementById("tree"), h("p", { class: "muted" }, `Tree unavailable: ${err.reason || err.message}`));
    return;
  }
  draw();
}

/** Open the path to a topic or namespace in the tree. */
export function reveal(tenant, namespace) {
  open.add(tenant);
  if (namespace) open.add(`${tenant}/${namespace}`);
  sessionStorage.setItem("magnetar.tree.open", JSON.stringify([...open]));
}

/** Wire the filter. */
export function setupTree() {
  document.getElementById("tree-filter").addEventListener("input", draw);
}

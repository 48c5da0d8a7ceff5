// Tenants and a tenant's namespaces: lists with counts, create and delete.
import { del, get, put } from "../api.js";
import { field, h, link, table } from "../dom.js";
import { act, confirmed } from "../ui.js";
import { refreshTree } from "../tree.js";
import { guard, readOnlyNotice, superUser, tenantAdmin } from "../access.js";

/** Pulsar's rule for tenant, namespace and topic local names. */
export const NAME_PATTERN = /^[-=:.\w]+$/;

/** Validate a name field; returns the value or null (with the reason shown). */
export function checkName(input, error, what) {
  const value = input.value.trim();
  let reason = "";
  if (!value) reason = `Give the ${what} a name.`;
  else if (!NAME_PATTERN.test(value)) reason = `A ${what} name may use letters, digits, and - _ = : . only.`;
  error.textContent = reason;
  input.setAttribute("aria-invalid", String(Boolean(reason)));
  return reason ? null : value;
}

function go(url) { document.dispatchEvent(new CustomEvent("navigate", { detail: { url } })); }
function reload() { document.dispatchEvent(new CustomEvent("navigate", { detail: { url: location.pathname + location.search, replace: true } })); }

/** All tenants. */
export async function tenantsView() {
  let tenants;
  try { tenants = (await get("/admin/v2/tenants")).sort(); } catch (err) {
    if (err.status !== 403) throw err;
    return { title: "Tenants", node: h("section", {}, h("h1", {}, "Tenants"),
      h("p", { class: "notice error", role: "alert", "data-access": "refused" }, `${err.status}: ${err.reason}`),
      h("p", {}, "Only superusers may list, create and delete tenants. Open a namespace this role may read from the sidebar.")) };
  }
  const counts = await Promise.all(tenants.map((t) => get(`/admin/v2/namespaces/${encodeURIComponent(t)}`).then((n) => n.length, () => "–")));
  const [nameWrap, nameInput, nameError] = field("Tenant name", { name: "tenant", required: true, autocomplete: "off" });
  const [rolesWrap, rolesInput] = field("Admin roles (comma separated)", { name: "roles", autocomplete: "off" });
  const form = h("form", { novalidate: true, class: "panel", "aria-labelledby": "create-tenant-title", onsubmit: async (e) => {
    e.preventDefault();
    const name = checkName(nameInput, nameError, "tenant");
    if (!name) { nameInput.focus(); return; }
    const roles = rolesInput.value.split(",").map((s) => s.trim()).filter(Boolean);
    await act(`Tenant ${name} created`, () => put(`/admin/v2/tenants/${encodeURIComponent(name)}`,
      { adminRoles: roles, allowedClusters: ["standalone"] }), async () => { await refreshTree(); go(`/console/tenants/${encodeURIComponent(name)}`); });
  } }, h("h2", { id: "create-tenant-title" }, "Create a tenant"), h("div", { class: "form-row" }, nameWrap, rolesWrap,
    h("div", {}, h("button", { type: "submit" }, "Create tenant"))));
  const rows = tenants.map((t, i) => [link(`/console/tenants/${encodeURIComponent(t)}`, t), counts[i],
    h("button", { type: "button", class: "danger small", "aria-label": `Delete tenant ${t}`, onclick: () => confirmed(
      `Delete tenant ${t}? It must have no namespaces.`, `Tenant ${t} deleted`,
      () => del(`/admin/v2/tenants/${encodeURIComponent(t)}`), async () => { await refreshTree(); reload(); }) }, "Delete")]);
  const node = h("section", {}, h("h1", {}, "Tenants"),
    table("Tenants", [{ label: "Tenant" }, { label: "Namespaces", num: true }, { label: "Actions" }], rows, "No tenants yet."),
    form);
  return { node, title: "Tenants" };
}

/** One tenant: its settings and namespaces. */
export async function tenantView(tenant) {
  const t = encodeURIComponent(tenant);
  const [info, namespaces, su, admin] = await Promise.all([get(`/admin/v2/tenants/${t}`).catch((err) => {
    if (err.status !== 403) throw err;
    return { adminRoles: [`unavailable (${err.status})`], allowedClusters: [`unavailable (${err.status})`] };
  }), get(`/admin/v2/namespaces/${t}`), superUser(), tenantAdmin(tenant)]);
  const [nameWrap, nameInput, nameError] = field("Namespace name", { name: "namespace", required: true, autocomplete: "off" });
  const form = h("form", { novalidate: true, class: "panel", "aria-labelledby": "create-ns-title", onsubmit: async (e) => {
    e.preventDefault();
    const name = checkName(nameInput, nameError, "namespace");
    if (!name) { nameInput.focus(); return; }
    await act(`Namespace ${tenant}/${name} created`, () => put(`/admin/v2/namespaces/${t}/${encodeURIComponent(name)}`),
      async () => { await refreshTree(); reload(); });
  } }, h("h2", { id: "create-ns-title" }, "Create a namespace"),
  h("div", { class: "form-row" }, nameWrap, h("div", {}, guard(h("button", { type: "submit" }, "Create namespace"), admin))));
  const rows = namespaces.sort().map((full) => {
    const ns = full.split("/")[1];
    return [link(`/console/namespaces/${t}/${encodeURIComponent(ns)}`, full),
      guard(h("button", { type: "button", class: "danger small", "aria-label": `Delete namespace ${full}`, onclick: () => confirmed(
        `Delete namespace ${full}? It must have no topics.`, `Namespace ${full} deleted`,
        () => del(`/admin/v2/namespaces/${t}/${encodeURIComponent(ns)}`), async () => { await refreshTree(); reload(); }) }, "Delete"), admin)];
  });
  const node = h("section", {},
    h("div", { class: "breadcrumbs" }, link("/console/tenants", "Tenants"), " / "),
    h("h1", {}, `Tenant ${tenant}`),
    h("div", { class: "cards" },
      h("div", { class: "card" }, h("div", { class: "label" }, "Admin roles"), h("div", {}, (info.adminRoles || []).join(", ") || "none")),
      h("div", { class: "card" }, h("div", { class: "label" }, "Allowed clusters"), h("div", {}, (info.allowedClusters || []).join(", ") || "none"))),
    h("h2", {}, `Namespaces (${namespaces.length})`),
    table("Namespaces", [{ label: "Namespace" }, { label: "Actions" }], rows, "No namespaces yet."),
    form,
    readOnlyNotice(su, "delete this tenant"),
    h("div", { class: "actions" }, guard(h("button", { type: "button", class: "danger", onclick: () => confirmed(
      `Delete tenant ${tenant}? It must have no namespaces.`, `Tenant ${tenant} deleted`,
      () => del(`/admin/v2/tenants/${t}`), async () => { await refreshTree(); go("/console/tenants"); }) }, "Delete tenant"), su)));
  return { node, title: `Tenant ${tenant}` };
}

// The console's entry point: the router (history API, one URL per view), the tree and the pollers.
import { onLoginNeeded } from "./api.js";
import { forgetAccess } from "./access.js";
import { h, replace } from "./dom.js";
import { askLogin, setupLogin, setupTheme } from "./ui.js";
import { refreshTree, setupTree } from "./tree.js";
import { overviewView, startBrokerSampling } from "./views/overview.js";
import { tenantsView, tenantView } from "./views/tenants.js";
import { namespaceView } from "./views/namespace.js";
import { topicView } from "./views/topic.js";

const ROUTES = [
  [/^\/console\/?$/, "overview", () => overviewView()],
  [/^\/console\/tenants\/?$/, "tenants", () => tenantsView()],
  [/^\/console\/tenants\/([^/]+)\/?$/, "tenants", (m) => tenantView(m[1])],
  [/^\/console\/namespaces\/([^/]+)\/([^/]+)\/?$/, "tenants", (m, q) => namespaceView(m[1], m[2], q)],
  [/^\/console\/topics\/(persistent|non-persistent)\/([^/]+)\/([^/]+)\/([^/]+)\/?$/, "tenants",
    (m, q) => topicView({ domain: m[1], tenant: m[2], namespace: m[3], topic: m[4] }, q)],
];

let cleanup = null;

/** Draw the view the current URL names. */
export async function render() {
  if (cleanup) { cleanup(); cleanup = null; }
  forgetAccess();
  const main = document.getElementById("main");
  const path = location.pathname;
  const href = location.href;
  const query = new URLSearchParams(location.search);
  for (const [pattern, section, view] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    const decoded = m.map((part, i) => (i ? decodeURIComponent(part) : part));
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === section) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    }
    replace(main, h("p", { class: "muted" }, "Loading…"));
    try {
      const result = await view(decoded, query);
      if (href !== location.href) {
        if (result && result.cleanup) result.cleanup();
        return;
      }
      replace(main, result.node);
      cleanup = result.cleanup || null;
      document.title = `${result.title} · magnetar console`;
    } catch (err) {
      replace(main, h("h1", {}, "Cannot show this page"),
        h("p", { class: "notice error", role: "alert" }, `${err.status ? `${err.status}: ` : ""}${err.reason || err.message}`));
    }
    refreshTree(false);
    return;
  }
  replace(main, h("h1", {}, "Not found"), h("p", {}, "No console page lives at this address."));
}

/** Go to a console URL without reloading the page. */
export function navigate(url, replaceState = false) {
  if (replaceState) history.replaceState(null, "", url); else history.pushState(null, "", url);
  render().then(() => {
    const main = document.getElementById("main");
    const heading = main.querySelector("h1");
    if (heading && !main.contains(document.activeElement)) { heading.tabIndex = -1; heading.focus({ preventScroll: true }); }
  });
}

document.addEventListener("click", (event) => {
  const a = event.target.closest("a[data-link]");
  if (!a || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return;
  event.preventDefault();
  navigate(a.getAttribute("href"));
});
document.addEventListener("navigate", (event) => navigate(event.detail.url, event.detail.replace));
window.addEventListener("popstate", () => render());
document.addEventListener("credentialschange", () => { refreshTree(true); render(); });

setupTheme();
setupLogin();
onLoginNeeded(() => askLogin("The broker refused the request without credentials (401). Sign in to go on."));
setupTree();
startBrokerSampling();
render();

// What the signed-in role may do, asked of the admin REST API itself: there is no "my permissions"
// route in Pulsar's API, so each question is a read that only a role with that right may make, and a
// 403 on it means no. Any other answer (200, 404, a network error) does not decide: the action stays
// enabled and the broker has the last word.
import { authorization, call } from "./api.js";
import { h } from "./dom.js";

const answers = new Map();

/** {allowed: bool, reason: the broker's refusal or ""} of one probing read, remembered per credentials. */
async function probe(path) {
  const key = `${authorization() || ""} ${path}`;
  if (!answers.has(key)) {
    answers.set(key, call("GET", path, { quiet: true }).then(
      () => ({ allowed: true, reason: "" }),
      (err) => ({ allowed: err.status !== 403 && err.status !== 401, reason: err.status ? `${err.status} ${err.reason}` : "" })));
  }
  return answers.get(key);
}

/** Superusers only may list tenants (and create or delete them). */
export function superUser() { return probe("/admin/v2/tenants"); }

/** A tenant's admins (and superusers) may list its namespaces, and so create and delete namespaces and
 * topics, read and change policies, terminate and compact. */
export function tenantAdmin(tenant) { return probe(`/admin/v2/namespaces/${encodeURIComponent(tenant)}`); }

/** A role with consume (or a tenant admin) may list a topic's subscriptions, and so skip, clear, reset,
 * expire, unsubscribe, subscribe and peek. `base` is the topic's admin path. */
export function consumer(base) { return probe(`${base}/subscriptions`); }

/** Forget every answer (the credentials changed). */
export function forgetAccess() { answers.clear(); }

/** Disable `button` when `access` refuses, saying why in its tooltip; returns the button. */
export function guard(button, access) {
  if (access && !access.allowed) {
    button.disabled = true;
    button.title = `Not allowed for this role: ${access.reason}`;
  }
  return button;
}

/** A notice saying what this role may not do here and the broker's reason, or null when it may. */
export function readOnlyNotice(access, what) {
  if (!access || access.allowed) return null;
  return h("p", { class: "notice", "data-access": "refused" }, `This role may not ${what}. `,
    h("span", { class: "muted" }, `The broker said ${access.reason}.`));
}

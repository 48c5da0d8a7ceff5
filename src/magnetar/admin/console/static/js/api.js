// The admin REST API as the console calls it: same paths as `magnetar admin`, credentials as a header.

const AUTH_KEY = "magnetar.authorization";

/** A refusal of the API: HTTP status and Pulsar's reason. */
export class ApiError extends Error {
  constructor(status, reason, path) {
    super(reason || `HTTP ${status}`);
    this.status = status;
    this.reason = reason || `HTTP ${status}`;
    this.path = path;
  }
}

let loginHandler = null;

/** Register the function asked for credentials when the API answers 401 (returns true when signed in). */
export function onLoginNeeded(fn) { loginHandler = fn; }

/** The Authorization header value kept for this tab, or null. */
export function authorization() { return sessionStorage.getItem(AUTH_KEY); }

/** Keep credentials for this tab: {token} or {user, password}; null signs out. */
export function setCredentials(creds) {
  if (!creds) sessionStorage.removeItem(AUTH_KEY);
  else if (creds.token) sessionStorage.setItem(AUTH_KEY, `Bearer ${creds.token.trim()}`);
  else sessionStorage.setItem(AUTH_KEY, `Basic ${btoa(`${creds.user}:${creds.password}`)}`);
}

/** Call the API: method, path, {body (JSON), query, raw, quiet (no sign-in prompt on 401)}. Returns JSON, text or null. */
export async function call(method, path, options = {}, retried = false) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(options.query || {})) if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  const headers = { Accept: "application/json" };
  const auth = authorization();
  if (auth) headers.Authorization = auth;
  let body;
  if (options.body !== undefined) { headers["Content-Type"] = "application/json"; body = JSON.stringify(options.body); }
  const response = await fetch(url, { method, headers, body, credentials: "omit", cache: "no-store" });
  if (response.status === 401 && !retried && !options.quiet && loginHandler && (await loginHandler(path))) {
    return call(method, path, options, true);
  }
  if (!response.ok) {
    let reason = response.statusText;
    try {
      const data = await response.json();
      reason = data.reason || data.detail || reason;
      if (typeof reason !== "string") reason = JSON.stringify(reason);
    } catch { /* not JSON */ }
    throw new ApiError(response.status, reason, path);
  }
  if (options.raw) return response;
  if (response.status === 204) return null;
  const type = response.headers.get("content-type") || "";
  return type.includes("json") ? response.json() : response.text();
}

export const get = (path, query) => call("GET", path, { query });
/** GET for background polling: a 401 does not open the sign-in dialog. */
export const poll = (path, query) => call("GET", path, { query, quiet: true });
export const put = (path, body, query) => call("PUT", path, { body, query });
export const post = (path, body, query) => call("POST", path, { body, query });
export const del = (path, query) => call("DELETE", path, { query });

/** Path pieces of a topic: {domain, tenant, namespace, topic} -> "persistent/t/ns/topic". */
export function topicPath(t) {
  return [t.domain, t.tenant, t.namespace, t.topic].map(encodeURIComponent).join("/");
}

/** The full name persistent://t/ns/topic of a topic from a listing, split into its pieces. */
export function parseTopic(full) {
  const m = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/(.+)$/.exec(full);
  return m ? { domain: m[1], tenant: m[2], namespace: m[3], topic: m[4] } : null;
}

/** Prometheus text as {name: [{labels, value}]}. */
export function parseMetrics(text) {
  const out = {};
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[2]) for (const lm of m[2].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[lm[1]] = lm[2];
    (out[m[1]] ||= []).push({ labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of a metric's samples (optionally only those whose labels match). */
export function metricSum(metrics, name, match = {}) {
  return (metrics[name] || []).filter((s) => Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

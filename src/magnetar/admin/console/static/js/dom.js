// Small DOM helpers: elements are built with textContent only, so no server value is ever parsed as HTML.

/** Create an element: h("a", {href: "/x", class: "c", onclick: fn}, "text", child, [more]). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") el.addEventListener(name.slice(2), value);
    else if (name === "class") el.className = value;
    else if (name === "dataset") Object.assign(el.dataset, value);
    else if (value === true) el.setAttribute(name, "");
    else el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the children of el. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A link handled by the router (no full page load). */
export function link(href, ...children) {
  return h("a", { href, "data-link": true }, ...children);
}

/** A table: columns [{label, num}] and rows of cells. */
export function table(caption, columns, rows, empty = "None") {
  if (!rows.length) return h("p", { class: "muted" }, empty);
  return h("div", { class: "table-wrap" }, h("table", {},
    caption ? h("caption", { class: "sr-only" }, caption) : null,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.num ? "num" : null }, c.label)))),
    h("tbody", {}, rows.map((row) => h("tr", {}, row.map((cell, i) =>
      h("td", { class: columns[i] && columns[i].num ? "num" : null }, cell)))))));
}

/** A labelled stat card. */
export function card(label, value, id) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label),
    h("div", { class: "value", id: id || null, "data-card": label }, value));
}

/** A labelled form field: returns [wrapper, input]. */
export function field(label, attrs = {}, tag = "input") {
  const id = attrs.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  const input = h(tag, { ...attrs, id });
  const error = h("div", { class: "error-text", id: `${id}-error`, "aria-live": "polite" });
  input.setAttribute("aria-describedby", `${id}-error`);
  return [h("div", {}, h("label", { for: id }, label), input, error), input, error];
}

/** A select with options [value, label]. */
export function select(label, options, value, attrs = {}) {
  const [wrap, input, error] = field(label, attrs, "select");
  for (const [v, l] of options) input.append(h("option", { value: v, selected: v === value }, l));
  return [wrap, input, error];
}

/** Numbers for people: 1234567 -> "1.23 M". */
export function human(n, unit = "") {
  if (n === null || n === undefined || Number.isNaN(n)) return "–";
  const abs = Math.abs(n);
  const scaled = abs >= 1e9 ? [n / 1e9, " G"] : abs >= 1e6 ? [n / 1e6, " M"] : abs >= 1e3 ? [n / 1e3, " k"] : [n, " "];
  const digits = Number.isInteger(scaled[0]) ? 0 : 2;
  return `${scaled[0].toFixed(digits)}${scaled[1]}${unit}`.trim();
}

/** Bytes for people. */
export function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  let v = n;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i += 1; }
  return `${i ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

/** A time in ms since the epoch as local ISO-like text. */
export function when(ms) {
  if (!ms) return "–";
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? String(ms) : d.toLocaleString();
}

/** A duration in seconds as "1d 2h 3m 4s". */
export function duration(seconds) {
  let s = Math.floor(seconds);
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (s >= size) { parts.push(`${Math.floor(s / size)}${unit}`); s %= size; }
  }
  parts.push(`${s}s`);
  return parts.join(" ");
}

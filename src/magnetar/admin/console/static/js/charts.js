// Live charts: uPlot (vendored, MIT) over a ring of samples for the last minutes, seeded on load with
// the history the broker keeps (/magnetar/v1/history) and extended by the page's own polling.
import uPlot from "../vendor/uPlot.esm.js";
import { h } from "./dom.js";

/** How long samples are kept, in seconds. */
export const WINDOW_SECONDS = 600;

/** Samples of several series over time: add(values) once per poll. */
export class SeriesBuffer {
  constructor(names) {
    this.names = names;
    this.times = [];
    this.values = names.map(() => []);
  }

  add(values, at = Date.now() / 1000) {
    this.times.push(at);
    values.forEach((v, i) => this.values[i].push(v));
    while (this.times.length && this.times[0] < at - WINDOW_SECONDS) {
      this.times.shift();
      this.values.forEach((s) => s.shift());
    }
  }

  /** Seed an empty buffer with the broker's history ({t: [...], name: [...]}, oldest first);
   * `fields` are the history's names for this buffer's series, in order. */
  seed(history, fields) {
    if (this.times.length || !history || !Array.isArray(history.t)) return;
    history.t.forEach((at, i) => this.add(fields.map((f) => Number(history[f]?.[i] ?? 0)), at));
  }

  data() { return [this.times, ...this.values]; }
}

/** "14:05" (or "14:05:30" when ticks are less than a minute apart): short labels that do not run together. */
function timeLabels(u, splits) {
  const step = splits.length > 1 ? splits[1] - splits[0] : 60;
  return splits.map((s) => {
    const d = new Date(s * 1000);
    const hm = `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
    return step < 60 ? `${hm}:${String(d.getSeconds()).padStart(2, "0")}` : hm;
  });
}

function color(i) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--chart-${(i % 4) + 1}`).trim() || "#2456c7";
}

/** A titled live chart of a SeriesBuffer; update() redraws with the latest samples. */
export class LiveChart {
  constructor(title, buffer, unit = "") {
    this.buffer = buffer;
    this.unit = unit;
    this.body = h("div", { role: "img", "aria-label": `${title}: chart of the last ${WINDOW_SECONDS / 60} minutes` });
    this.el = h("figure", { class: "chart", "data-chart": title }, h("h3", {}, title), this.body);
    this.plot = null;
    this.onTheme = () => this.rebuild();
    window.addEventListener("themechange", this.onTheme);
  }

  options() {
    // the card's inner width (padding and border off), so the plot and its legend stay inside it
    const width = Math.max(240, (this.el.clientWidth || 360) - 20);
    const axis = { stroke: getComputedStyle(document.documentElement).getPropertyValue("--muted").trim(),
      grid: { stroke: "rgba(128,128,128,.15)" }, ticks: { stroke: "rgba(128,128,128,.25)" } };
    const unit = this.unit;
    return {
      width, height: 170,
      series: [{}, ...this.buffer.names.map((name, i) => ({ label: name, stroke: color(i), width: 1.5,
        value: (u, v) => (v === null || v === undefined ? "–" : `${v.toFixed(v < 10 ? 2 : 0)} ${unit}`) }))],
      // x: at least 90 px between time labels, "HH:MM"; y: room for "12.3k"
      axes: [{ ...axis, space: 90, values: timeLabels }, { ...axis, size: 56 }],
      legend: { live: true },
      scales: { x: { time: true, range: () => this.timeRange() }, y: { range: (u, min, max) => [0, Math.max(1, max * 1.1)] } },
      cursor: { drag: { x: false, y: false } },
    };
  }

  /** The x range: the samples kept, at least the last minute (uPlot would widen a single sample to years). */
  timeRange() {
    const times = this.buffer.times;
    const last = times.length ? times[times.length - 1] : Date.now() / 1000;
    return [Math.min(times.length ? times[0] : last, last - 60), last];
  }

  rebuild() {
    if (!this.el.isConnected) { window.removeEventListener("themechange", this.onTheme); return; }
    if (this.plot) this.plot.destroy();
    this.plot = new uPlot(this.options(), this.buffer.data(), this.body);
    this.el.dataset.samples = String(this.buffer.times.length);
  }

  update() {
    if (!this.el.isConnected) return;
    if (!this.plot) this.rebuild();
    else this.plot.setData(this.buffer.data());
    this.el.dataset.samples = String(this.buffer.times.length);
  }
}

// Live charts: uPlot (vendored, MIT) over a ring of samples kept in the page for the last minutes.
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

  data() { return [this.times, ...this.values]; }
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
    const width = Math.max(280, (this.el.clientWidth || 360) - 16);
    const axis = { stroke: getComputedStyle(document.documentElement).getPropertyValue("--muted").trim(),
      grid: { stroke: "rgba(128,128,128,.15)" }, ticks: { stroke: "rgba(128,128,128,.25)" } };
    const unit = this.unit;
    return {
      width, height: 170,
      series: [{}, ...this.buffer.names.map((name, i) => ({ label: name, stroke: color(i), width: 1.5,
        value: (u, v) => (v === null || v === undefined ? "–" : `${v.toFixed(v < 10 ? 2 : 0)} ${unit}`) }))],
      axes: [axis, { ...axis, size: 56 }],
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
  }

  update() {
    if (!this.el.isConnected) return;
    if (!this.plot) this.rebuild();
    else this.plot.setData(this.buffer.data());
  }
}

// A topic's messages: peek a subscription, browse by position or time, produce a test message.
import { call, get, topicPath } from "../api.js";
import { field, h, replace, select, when } from "../dom.js";
import { act } from "../ui.js";
import { guard } from "../access.js";

function valueBlock(m) {
  if (m.encoding === "bytes" || m.encoding === "unreadable") {
    return [m.error ? h("p", { class: "notice error" }, m.error) : null,
      m.hex !== undefined ? [h("div", { class: "label" }, "Hex"), h("pre", { class: "mono", "data-hex": true }, m.hex.replace(/(..)/g, "$1 ").trim())] : null,
      m.text !== undefined ? [h("div", { class: "label" }, "Text"), h("pre", { class: "mono", "data-text": true }, m.text)] : null];
  }
  const shown = m.encoding === "string" ? m.value : JSON.stringify(m.value, null, 2);
  return h("pre", { class: "mono", "data-value": true }, shown ?? "null");
}

/** One decoded message as a card. */
export function messageCard(m) {
  const props = Object.entries(m.properties || {});
  const id = m.batchIndex === null || m.batchIndex === undefined ? m.messageId : `${m.messageId} #${m.batchIndex}`;
  return h("article", { class: "message", "data-message-id": m.messageId, "aria-label": `Message ${id}` },
    h("div", { class: "meta" },
      h("span", {}, "id ", h("b", {}, id)),
      h("span", {}, "key ", h("b", { "data-key": true }, m.key ?? "–")),
      h("span", {}, "published ", h("b", {}, when(m.publishTime))),
      m.eventTime ? h("span", {}, "event ", h("b", {}, when(m.eventTime))) : null,
      h("span", {}, "producer ", h("b", {}, m.producerName || "–")),
      h("span", {}, "encoding ", h("b", {}, `${m.encoding}${m.schemaVersion !== null && m.schemaVersion !== undefined ? ` (schema v${m.schemaVersion})` : ""}`)),
      h("span", {}, "size ", h("b", {}, `${m.size ?? 0} B`))),
    props.length ? h("div", { class: "meta" }, "properties ", props.map(([k, v]) => h("code", { "data-property": k }, `${k}=${v}`))) : null,
    valueBlock(m));
}

function readerForm(t, subs, query, show, consume) {
  const mode = query.get("sub") ? "peek" : "browse";
  const [subWrap, subInput] = select("Subscription", subs.map((s) => [s, s]), query.get("sub") || subs[0], { name: "sub", disabled: !subs.length });
  const [startWrap, startInput, startError] = field("From (earliest, latest, ledger:entry, or a date and time)", { name: "start", value: query.get("start") || "earliest" });
  const [countWrap, countInput, countError] = field("How many", { type: "number", name: "count", min: 1, max: 100, value: query.get("count") || 10 });
  const modeSelect = select("Read", [["peek", "Peek a subscription's next messages"], ["browse", "Browse the topic"]], mode, { name: "mode" });
  const sync = () => { subWrap.hidden = modeSelect[1].value !== "peek"; startWrap.hidden = modeSelect[1].value === "peek"; };
  modeSelect[1].addEventListener("change", sync);
  sync();
  const form = h("form", { novalidate: true, class: "panel", "aria-label": "Read messages", onsubmit: async (e) => {
    e.preventDefault();
    const count = Number(countInput.value);
    countError.textContent = Number.isInteger(count) && count >= 1 && count <= 100 ? "" : "From 1 to 100.";
    if (countError.textContent) return;
    const params = new URLSearchParams({ tab: "messages", count: String(count) });
    if (modeSelect[1].value === "peek") params.set("sub", subInput.value);
    else {
      const start = startInput.value.trim() || "earliest";
      const ok = /^(earliest|latest|\d+:\d+)$/i.test(start) || !Number.isNaN(Date.parse(start));
      startError.textContent = ok ? "" : "earliest, latest, ledger:entry, or a date and time.";
      if (!ok) return;
      params.set("start", start);
    }
    history.replaceState(null, "", `${location.pathname}?${params}`);
    await show(params);
  } }, h("div", { class: "form-row" }, modeSelect[0], subWrap, startWrap, countWrap,
    h("div", {}, guard(h("button", { type: "submit" }, "Show messages"), consume))));
  return form;
}

function produceForm(t, after) {
  const [keyWrap, keyInput] = field("Key (optional)", { name: "key", autocomplete: "off" });
  const [propsWrap, propsInput, propsError] = field("Properties (one name=value a line)", { name: "properties", rows: 2 }, "textarea");
  const [valueWrap, valueInput, valueError] = field("Value", { name: "value", rows: 4, required: true }, "textarea");
  return h("form", { novalidate: true, class: "panel", "aria-labelledby": "produce-title", onsubmit: async (e) => {
    e.preventDefault();
    const properties = {};
    let bad = "";
    for (const line of propsInput.value.split("\n").map((l) => l.trim()).filter(Boolean)) {
      const i = line.indexOf("=");
      if (i < 1) { bad = `"${line}" is not name=value.`; break; }
      properties[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    propsError.textContent = bad;
    valueError.textContent = valueInput.value === "" ? "Give the message a value." : "";
    if (bad || valueError.textContent) return;
    const message = { payload: valueInput.value, properties };
    if (keyInput.value) message.key = keyInput.value;
    await act("Message published", () => call("POST", `/topics/${topicPath(t)}`, { body: { messages: [message] } }), after);
  } }, h("h2", { id: "produce-title" }, "Produce a test message"),
  h("p", { class: "muted" }, "Sent with the topic's schema: JSON text for JSON and Avro topics, text otherwise."),
  h("div", { class: "form-row" }, keyWrap, propsWrap), valueWrap, h("div", { class: "row-end" }, h("button", { type: "submit" }, "Publish")));
}

/** The messages panel of a non-partitioned topic. */
export async function messagesPanel(t, subs, query, consume) {
  const list = h("div", { id: "messages", "aria-live": "polite" });
  const show = async (params) => {
    const q = { count: params.get("count") || 10 };
    if (params.get("sub")) q.subscription = params.get("sub");
    else {
      const start = params.get("start") || "earliest";
      q.start = /^(earliest|latest|\d+:\d+)$/i.test(start) ? start : String(Date.parse(start));
    }
    try {
      const messages = await get(`/magnetar/v1/messages/${topicPath(t)}?${new URLSearchParams(q)}`);
      replace(list, h("p", { class: "muted" }, `${messages.length} message(s)`), messages.map(messageCard));
    } catch (err) {
      replace(list, h("p", { class: "notice error", role: "alert" }, `${err.status}: ${err.reason}`));
    }
  };
  if (!consume || consume.allowed) await show(query);
  return h("div", {}, readerForm(t, subs, query, show, consume), list, produceForm(t, () => show(new URLSearchParams(location.search))));
}

// Small helpers for building the DOM safely (text is always text: no innerHTML anywhere, and
// no inline styles, so the strict Content-Security-Policy holds) and for showing times.

/** An element: h("a", {href: "/s/x", class: "id"}, "text", child, ...). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** An SVG element, for the pulse charts. */
export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children.flat()) if (child) el.append(child);
  return el;
}

/** "4s", "3m 20s", "2h 5m": a duration in milliseconds, short. */
export function duration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "";
  const s = Math.max(0, Math.round(ms / 1000));
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

/** How long ago an RFC 3339 time was, short ("12s ago"). */
export function ago(time, now = Date.now()) {
  const at = Date.parse(time);
  return Number.isFinite(at) ? `${duration(now - at)} ago` : "";
}

/** The wall-clock part of an RFC 3339 time, with milliseconds. */
export function clock(time) {
  const match = /T(\d\d:\d\d:\d\d(\.\d+)?)/.exec(time || "");
  return match ? match[1] : time || "";
}

/** A short piece of text, cut with an ellipsis. */
export function clip(text, max) {
  const one = String(text ?? "").replace(/\s+/g, " ").trim();
  return one.length > max ? `${one.slice(0, max - 1)}…` : one;
}

/** Calls `fn` once, `ms` after the first of a burst of calls. */
export function coalesce(ms, fn) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };
}

/** A table of rows (objects) with the given columns: [key, heading, render?]. */
export function table(rows, columns, empty = "none") {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h(
    "table",
    {},
    h("thead", {}, h("tr", {}, columns.map(([, heading]) => h("th", {}, heading)))),
    h(
      "tbody",
      {},
      rows.map((row) =>
        h("tr", {}, columns.map(([key, , render]) => h("td", {}, render ? render(row) : row[key] ?? "")))
      )
    )
  );
}

/** Runs `draw` (which replaces elements), then gives the focus back to the element that had it
 * if `draw` put that same node back in the page: a panel kept across redraws keeps the focus
 * and the caret of the person typing in it. */
export function keepingFocus(draw) {
  const had = document.activeElement;
  const caret = had instanceof HTMLInputElement ? [had.selectionStart, had.selectionEnd] : null;
  draw();
  if (!had || had === document.body || had === document.activeElement || !had.isConnected) return;
  had.focus({ preventScroll: true });
  if (caret && caret[0] !== null) had.setSelectionRange(caret[0], caret[1]);
}

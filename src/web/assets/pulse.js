// The pulse: events per minute of each session over the last hour. It starts from
// GET /pulse and then counts the events the board's stream delivers (those after the
// answer's headSequence), so it is never counted twice.

import { svg } from "./dom.js";

const MINUTE = 60_000;

export class Pulse {
  constructor(answer) {
    this.from = Date.parse(answer.from);
    this.minutes = answer.minutes;
    this.head = answer.headSequence;
    this.counts = new Map(answer.sessions.map((s) => [s.sessionId, s.counts.slice()]));
  }

  /** Moves the window so that its last minute is the current one. */
  roll(now = Date.now()) {
    const shift = Math.floor((now - this.from) / MINUTE) - (this.minutes - 1);
    if (shift <= 0) return;
    for (const counts of this.counts.values()) {
      counts.splice(0, Math.min(shift, counts.length));
      while (counts.length < this.minutes) counts.push(0);
    }
    this.from += shift * MINUTE;
  }

  /** Counts one event of the board's stream. */
  add(envelope) {
    const { sequence, sessionId, receivedAt } = envelope.context;
    if (sequence <= this.head || !sessionId) return;
    this.roll(Math.max(Date.now(), Date.parse(receivedAt)));
    const minute = Math.floor((Date.parse(receivedAt) - this.from) / MINUTE);
    if (minute < 0 || minute >= this.minutes) return;
    if (!this.counts.has(sessionId)) this.counts.set(sessionId, new Array(this.minutes).fill(0));
    this.counts.get(sessionId)[minute] += 1;
  }

  of(sessionId) {
    return this.counts.get(sessionId) || new Array(this.minutes).fill(0);
  }

  total() {
    const sum = new Array(this.minutes).fill(0);
    for (const counts of this.counts.values()) counts.forEach((n, i) => (sum[i] += n));
    return sum;
  }
}

/** A bar chart of per-minute counts, oldest left; `label` is its accessible name. */
export function bars(counts, { width = 180, height = 28, label = "" } = {}) {
  const max = Math.max(1, ...counts);
  const step = width / counts.length;
  const total = counts.reduce((a, b) => a + b, 0);
  const chart = svg("svg", {
    class: "pulse",
    viewBox: `0 0 ${width} ${height}`,
    width,
    height,
    role: "img",
    "aria-label": `${label} ${total} events in the last ${counts.length} minutes`,
  });
  counts.forEach((n, i) => {
    if (!n) return;
    const h = Math.max(1, (n / max) * (height - 2));
    const bar = svg("rect", { x: i * step, y: height - h, width: Math.max(1, step - 1), height: h });
    bar.append(svg("title", {}, document.createTextNode(`${n} events`)));
    chart.append(bar);
  });
  return chart;
}

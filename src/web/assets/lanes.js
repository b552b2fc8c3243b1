// A session's tool calls as a picture: bars on a time axis, one lane per agent (the main
// thread, then each subagent), coloured by status, the spans it waited for a person shaded.
// Hover a bar for the call; click it to open the call's row. It is drawn from a bounded
// summary: a call too short to see at this width is merged with the short calls it overlaps
// into one bar ("37 calls, 2 failed"), so a busy session draws far fewer bars than calls.
// The axis is the session's busy time: more than five minutes with no tool call running (a
// night, a session resumed next week) is a narrow break marked "⋯", so the calls stay wide
// enough to see.

import { clock, duration, h, svg } from "./dom.js";

const LANE = 18; // px per lane
const AXIS = 16; // px for the time axis
const LABEL = 110; // px for the lanes' names
const WIDE = 3; // px: a bar narrower than this is merged with the short bars it overlaps
const MIN = 2; // px: the narrowest bar drawn
const IDLE = 5 * 60 * 1000; // ms: a quiet spell longer than this is drawn as a narrow break
const BREAK = 14; // px: the width of such a break
const STATUS_WORD = { ok: "✓ ok", failed: "✗ failed", interrupted: "⊘ interrupted", running: "⋯ running" };
const WORST = ["ok", "running", "interrupted", "failed"];

export class Lanes {
  /** `timeline`: the Timeline whose calls are drawn; `open(seq)`: opens an event's row. */
  constructor(timeline, open) {
    this.timeline = timeline;
    this.open = open;
    this.el = h("div", { class: "lanes", id: "lanes", "aria-label": "tool calls on a time axis" });
    this.pending = null;
    new ResizeObserver(() => this.schedule()).observe(this.el);
  }

  /** Redraws at most every quarter of a second, however fast events come. */
  schedule() {
    if (this.pending) return;
    this.pending = setTimeout(() => {
      this.pending = null;
      this.draw();
    }, 250);
  }

  draw() {
    const { bars, waits, agents } = this.timeline;
    if (bars.size === 0) {
      this.el.replaceChildren(h("p", { class: "empty" }, "No tool call yet."));
      return;
    }
    const lanes = [null, ...agents.keys()];
    const laneOf = new Map(lanes.map((agent, i) => [agent, i]));
    const now = Date.now();
    const intervals = [];
    for (const bar of bars.values()) {
      if (Number.isNaN(bar.start)) continue;
      intervals.push([bar.start, Number.isNaN(bar.end) ? bar.start : bar.end]);
    }
    if (intervals.length === 0) return;
    const last = this.timeline.all[this.timeline.all.length - 1];
    if (last && Number.isFinite(last.at)) intervals.push([last.at, last.at]);
    const width = Math.max(200, this.el.clientWidth - 2);
    const axis = new Axis(intervals, LABEL, width - LABEL);
    const x = (t) => axis.x(t);
    const from = axis.from;
    const to = axis.to;
    const height = AXIS + lanes.length * LANE;
    const shapes = [];

    for (const wait of waits) {
      const end = Number.isNaN(wait.end) ? to : wait.end;
      shapes.push(
        svg("rect", { class: "wait", x: x(wait.start), y: AXIS, width: Math.max(2, x(end) - x(wait.start)), height: lanes.length * LANE },
          svg("title", {}, document.createTextNode(`waited for a person ${duration(end - wait.start)} from ${clock(new Date(wait.start).toISOString())}`)))
      );
    }
    lanes.forEach((agent, i) => {
      const name = agent === null ? "main" : `↳ ${agents.get(agent).label}`;
      shapes.push(svg("text", { class: "lane-name", x: 2, y: AXIS + i * LANE + 13 }, document.createTextNode(name)));
    });

    // Per lane, calls in time order; short ones merged while they touch.
    const perLane = lanes.map(() => []);
    for (const [id, bar] of bars) {
      if (Number.isNaN(bar.start)) continue;
      perLane[laneOf.get(bar.agent) ?? 0].push([id, bar]);
    }
    let drawn = 0;
    perLane.forEach((calls, lane) => {
      calls.sort((a, b) => a[1].start - b[1].start);
      let group = null;
      const flush = () => {
        if (group) shapes.push(this.shape(group, lane, lanes[lane]));
        group = null;
      };
      for (const [id, bar] of calls) {
        const x0 = x(bar.start);
        const running = this.timeline.statusOf(bar) === "running";
        const x1 = x(Number.isNaN(bar.end) ? (running ? Math.min(now, to) : bar.start) : bar.end);
        if (x1 - x0 >= WIDE) {
          flush();
          shapes.push(this.shape({ x0, x1, calls: [[id, bar]] }, lane, lanes[lane]));
        } else if (group && x0 < group.x1) {
          group.x1 = Math.max(group.x1, x1, x0 + MIN);
          group.calls.push([id, bar]);
        } else {
          flush();
          group = { x0, x1: Math.max(x1, x0 + MIN), calls: [[id, bar]] };
        }
      }
      flush();
      drawn += calls.length;
    });
    shapes.push(
      svg("text", { class: "axis", x: LABEL, y: 11 }, document.createTextNode(clock(new Date(from).toISOString()))),
      svg("text", { class: "axis", x: width - 2, y: 11, "text-anchor": "end" }, document.createTextNode(`${clock(new Date(to).toISOString())} (${duration(axis.active)} busy)`))
    );
    for (const gap of axis.gaps) {
      shapes.push(
        svg("text", { class: "gap", x: gap.x, y: AXIS + lanes.length * LANE - 3, "text-anchor": "middle" },
          document.createTextNode("⋯"),
          svg("title", {}, document.createTextNode(`nothing for ${duration(gap.idle)}`)))
      );
    }
    const picture = svg("svg", { class: "lanes-chart", width, height, role: "img", "aria-label": `${drawn} tool calls in ${lanes.length} lanes` }, shapes);
    this.el.dataset.calls = String(drawn);
    this.el.replaceChildren(picture);
  }

  /** One bar: a call, or calls merged; coloured by the worst status among them. */
  shape(group, lane, agent) {
    const statuses = group.calls.map(([, bar]) => this.timeline.statusOf(bar));
    const worst = statuses.reduce((a, b) => (WORST.indexOf(b) > WORST.indexOf(a) ? b : a), "ok");
    const first = group.calls[0][1];
    let title;
    if (group.calls.length === 1) {
      const took = Number.isNaN(first.end) ? "" : ` ${duration(first.end - first.start)}`;
      const at = Number.isNaN(first.start) ? "" : ` · at ${clock(new Date(first.start).toISOString())}`;
      const status = statuses[0];
      title = `${first.text}${at} · ${STATUS_WORD[status] || status}${took} · #${first.seq}`;
    } else {
      const failed = statuses.filter((s) => s === "failed").length;
      title = `${group.calls.length} calls${failed ? `, ${failed} failed` : ""}, from #${first.seq}`;
    }
    const attrs = {
      class: `bar s-${worst}`,
      x: group.x0,
      y: AXIS + lane * LANE + 3,
      width: Math.max(1, group.x1 - group.x0),
      height: LANE - 6,
      "data-lane": agent ?? "main",
      "data-calls": group.calls.length,
    };
    if (group.calls.length === 1) attrs["data-call"] = group.calls[0][0];
    const rect = svg("rect", attrs, svg("title", {}, document.createTextNode(title)));
    rect.addEventListener("click", () => this.open(first.seq));
    return rect;
  }
}

/** Time to x: the busy spans side by side, the quiet spells between them BREAK px wide. */
class Axis {
  constructor(intervals, left, plot) {
    intervals.sort((a, b) => a[0] - b[0]);
    const spans = [];
    for (const [start, end] of intervals) {
      const last = spans[spans.length - 1];
      if (last && start - last[1] <= IDLE) last[1] = Math.max(last[1], end);
      else spans.push([start, end]);
    }
    this.from = spans[0][0];
    this.to = spans[spans.length - 1][1];
    this.active = spans.reduce((sum, [start, end]) => sum + (end - start), 0);
    const room = Math.max(plot / 2, plot - (spans.length - 1) * BREAK);
    const gap = spans.length > 1 ? (plot - room) / (spans.length - 1) : 0;
    // A span of no length still gets a little room, so its calls are not drawn on one line.
    const floor = Math.max(this.active, 1) / (spans.length * 20);
    const lengths = spans.map(([start, end]) => Math.max(end - start, floor));
    const total = lengths.reduce((a, b) => a + b, 0);
    let x = left;
    this.spans = spans.map(([start, end], i) => {
      const w = (lengths[i] / total) * room;
      const span = { start, end, x, w, length: lengths[i] };
      x += w + gap;
      return span;
    });
    this.gap = gap;
    this.gaps = this.spans.slice(1).map((span, i) => ({ x: span.x - gap / 2, idle: span.start - this.spans[i].end }));
  }

  x(t) {
    const spans = this.spans;
    let lo = 0;
    let hi = spans.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (spans[mid].start <= t) lo = mid;
      else hi = mid - 1;
    }
    const span = spans[lo];
    if (t <= span.start) return span.x;
    if (t <= span.start + span.length) return span.x + ((t - span.start) / span.length) * span.w;
    const next = spans[lo + 1];
    if (!next) return span.x + span.w;
    return span.x + span.w + ((t - span.end) / (next.start - span.end)) * this.gap;
  }
}

// The replay scrubber: the projections as they stood after event N of the session, from
// GET /sessions/{id}/projections?until=N (the same code as `hooklog replay --until N`).
// A slider and step buttons pick N among the session's events; ← and → step, Home and End
// jump to the first and last.

import { get } from "./api.js";
import { coalesce, h } from "./dom.js";

export class Replay {
  constructor(sessionId) {
    this.sessionId = sessionId;
    this.positions = []; // the session's events' sequences, in order
    this.index = -1;
    this.stretching = false; // a frame will stretch the slider to the events added
    this.slider = h("input", {
      type: "range",
      min: 0,
      max: 0,
      value: 0,
      id: "replay-slider",
      "aria-label": "event to replay to",
      oninput: () => this.go(Number(this.slider.value)),
    });
    const step = (label, title, to) => h("button", { type: "button", title, onclick: () => this.go(to()) }, label);
    this.label = h("span", { class: "where", id: "replay-where" }, "no events yet");
    this.summary = h("div", { class: "replay-summary" });
    this.lines = h("pre", { id: "replay-lines", class: "replay-lines" });
    this.el = h(
      "section",
      { class: "replay", "aria-label": "replay" },
      h("h2", {}, "Replay"),
      h(
        "div",
        { class: "controls" },
        step("«", "first event (Home)", () => 0),
        step("◀", "previous event (←)", () => this.index - 1),
        this.slider,
        step("▶", "next event (→)", () => this.index + 1),
        step("»", "last event (End)", () => this.positions.length - 1)
      ),
      this.label,
      this.summary,
      h("details", {}, h("summary", {}, "every projection row (as hooklog replay --until prints it)"), this.lines)
    );
    this.fetch = coalesce(120, () => this.load());
    document.addEventListener("keydown", (e) => {
      if (e.target.closest?.("input:not([type=range]), textarea, select")) return;
      const to = { ArrowLeft: this.index - 1, ArrowRight: this.index + 1, Home: 0, End: this.positions.length - 1 }[e.key];
      if (to === undefined) return;
      e.preventDefault();
      this.go(to);
    });
  }

  /** Adds an event; the slider's range follows once a frame (a session's history arrives in
   * bursts of thousands). */
  add(sequence) {
    this.positions.push(sequence);
    if (this.positions.length === 1) this.label.textContent = "pick an event to see the projections after it";
    if (this.stretching) return;
    this.stretching = true;
    requestAnimationFrame(() => this.stretch());
  }

  /** The slider's range: every event added. */
  stretch() {
    this.stretching = false;
    this.slider.max = String(this.positions.length - 1);
  }

  /** Goes to the event of this global sequence. */
  goToSequence(sequence) {
    const index = this.positions.indexOf(sequence);
    if (index >= 0) this.go(index);
  }

  go(index) {
    if (!this.positions.length) return;
    this.index = Math.max(0, Math.min(this.positions.length - 1, index));
    this.stretch();
    this.slider.value = String(this.index);
    this.label.textContent = `after event ${this.index + 1} of ${this.positions.length} (#${this.positions[this.index]})…`;
    this.fetch();
  }

  async load() {
    const until = this.positions[this.index];
    const enc = encodeURIComponent(this.sessionId);
    const answer = await get(`/sessions/${enc}/projections?until=${until}`);
    if (this.positions[this.index] !== until) return; // moved on meanwhile
    this.label.textContent = `after event ${this.index + 1} of ${this.positions.length}: #${answer.position} ${answer.type}`;
    this.lines.textContent = answer.lines.join("\n");
    this.lines.dataset.position = String(answer.position);
    this.summary.replaceChildren(...summarize(answer.tables));
  }
}

/** Heroes, missions and the tools running, as they stood. */
function summarize(tables) {
  const rows = (name) => tables[name] || [];
  const running = rows("tool_uses").filter((t) => t.status === "running");
  const items = (list, text) => (list.length ? h("ul", {}, list.map((r) => h("li", {}, text(r)))) : h("p", { class: "empty" }, "none"));
  return [
    h("h3", {}, "Heroes"),
    items(rows("heroes"), (r) => `${r.id} — ${r.state}${r.active_mission_id !== "NULL" ? ` (mission ${r.active_mission_id})` : ""}`),
    h("h3", {}, "Missions"),
    items(rows("missions"), (r) => `${r.kind} ${r.title !== "NULL" ? `“${r.title}”` : r.id} — ${r.state}`),
    h("h3", {}, "Running then"),
    items(running, (r) => `${r.tool}${r.preview !== "NULL" ? `: ${r.preview}` : ""} (since ${r.started_at})`),
  ];
}

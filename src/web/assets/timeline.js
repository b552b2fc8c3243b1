// A session's timeline: one row per event, in the order things happened, newest at the bottom,
// drawn virtually (only the rows on screen are in the DOM), so a session of 100,000 events
// scrolls as one of 100.
// Tool uses are paired here, Pre with its Post by tool_use_id, to show status and duration.

import { clip, clock, duration, h } from "./dom.js";

const ROW = 26; // px, the height of every row (app.css says the same)
const OVERSCAN = 12;
/** Events after which a tool use still open has been cut short. */
const ENDS_A_TURN = new Set(["Stop", "SessionEnd", "StopFailure", "UserPromptSubmit"]);
const STATUS = {
  ok: "✓ ok",
  failed: "✗ failed",
  interrupted: "⊘ interrupted",
  running: "⋯ running",
};

/** camelCase name -> snake_case name, worked out once per name (rows read ~25 fields each). */
const SNAKE = new Map();

/** A payload field by its camelCase name, else its snake_case one. */
function field(payload, camel) {
  if (payload === null || typeof payload !== "object") return undefined;
  let snake = SNAKE.get(camel);
  if (snake === undefined) {
    snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
    SNAKE.set(camel, snake);
  }
  const value = payload[camel] ?? payload[snake];
  return value === null ? undefined : value;
}

/**
 * The recorder's own bookkeeping, not the agent's doing (how far a transcript was read): hidden
 * unless the reader asks for it.
 */
export const BOOKKEEPING = new Set(["TranscriptRead"]);

/** The tools that start a subagent (Claude Code's `Task`, which some versions name `Agent`). */
const SPAWNS = new Set(["Task", "Agent"]);

/** The events that carry a prompt the person typed: the hook's, and the transcript's record. */
const PROMPTS = new Set(["UserPromptSubmit", "TranscriptPrompt"]);

/** What an event says when its payload has nothing more to tell. */
const PHRASES = {
  Stop: "the turn ended",
  SubagentStop: "a subagent finished",
  SessionStart: "the session started",
  SessionEnd: "the session ended",
  PreCompact: "the context is being compacted",
  TranscriptRead: "hooklog read the transcript",
};

/** The part of a tool's input that says what it works on. */
function detailOf(input) {
  if (!input || typeof input !== "object") return "";
  return input.command || input.file_path || input.filePath || input.path || input.pattern || input.description || input.url || input.query || "";
}

/** One tool call of a transcript: `Read: /w/a.rs`. */
function callText(call) {
  const detail = detailOf(call?.input);
  return `${call?.name || "a tool"}${detail ? `: ${detail}` : ""}`;
}

/** A transcript's tool calls: `Read: /w/a.rs, Bash: ls`. */
function callsOf(calls) {
  if (!Array.isArray(calls) || calls.length === 0) return "";
  return calls.map(callText).join(", ");
}

/** A transcript's tool results: their errors, or how many came back. */
function resultsOf(results) {
  if (!Array.isArray(results) || results.length === 0) return "";
  const failed = results.filter((r) => r?.isError === true);
  if (failed.length) return `✗ ${failed.map((r) => r.error || "failed").join("; ")}`;
  return results.length === 1 ? "✓ a tool result" : `✓ ${results.length} tool results`;
}

/** Token counts: `12 in, 340 out`. */
function tokensOf(usage) {
  if (!usage || typeof usage !== "object") return "";
  const input = usage.inputTokens ?? 0;
  const output = usage.outputTokens ?? 0;
  return input || output ? `${input} in, ${output} out tokens` : "";
}

/** A turn's tokens and cost, as words: `1,234 tokens`, `$0.0123`. */
export function turnUsage(u) {
  const tokens = u.inputTokens + u.outputTokens + u.cacheWrite5mTokens + u.cacheWrite1hTokens + u.cacheReadTokens;
  const cost = u.unpricedModels.length ? `$${u.costUsd.toFixed(4)} + unpriced` : `$${u.costUsd.toFixed(4)}`;
  return [`${tokens.toLocaleString("en")} tokens`, cost];
}

/** The first few plain fields of a payload, `name: value`, for an event nothing above knows. */
function fieldsOf(payload) {
  return Object.entries(payload || {})
    .filter(([, value]) => ["string", "number", "boolean"].includes(typeof value) && value !== "")
    .slice(0, 3)
    .map(([name, value]) => `${name}: ${value}`)
    .join(", ");
}

/** One line saying what an event is about: the first of these it has. Each is worked out
 * only when the ones before it said nothing (100,000 rows are made at once). */
function summary(type, payload) {
  const text = (t) => typeof t === "string" && t.trim() !== "";
  const found = (t) => clip(t, 160);
  const prompt = field(payload, "prompt");
  if (text(prompt)) return found(prompt);
  const tool = field(payload, "tool") || field(payload, "toolName");
  if (text(tool)) {
    const detail = detailOf(field(payload, "toolInput") || {});
    return found(`${tool}${detail ? `: ${detail}` : ""}`);
  }
  const calls = callsOf(field(payload, "toolCalls"));
  const said = [field(payload, "response"), calls && `→ ${calls}`].filter((t) => typeof t === "string" && t).join(" ");
  if (text(said)) return found(said);
  for (const next of [
    () => resultsOf(field(payload, "toolResults")),
    () => field(payload, "message"),
    () => field(payload, "reason"),
    () => field(payload, "agentType"),
    () => field(payload, "source"),
    () => field(payload, "error"),
    () => tokensOf(field(payload, "usage")),
    () => PHRASES[type],
    () => fieldsOf(payload),
  ]) {
    const t = next();
    if (text(t)) return found(t);
  }
  return "(no payload)";
}

/** What the timeline keeps of an event (not its payload: a row opens the full JSON). */
export function rowOf(envelope) {
  const payload = envelope.payload || {};
  const kind = field(payload, "notificationType") || field(payload, "type");
  const permission = envelope.type === "PermissionRequest" || /permission/i.test(String(kind || ""));
  const calls = field(payload, "toolCalls");
  const results = field(payload, "toolResults");
  const response = field(payload, "response");
  const tool = field(payload, "tool") || field(payload, "toolName");
  return {
    seq: envelope.context.sessionSequence,
    sequence: envelope.context.sequence,
    id: envelope.id,
    type: envelope.type,
    time: envelope.context.eventTime,
    at: Date.parse(envelope.context.eventTime),
    summary: summary(envelope.type, payload),
    toolUseId: field(payload, "toolUseId"),
    interrupt: field(payload, "isInterrupt") === true,
    permission,
    status: null,
    pair: null,
    durationMs: null,
    // A transcript's tool calls and results, by tool use id, and whether it says something.
    calls: Array.isArray(calls)
      ? calls
          .filter((c) => typeof c?.id === "string")
          .map((c) => ({ id: c.id, text: callText(c), spawns: SPAWNS.has(c.name) ? String(c.input?.subagent_type || "") : null }))
      : [],
    results: Array.isArray(results)
      ? results.filter((r) => typeof r?.toolUseId === "string").map((r) => ({ id: r.toolUseId, failed: r.isError === true }))
      : [],
    said: typeof response === "string" && response !== "" ? response : null,
    // Whether it only repeats a call another row shows, and the calls it is the row of (see
    // Timeline.fold).
    folded: false,
    told: [],
    // A prompt, as the hook or the transcript tells it (one of them is folded into the other).
    prompt: PROMPTS.has(envelope.type) && typeof field(payload, "prompt") === "string" ? field(payload, "prompt") : null,
    // The subagent it comes from (null: the main thread), and the subagent's type when it says.
    agent: agentOf(payload),
    agentType: field(payload, "agentType") || null,
    // The subagent a Task (Agent) call of the main thread starts, by its type.
    spawns: SPAWNS.has(tool) ? String(field(field(payload, "toolInput"), "subagentType") || "") : null,
    // The turn a prompt opens: its transcript record's id, the key of `GET /usage?by=turn`.
    turnKey: envelope.type === "TranscriptPrompt" ? envelope.id : null,
  };
}

/** The subagent an event comes from: its `agentId`, or a side chain with none. */
function agentOf(payload) {
  const id = field(payload, "agentId");
  if (typeof id === "string" && id) return id;
  return field(payload, "isSidechain") === true ? "subagent" : null;
}

/**
 * The rows on screen are `rows`, the events a reader sees; `all` is every event the stream
 * brought, in order. Each tool call is shown once, on the row of whichever source told of it
 * first (a `PreToolUse` hook, or a transcript's message); the rows that only repeat it (its
 * `PostToolUse`, the hook after the transcript, a transcript's result) are folded into that
 * row, which takes their status and duration. Folded and bookkeeping rows are shown when
 * `everything` is on.
 */
/** Whether row `a` happened before row `b`: by event time, then by position in the session. */
function before(a, b) {
  if (a.at !== b.at && !Number.isNaN(a.at) && !Number.isNaN(b.at)) return a.at < b.at;
  return a.seq < b.seq;
}

export class Timeline {
  constructor(onOpen) {
    this.all = [];
    this.rows = [];
    this.everything = false;
    this.open = new Map(); // tool use id -> the row showing the call, until its Post
    this.calls = new Map(); // tool use id -> the row showing the call
    this.prompts = new Map(); // prompt text -> per source, the rows shown that wait for the other's
    this.turns = []; // the prompt rows shown that open a turn, in order
    this.usage = new Map(); // turn key -> its tokens and cost (a GET /usage?by=turn group)
    this.agents = new Map(); // subagent id -> { label }: its name on its rows and its lane
    this.spawns = []; // the calls that start a subagent, not yet matched with one
    this.bars = new Map(); // tool use id -> { agent, start, end, status, text, seq }: the picture
    this.waits = []; // { start, end }: the spans the session waited for a person
    this.lastEnd = -Infinity; // the time of the main thread's last turn end told
    this.onOpen = onOpen;
    this.selected = null;
    this.stick = true;
    this.spacer = h("div", { class: "spacer" });
    this.el = h("div", { class: "timeline", id: "timeline", role: "list", "aria-label": "events", tabindex: "0" }, this.spacer);
    this.el.addEventListener("scroll", () => {
      this.stick = this.el.scrollTop + this.el.clientHeight >= this.el.scrollHeight - ROW * 2;
      this.schedule();
    });
    this.el.addEventListener("keydown", (e) => {
      const step = { j: 1, k: -1 }[e.key];
      if (step && this.selected !== null) this.select(this.selected + step);
    });
    new ResizeObserver(() => this.schedule()).observe(this.el);
  }

  /** Adds an event's row; returns its index among the rows shown, or -1 when it is not shown. */
  push(row) {
    this.all.push(row);
    this.fold(row);
    this.schedule();
    if (!this.shows(row)) return -1;
    // In the order things happened: a transcript's records arrive after the hooks of the same
    // moment, with their own, earlier, times.
    const at = this.after(this.rows, row);
    this.rows.splice(at, 0, row);
    if (this.selected !== null && at <= this.selected) this.selected += 1;
    return at;
  }

  /** Where `row` goes in `list` (sorted by `before`): after every row not later than it. */
  after(list, row) {
    let at = list.length;
    if (at > 0 && before(row, list[at - 1])) {
      let low = 0;
      while (low < at) {
        const mid = (low + at) >> 1;
        if (before(row, list[mid])) at = mid;
        else low = mid + 1;
      }
    }
    return at;
  }

  /** Pairs a row with the call it tells of, and folds it when it only repeats that call. */
  fold(row) {
    const id = row.toolUseId;
    this.meet(row);
    this.wait(row);
    if (row.type === "PreToolUse" && id) {
      const shown = this.calls.get(id);
      if (shown) {
        row.folded = true;
      } else {
        row.status = "running";
        this.calls.set(id, row);
        this.draw(id, row, row.summary, row.spawns);
      }
      this.open.set(id, shown || row);
    } else if ((row.type === "PostToolUse" || row.type === "PostToolUseFailure") && this.open.has(id)) {
      const call = this.open.get(id);
      this.open.delete(id);
      const told = row.type === "PostToolUse" ? "ok" : row.interrupt ? "interrupted" : "failed";
      // A transcript's error result read first stands: Codex's PostToolUse has no exit code.
      call.status = call.erred && told === "ok" ? "failed" : told;
      call.durationMs = Date.parse(row.time) - Date.parse(call.time);
      Object.assign(row, { status: call.status, durationMs: call.durationMs, pair: call.seq, folded: true });
      call.pair = row.seq;
      this.settle(id, row.at, call.status);
    } else if (ENDS_A_TURN.has(row.type)) {
      if (row.agent === null && !(row.at <= this.lastEnd)) this.lastEnd = row.at;
      for (const [open, call] of this.open) {
        if (call.status === "running") call.status = "interrupted";
        this.end(open, row.at, "interrupted");
      }
      this.open.clear();
    }
    if (row.prompt !== null) {
      // The same prompt from the hook and from the transcript is shown once.
      const waiting = this.prompts.get(row.prompt) || {};
      const other = row.type === "UserPromptSubmit" ? "TranscriptPrompt" : "UserPromptSubmit";
      const shown = waiting[other]?.shift();
      if (shown) {
        row.folded = true;
        shown.turnKey = shown.turnKey || row.turnKey;
      } else {
        (waiting[row.type] ||= []).push(row);
        if (row.agent === null) this.turns.splice(this.after(this.turns, row), 0, row);
      }
      this.prompts.set(row.prompt, waiting);
    }
    if (row.calls.length) {
      const fresh = row.calls.filter((call) => !this.calls.has(call.id));
      for (const call of fresh) {
        this.calls.set(call.id, row);
        this.draw(call.id, row, call.text, call.spawns);
      }
      row.told = fresh.map((call) => call.id);
      if (fresh.length < row.calls.length) {
        // What it says stays; the calls another row shows are not told again.
        if (!row.said && fresh.length === 0) row.folded = true;
        const told = fresh.length ? `→ ${fresh.map((call) => call.text).join(", ")}` : "";
        row.summary = clip([row.said, told].filter(Boolean).join(" "), 160);
      }
    }
    if (row.results.length) {
      let known = 0;
      for (const result of row.results) {
        const call = this.calls.get(result.id);
        if (!call) continue;
        known += 1;
        if (result.failed) {
          // An error result makes a call failed even after a hook said ok (Codex's
          // PostToolUse has no exit code; hooklog's tool uses say the same).
          call.erred = true;
          if (!call.status || call.status === "running" || call.status === "ok") call.status = "failed";
          this.fail(result.id, row.at);
        } else {
          if (!call.status || call.status === "running") call.status = "ok";
          this.end(result.id, row.at, "ok");
        }
      }
      if (known === row.results.length) row.folded = true;
    }
  }

  /** A tool call's bar in the picture, from the row that first told of it. */
  draw(id, row, text, spawns) {
    this.bars.set(id, { agent: row.agent, start: row.at, end: NaN, status: "running", text, seq: row.seq });
    if (spawns !== null && row.agent === null) this.spawns.push({ id, type: spawns });
  }

  /** A call's end, the first time it is told (the hook or the transcript's result). */
  end(id, at, status) {
    const bar = this.bars.get(id);
    if (!bar || bar.status !== "running") return;
    bar.end = at;
    bar.status = status;
  }

  /** A call an error result says failed: its bar too, even one a hook ended as ok. */
  fail(id, at) {
    const bar = this.bars.get(id);
    if (bar?.status === "ok") bar.status = "failed";
    else this.end(id, at, "failed");
  }

  /**
   * A bar's status as drawn: a call only a transcript told, with no result yet, is running
   * until a turn ends after it began, then interrupted (a result read later still decides).
   */
  statusOf(bar) {
    return bar.status === "running" && bar.start < this.lastEnd ? "interrupted" : bar.status;
  }

  /** A call its hook ended: the bar says what the row says, whatever a result said first. */
  settle(id, at, status) {
    const bar = this.bars.get(id);
    if (!bar) return;
    if (Number.isNaN(bar.end)) bar.end = at;
    bar.status = status;
  }

  /**
   * A subagent's name, from its first event: its own type when the event says it, else the
   * type the oldest unmatched call of the main thread that starts a subagent asked for (one
   * of its type first). A later event that says its type corrects a name guessed so.
   */
  meet(row) {
    if (row.agent === null) return;
    const known = this.agents.get(row.agent);
    if (known) {
      if (row.agentType) known.label = row.agentType;
      return;
    }
    let at = this.spawns.findIndex((s) => row.agentType && s.type === row.agentType);
    if (at < 0) at = this.spawns.length ? 0 : -1;
    const spawn = at >= 0 ? this.spawns.splice(at, 1)[0] : null;
    this.agents.set(row.agent, { label: row.agentType || spawn?.type || "subagent" });
  }

  /** The spans the session waited for a person: from a permission request or a notification
   * to whatever happens next. */
  wait(row) {
    if (BOOKKEEPING.has(row.type)) return;
    const open = this.waits[this.waits.length - 1];
    const waiting = row.permission || row.type === "Notification";
    if (waiting && !(open && Number.isNaN(open.end))) this.waits.push({ start: row.at, end: NaN });
    // A transcript's record read late, of a time before the wait began, does not end it.
    else if (!waiting && open && Number.isNaN(open.end) && !(row.at < open.start)) open.end = row.at;
  }

  /** The turn a row is in: 1 for the first prompt's, 0 before any prompt. */
  turnOf(row) {
    return this.after(this.turns, row);
  }

  /** What a row says, with its turn's facts on the turn's end (`Stop`). */
  summaryOf(row) {
    if (row.type !== "Stop" || row.agent !== null) return row.summary;
    const n = this.turnOf(row);
    const prompt = this.turns[n - 1];
    if (!prompt) return row.summary;
    const facts = [`after ${duration(row.at - prompt.at)}`];
    const usage = this.usage.get(prompt.turnKey);
    if (usage) facts.push(...turnUsage(usage));
    return `${row.summary}, turn ${n}: ${facts.join(", ")}`;
  }

  /** The tool calls a row shows (each call is shown on one row only): their tool use ids. */
  callsOn(row) {
    const hook = row.type === "PreToolUse" && row.toolUseId && this.calls.get(row.toolUseId) === row;
    return hook ? [row.toolUseId, ...row.told] : [...row.told];
  }

  /** A subagent's name on its rows: `↳ Explore`. */
  agentLabel(row) {
    return row.agent === null ? null : `↳ ${this.agents.get(row.agent)?.label || "subagent"}`;
  }

  /** The turns' tokens and cost (`GET /usage?by=turn` groups). */
  setUsage(groups) {
    this.usage = new Map(groups.map((g) => [g.key, g]));
    this.schedule();
  }

  shows(row) {
    return this.everything || !(row.folded || BOOKKEEPING.has(row.type));
  }

  /** Shows every event (bookkeeping and folded rows too), or the story again; the row opened stays opened. */
  showEverything(on) {
    const opened = this.rows[this.selected];
    this.everything = on;
    this.rows = this.all.filter((row) => this.shows(row)).sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
    this.selected = opened ? this.rows.indexOf(opened) : null;
    if (this.selected < 0) this.selected = null;
    this.schedule();
  }

  indexOfSeq(seq) {
    // Rows arrive in sessionSequence order from 1, so with nothing hidden the index is seq - 1.
    const guess = this.rows[seq - 1];
    return guess?.seq === seq ? seq - 1 : this.rows.findIndex((r) => r.seq === seq);
  }

  select(index, scroll = true) {
    if (index < 0 || index >= this.rows.length) return;
    this.selected = index;
    if (scroll) {
      const top = index * ROW;
      if (top < this.el.scrollTop || top > this.el.scrollTop + this.el.clientHeight - ROW) {
        this.el.scrollTop = Math.max(0, top - this.el.clientHeight / 2);
      }
    }
    this.onOpen(this.rows[index]);
    this.schedule();
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.render();
    });
  }

  render() {
    this.spacer.style.height = `${this.rows.length * ROW}px`;
    if (this.stick && this.selected === null) this.el.scrollTop = this.el.scrollHeight;
    const top = this.el.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - OVERSCAN);
    const last = Math.min(this.rows.length, Math.ceil((top + this.el.clientHeight) / ROW) + OVERSCAN);
    const drawn = [];
    for (let i = first; i < last; i++) drawn.push(this.line(this.rows[i], i));
    this.spacer.replaceChildren(...drawn);
    this.el.dataset.count = String(this.all.length);
    this.el.dataset.shown = String(this.rows.length);
  }

  line(row, index) {
    const classes = ["row", `t-${row.type}`];
    if (row.status) classes.push(`s-${row.status}`);
    if (row.permission) classes.push("permission");
    if (index === this.selected) classes.push("selected");
    if (row.agent !== null) classes.push("sub");
    const turn = row.prompt !== null && row.agent === null && !row.folded ? this.turnOf(row) : 0;
    if (turn) classes.push("turn-start");
    const status = row.status
      ? h("span", { class: "status" }, STATUS[row.status], row.durationMs !== null ? ` ${duration(row.durationMs)}` : "")
      : null;
    const el = h(
      "div",
      {
        class: classes.join(" "),
        role: "listitem",
        "data-seq": row.seq,
        "data-id": row.id,
        onclick: () => this.select(index, false),
      },
      h("a", { class: "seq", href: `#e${row.seq}`, title: "a link to this event" }, `#${row.seq}`),
      h("span", { class: "time" }, clock(row.time)),
      turn ? h("span", { class: "turn" }, `turn ${turn}`) : null,
      row.agent !== null ? h("span", { class: "agent", title: row.agent }, this.agentLabel(row)) : null,
      h("span", { class: "type" }, row.permission ? `⚠ ${row.type}` : row.type),
      status,
      row.pair && this.everything
        ? h("a", { class: "pair", href: `#e${row.pair}` }, row.type === "PreToolUse" ? `→ #${row.pair}` : `← #${row.pair}`)
        : null,
      h("span", { class: "summary" }, this.summaryOf(row))
    );
    el.style.top = `${index * ROW}px`;
    return el;
  }
}

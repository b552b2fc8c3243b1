// The board: every session, grouped by what needs a person. It loads the projections once,
// then follows the global event stream from the head it started at; each event refreshes
// the session it belongs to (a burst is coalesced), so what it shows is what the
// projections say, and a dropped stream resumes where it stopped. A session with a pending
// permission request shows it on its card, with Allow / Deny (approvals.js).

import { follow, get, head } from "./api.js";
import { Approvals } from "./approvals.js";
import { Notifier } from "./notifications.js";
import { Pulse, bars } from "./pulse.js";
import { clip, clock, coalesce, duration, h, keepingFocus } from "./dom.js";

/** The board's columns, in the order a person should look at them. */
const GROUPS = [
  ["waiting", "Waiting for input", (s) => s.state === "awaiting_input" || s.state === "stuck"],
  ["working", "Working", (s) => s.state === "active"],
  ["idle", "Idle", (s) => s.state === "idle"],
  ["ended", "Ended", (s) => s.state === "ended"],
];
/** A working session whose prompt has had no Stop for this long is marked. */
const NO_STOP_MINUTES = 10;
const FILTERS = ["cli", "project", "state", "source", "q"];

const groupOf = (session) => GROUPS.find(([, , test]) => test(session))?.[0] ?? "idle";
const byKey = (rows, key) => {
  const map = new Map();
  for (const row of rows) {
    if (!map.has(row[key])) map.set(row[key], []);
    map.get(row[key]).push(row);
  }
  return map;
};

/** The filters, kept in the URL's fragment so a filtered board has a link of its own. */
function readFilters() {
  const params = new URLSearchParams(location.hash.slice(1));
  return Object.fromEntries(FILTERS.map((f) => [f, params.get(f) || ""]));
}

function writeFilters(filters) {
  const params = new URLSearchParams();
  for (const f of FILTERS) if (filters[f]) params.set(f, filters[f]);
  history.replaceState(null, "", params.size ? `#${params}` : location.pathname);
}

export async function board(main, status) {
  const start = await head();
  let redraw = () => {};
  const notifier = new Notifier((request) => approvals.panels.get(request.requestId)?.el.scrollIntoView({ block: "center" }));
  const approvals = new Approvals("state=pending", (fresh) => {
    notifier.tell(fresh);
    notifier.count(approvals.pending().length);
    redraw();
  });
  const [sessions, missions, running, pulseAnswer] = await Promise.all([
    get("/sessions?limit=1000"),
    get("/missions?limit=1000"),
    get("/tool-uses?status=running&limit=1000"),
    get("/pulse"),
    approvals.load(),
  ]);
  const model = {
    sessions: new Map(sessions.sessions.map((s) => [s.id, s])),
    missions: byKey(missions.missions, "sessionId"),
    running: byKey(running.toolUses, "sessionId"),
    pulse: new Pulse(pulseAnswer),
    approvals,
    said: new Map(), // session id -> the last thing its agent said, from the stream
  };
  const filters = readFilters();
  const view = h("div", { class: "board" });
  const controls = h("form", { class: "filters", role: "search" });
  const chart = h("div", { class: "total-pulse" });
  const found = h("section", { class: "hits", "aria-label": "Matches in the log", "aria-live": "polite" });
  main.replaceChildren(h("div", { class: "view-head" }, h("h1", {}, "Board"), notifier.el), chart, controls, found, view);
  const searchLog = logSearch(found);
  searchLog(filters.q);

  const draw = () => {
    drawControls(controls, model, filters, draw, searchLog);
    drawColumns(view, model, filters);
    chart.replaceChildren(
      h("span", {}, "Events per minute, last hour"),
      bars(model.pulse.total(), { width: 360, height: 40, label: "all sessions:" })
    );
  };
  draw();
  redraw = () => drawColumns(view, model, filters);

  // Responses to refreshes can come back out of order: keep only each session's latest.
  const asked = new Map();
  const load = async (id) => {
    const n = (asked.get(id) || 0) + 1;
    asked.set(id, n);
    const enc = encodeURIComponent(id);
    const [session, own, tools] = await Promise.all([
      get(`/sessions/${enc}`).catch(() => null),
      get(`/missions?session=${enc}&limit=50`),
      get(`/tool-uses?session=${enc}&status=running&limit=100`),
    ]);
    if (asked.get(id) !== n) return;
    if (session) model.sessions.set(id, session);
    model.missions.set(id, own.missions);
    model.running.set(id, tools.toolUses);
  };
  const dirty = new Set();
  const refresh = coalesce(50, async () => {
    const ids = [...dirty];
    dirty.clear();
    await Promise.all(ids.map((id) => load(id).catch(() => dirty.add(id))));
    draw();
  });
  follow(
    "/events",
    start,
    (envelope) => {
      model.pulse.add(envelope);
      approvals.see(envelope);
      const words = saidIn(envelope);
      if (words) model.said.set(envelope.context.sessionId, words);
      if (envelope.context.sessionId) dirty.add(envelope.context.sessionId);
      refresh();
    },
    status
  );
  document.addEventListener("tick", () => {
    model.pulse.roll();
    approvals.tick();
    // Ages are redrawn each second, but not under the person using a card (typing a deny's
    // message, on a button or a link): a redraw would take the focus away or announce the
    // field again. Events still redraw the board, and a request's panel updates itself.
    if (!view.contains(document.activeElement)) drawColumns(view, model, filters);
  });
}

function drawControls(form, model, filters, redraw, searchLog) {
  if (form.contains(document.activeElement)) return; // never redraw under the person typing
  const sessions = [...model.sessions.values()];
  const choices = (name, label, values) =>
    h(
      "label",
      {},
      `${label} `,
      h(
        "select",
        { name, onchange: (e) => update(name, e.target.value) },
        h("option", { value: "" }, "any"),
        [...new Set(values.filter(Boolean))].sort().map((v) => h("option", { value: v, selected: v === filters[name] }, v))
      )
    );
  const update = (name, value) => {
    filters[name] = value;
    writeFilters(filters);
    redraw();
  };
  form.replaceChildren(
    choices("cli", "cli", sessions.map((s) => s.cli)),
    choices("project", "project", sessions.map((s) => s.cwd)),
    choices("state", "state", GROUPS.map(([g]) => g)),
    choices("source", "source", sessions.map((s) => s.source)),
    h(
      "label",
      {},
      "search ",
      h("input", {
        type: "search",
        name: "q",
        value: filters.q,
        placeholder: "session id, prompt, command, file…",
        oninput: (e) => {
          filters.q = e.target.value;
          writeFilters(filters);
          drawColumns(document.querySelector(".board"), model, filters);
          searchLog(filters.q);
        },
      })
    )
  );
  form.addEventListener("submit", (e) => e.preventDefault());
}

/** Hits of the log for the board's search box (GET /search, newest first), drawn into
 * `section` a moment after the person stops typing; an answer to an older query is dropped. */
function logSearch(section) {
  let asked = 0;
  let timer = null;
  const run = async (q) => {
    const n = ++asked;
    if (!q.trim()) return section.replaceChildren();
    // The newest 20 hits: a page of 20, or fewer when the log has no more (the loop also
    // follows a short page's cursor, should a page ever come back short).
    const hits = [];
    let cursor = null;
    try {
      for (let pages = 0; pages < 8 && hits.length < 20; pages++) {
        const more = cursor ? `&cursor=${encodeURIComponent(cursor)}` : "";
        const page = await get(`/search?limit=${20 - hits.length}&q=${encodeURIComponent(q)}${more}`);
        if (n !== asked) return;
        hits.push(...page.hits);
        cursor = page.nextCursor;
        if (!cursor) break;
      }
    } catch (e) {
      if (n === asked) section.replaceChildren(h("p", { class: "error" }, `search: ${e.message}`));
      return;
    }
    if (n !== asked) return;
    section.replaceChildren(
      h("h2", {}, "Matches in the log ", h("span", { class: "count" }, cursor ? `newest ${hits.length}` : String(hits.length))),
      hits.length ? h("ol", {}, hits.map(hit)) : h("p", { class: "empty" }, cursor ? "none among the newest events" : "no event matches")
    );
  };
  return (q) => {
    clearTimeout(timer);
    timer = setTimeout(() => run(q), 250);
  };
}

/** One hit: its time, session (a link to the event on the session's page), type and snippet,
 * the matched words marked. */
function hit(found) {
  const where = found.sessionId
    ? h("a", { class: "sid", href: `/s/${encodeURIComponent(found.sessionId)}#e${found.sessionSequence}`, title: found.sessionId },
        `${clip(found.sessionId, 28)} #${found.sessionSequence}`)
    : h("a", { class: "sid", href: `/events/${encodeURIComponent(found.id)}` }, `#${found.sequence}`);
  return h(
    "li",
    { "data-sequence": found.sequence },
    h("span", { class: "time" }, clock(found.eventTime)),
    " ",
    where,
    " ",
    h("span", { class: "type" }, found.type),
    " ",
    h("span", { class: "snippet" }, found.snippet.map((p) => (p.match ? h("mark", {}, p.text) : p.text.replace(/\s+/g, " "))))
  );
}

function matches(session, model, filters) {
  if (filters.cli && session.cli !== filters.cli) return false;
  if (filters.project && session.cwd !== filters.project) return false;
  if (filters.source && session.source !== filters.source) return false;
  if (filters.state && groupOf(session) !== filters.state) return false;
  const q = filters.q.trim().toLowerCase();
  if (!q) return true;
  const prompts = (model.missions.get(session.id) || []).map((m) => m.prompt || "");
  return [session.id, ...prompts].some((text) => text.toLowerCase().includes(q));
}

function drawColumns(view, model, filters) {
  const shown = [...model.sessions.values()].filter((s) => matches(s, model, filters));
  shown.sort((a, b) => b.lastSequence - a.lastSequence);
  // Events (and the clock, while the focus is elsewhere) redraw the columns; a request's panel
  // is the same node in the new card, so the focus goes back to it.
  keepingFocus(() =>
    view.replaceChildren(
      ...GROUPS.map(([group, title]) => {
        const cards = shown.filter((s) => groupOf(s) === group).map((s) => card(s, model));
        return h(
          "section",
          { class: `column ${group}`, "data-group": group, "aria-label": title },
          h("h2", {}, `${title} `, h("span", { class: "count" }, String(cards.length))),
          cards.length ? cards : h("p", { class: "empty" }, "none")
        );
      })
    )
  );
}

/**
 * What the main thread of an agent said, when an event tells it: a transcript's message (its
 * text), or the last message a `Stop` hook carries.
 */
function saidIn(envelope) {
  const p = envelope.payload || {};
  if (!envelope.context.sessionId || p.agentId || p.agent_id || p.isSidechain) return null;
  const text =
    envelope.type === "TranscriptMessage" ? p.response : envelope.type === "Stop" ? p.lastAssistantMessage ?? p.last_assistant_message : null;
  return typeof text === "string" && text.trim() ? text : null;
}

/**
 * What the agent is doing now, in words from its story: the tool running and what it runs
 * on, else the last thing it said (this page's stream, else its last turn's summary).
 */
function doing(session, model, now) {
  // The newest running tool: `/tool-uses` lists newest first.
  const tool = (model.running.get(session.id) || [])[0];
  if (tool) {
    return h("p", { class: "doing tool" }, `▶ ${tool.tool || tool.kind}${tool.preview ? `: ${clip(tool.preview, 60)}` : ""} · `,
      h("span", {}, duration(now - Date.parse(tool.startedAt))));
  }
  const missions = model.missions.get(session.id) || [];
  const said = model.said.get(session.id) || missions.find((m) => !m.parentMissionId && m.summary)?.summary;
  return said ? h("p", { class: "doing said", title: said }, `“${clip(said, 100)}”`) : null;
}

function card(session, model) {
  const now = Date.now();
  const missions = model.missions.get(session.id) || [];
  const active = missions.find((m) => m.state === "active" && !m.parentMissionId);
  const latest = active || missions[0];
  const sinceStart = active ? now - Date.parse(active.startedAt) : 0;
  const stateWord = session.state === "stuck" ? `stuck: ${session.stuckReason || "?"}` : session.state.replace("_", " ");
  const requests = model.approvals.panelsOf(session.id);
  return h(
    "article",
    { class: "card", "data-session": session.id, "data-state": session.state },
    h(
      "header",
      {},
      h("a", { href: `/s/${encodeURIComponent(session.id)}`, class: "sid", title: session.id }, clip(session.id, 28)),
      h("span", { class: `state ${session.state}` }, stateWord)
    ),
    h(
      "p",
      { class: "facts" },
      [session.cli || session.source, session.model].filter(Boolean).join(" · "),
      session.cwd ? h("span", { class: "project", title: session.cwd }, ` · ${clip(session.cwd, 40)}`) : null
    ),
    doing(session, model, now),
    latest?.prompt ? h("p", { class: "prompt", title: latest.prompt }, clip(latest.prompt, 90)) : null,
    session.stuckMessage ? h("p", { class: "stuck-message" }, clip(session.stuckMessage, 90)) : null,
    requests.length ? h("div", { class: "approvals" }, requests) : null,
    h(
      "p",
      { class: "age" },
      `last event ${duration(now - Date.parse(session.lastEventTime))} ago · ${session.eventCount} events`,
      sinceStart > NO_STOP_MINUTES * 60_000
        ? h("strong", { class: "no-stop" }, ` ⚠ no Stop for ${Math.floor(sinceStart / 60_000)} min`)
        : null
    ),
    bars(model.pulse.of(session.id), { label: `${session.id}:` })
  );
}

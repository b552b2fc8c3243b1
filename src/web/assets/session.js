// A session's page: its facts, the timeline of its events (history, then live, from the
// session's event stream), its permission requests (the pending ones with Allow / Deny, and
// how each was settled), its missions as a tree, its alerts, the event opened in full, and
// the replay scrubber. Every event has a link of its own: /s/{id}#e{sessionSequence}.

import { follow, get } from "./api.js";
import { asked } from "./approval.js";
import { Approvals } from "./approvals.js";
import { clip, clock, coalesce, duration, h, keepingFocus, table } from "./dom.js";
import { Notifier } from "./notifications.js";
import { Replay } from "./replay.js";
import { Lanes } from "./lanes.js";
import { Timeline, rowOf } from "./timeline.js";
import { turnChart } from "./usage.js";

const MISSION_STATE = { active: "⋯ active", completed: "✓ completed", failed: "✗ failed", interrupted: "⊘ interrupted" };

export async function session(main, id, status) {
  const enc = encodeURIComponent(id);
  const facts = h("div", { class: "facts" }, "loading…");
  const missions = h("div", { class: "missions" });
  const alerts = h("div", { class: "alerts" });
  const detail = h("section", { class: "detail", "aria-label": "the event opened", id: "detail" }, h("p", { class: "empty" }, "Click an event to open its JSON."));
  const replay = new Replay(id);
  const timeline = new Timeline((row) => open(row));
  const lanes = new Lanes(timeline, (seq) => show(seq));
  const turns = h("div", { class: "turns" });
  const requests = h("div", { class: "requests" });
  const showRequests = () => drawRequests(requests, approvals, timeline, id);
  const notifier = new Notifier((request) => approvals.panels.get(request.requestId)?.el.scrollIntoView({ block: "center" }));
  const approvals = new Approvals(`session=${enc}`, (fresh) => {
    notifier.tell(fresh);
    notifier.count(approvals.pending().length);
    showRequests();
  });
  main.replaceChildren(
    h("h1", {}, "Session ", h("code", {}, id)),
    facts,
    h(
      "div",
      { class: "session" },
      h(
        "section",
        { class: "events", "aria-label": "timeline" },
        h(
          "div",
          { class: "view-head" },
          h("h2", {}, "Timeline"),
          h(
            "label",
            { class: "everything", title: "also the events that repeat a tool call shown (its PostToolUse, a transcript's result) and hooklog's own bookkeeping (how far it read a transcript)" },
            h("input", { type: "checkbox", id: "every-event", onchange: (e) => timeline.showEverything(e.target.checked) }),
            " every event"
          )
        ),
        lanes.el,
        timeline.el
      ),
      h(
        "aside",
        {},
        h("section", { class: "permission-requests", "aria-label": "permission requests" },
          h("div", { class: "view-head" }, h("h2", {}, "Permission requests"), notifier.el), requests),
        h("section", { "aria-label": "turns" }, h("h2", {}, "Turns"), turns),
        detail,
        replay.el,
        h("section", {}, h("h2", {}, "Missions"), missions),
        h("section", {}, h("h2", {}, "Alerts"), alerts)
      )
    )
  );
  // For tests and the devtools console: every event the timeline holds as [sessionSequence,
  // event id] pairs, and the rows it shows as [sessionSequence, type, summary, status, the
  // tool use ids it tells of (calls, results), eventTime, subagent id (null: the main
  // thread), turn, the tool use ids of the calls shown on this row], in the order shown.
  window.hooklog = {
    timeline: () => timeline.all.map((r) => [r.seq, r.id]),
    shown: () =>
      timeline.rows.map((r) => [
        r.seq,
        r.type,
        timeline.summaryOf(r),
        r.status,
        [r.toolUseId, ...r.told, ...r.results.map((x) => x.id)].filter(Boolean),
        r.time,
        r.agent,
        timeline.turnOf(r),
        timeline.callsOn(r),
      ]),
  };

  const opened = { id: null };
  async function open(row) {
    history.replaceState(null, "", `#e${row.seq}`);
    opened.id = row.id;
    const envelope = await get(`/events/${encodeURIComponent(row.id)}`);
    if (opened.id !== row.id) return;
    detail.replaceChildren(
      h("h2", {}, `#${row.seq} ${row.type}`),
      h(
        "p",
        { class: "links" },
        h("a", { href: `/s/${enc}#e${row.seq}` }, "link to this event"),
        " · ",
        h("a", { href: `/events/${encodeURIComponent(row.id)}` }, "its JSON alone"),
        " · ",
        h("button", { type: "button", onclick: () => replay.goToSequence(row.sequence) }, "replay to here")
      ),
      h("pre", { class: "json", id: "event-json" }, JSON.stringify(envelope, null, 2))
    );
  }

  // An #eN in the URL opens event N once it has arrived.
  let wanted = Number(/^#e(\d+)$/.exec(location.hash)?.[1]) || null;
  window.addEventListener("hashchange", () => show(Number(/^#e(\d+)$/.exec(location.hash)?.[1])));
  function show(seq) {
    const index = timeline.indexOfSeq(seq);
    if (index >= 0 && timeline.selected !== index) timeline.select(index);
    // An event not shown (folded into its call, or bookkeeping) still opens.
    const hidden = index < 0 && timeline.all.find((r) => r.seq === seq);
    if (hidden && opened.id !== hidden.id) open(hidden);
  }

  const refresh = coalesce(300, async () => {
    const [one, own, raised, usage] = await Promise.all([
      get(`/sessions/${enc}`).catch(() => null),
      get(`/missions?session=${enc}&limit=1000`),
      get("/alerts?limit=1000"),
      get(`/usage?by=turn&session=${enc}`).catch(() => null),
    ]);
    drawFacts(facts, one);
    if (usage) {
      timeline.setUsage(usage.groups);
      const numbers = new Map(timeline.turns.map((row, i) => [row.turnKey, i + 1]));
      turns.replaceChildren(turnChart(usage, (key) => numbers.get(key) || 0));
    }
    missions.replaceChildren(tree(own.missions));
    drawAlerts(alerts, raised.alerts.filter((a) => a.sessionId === id), timeline);
  });
  refresh();
  approvals.refresh();
  document.addEventListener("tick", () => {
    if (approvals.tick()) showRequests();
  });
  follow(
    `/sessions/${enc}/events`,
    0,
    (envelope) => {
      const row = rowOf(envelope);
      const index = timeline.push(row);
      lanes.schedule();
      replay.add(envelope.context.sequence);
      approvals.see(envelope);
      if (wanted === envelope.context.sessionSequence) {
        wanted = null;
        if (index >= 0) requestAnimationFrame(() => timeline.select(index));
        else open(row);
      }
      refresh();
    },
    status
  );
}

function drawFacts(el, session) {
  if (!session) {
    el.replaceChildren(h("p", { class: "empty" }, "No event of this session yet; waiting for its first."));
    return;
  }
  const fact = (name, value) => (value ? [h("dt", {}, name), h("dd", {}, value)] : []);
  el.replaceChildren(
    h(
      "dl",
      {},
      fact("state", session.state.replace("_", " ")),
      fact("cli", session.cli),
      fact("source", session.source),
      fact("project", session.cwd),
      fact("model", session.model),
      fact("events", String(session.eventCount)),
      fact("first", session.firstEventTime),
      fact("last", session.lastEventTime),
      fact("stuck", session.stuckReason && `${session.stuckReason}: ${session.stuckMessage || ""}`),
      fact("tokens", session.usage && tokens(session.usage)),
      fact("cost", session.usage && cost(session.usage))
    )
  );
}

/** A session's usage from its transcripts (GET /sessions/{id}'s `usage`, docs/usage.md). */
function tokens(u) {
  const writes = u.cacheWrite5mTokens + u.cacheWrite1hTokens;
  return `${u.inputTokens} in, ${u.outputTokens} out, ${writes} cache writes, ${u.cacheReadTokens} cache reads (${u.calls} calls)`;
}

/** The cost, and plainly what it leaves out: the models with no price, as the server says it
 * (`costNote`, the same words `/usage` and `hooklog usage` use). */
function cost(u) {
  if (!u.costNote) return `$${u.costUsd.toFixed(4)}`;
  return `$${u.costUsd.toFixed(4)}, not complete: ${u.costNote}`;
}

/** Missions nested under their parent (subagents under the prompt that started them). */
function tree(missions) {
  const children = new Map();
  for (const m of missions) {
    const parent = missions.some((p) => p.id === m.parentMissionId) ? m.parentMissionId : null;
    if (!children.has(parent)) children.set(parent, []);
    children.get(parent).push(m);
  }
  const list = (parent) =>
    h(
      "ul",
      { class: "tree" },
      (children.get(parent) || [])
        .sort((a, b) => a.openedSequence - b.openedSequence)
        .map((m) =>
          h(
            "li",
            { class: `mission ${m.state}` },
            h("span", { class: "kind" }, m.kind === "subagent" ? `subagent ${m.subagentType || ""}` : "prompt"),
            " ",
            h("span", { class: "title", title: m.prompt || "" }, clip(m.title || m.prompt || m.id, 70)),
            " ",
            h("span", { class: "state" }, MISSION_STATE[m.state] || m.state),
            m.completedAt ? ` · ${duration(Date.parse(m.completedAt) - Date.parse(m.startedAt))}` : "",
            children.has(m.id) ? list(m.id) : null
          )
        )
    );
  return missions.length ? list(null) : h("p", { class: "empty" }, "none");
}

/** The pending requests' panels (oldest first), then how each settled one was settled. */
function drawRequests(el, approvals, timeline, id) {
  const panels = approvals.panelsOf(id);
  const settled = approvals.rows.filter((r) => r.state !== "pending");
  const history = table(
    settled,
    [
      ["openedAt", "asked at", (r) => clock(r.openedAt)],
      ["tool", "what", (r) => h("span", { title: asked(r) }, clip(asked(r), 80))],
      ["state", "state", (r) => r.state.replace("_", " ")],
      ["decidedBy", "by"],
      ["message", "message"],
      ["sequence", "", (r) => h("button", { type: "button", onclick: () => timeline.select(timeline.rows.findIndex((row) => row.sequence === r.sequence)) }, "show its event")],
    ],
    "none settled yet"
  );
  keepingFocus(() =>
    el.replaceChildren(
      panels.length ? h("div", { class: "approvals" }, panels) : h("p", { class: "empty" }, "none pending"),
      h("h3", {}, "Settled"),
      history
    )
  );
}

function drawAlerts(el, alerts, timeline) {
  if (!alerts.length) return el.replaceChildren(h("p", { class: "empty" }, "none"));
  el.replaceChildren(
    h(
      "ul",
      {},
      alerts.map((a) =>
        h(
          "li",
          { class: a.acknowledgedAt ? "acknowledged" : "open" },
          h("strong", {}, a.kind),
          ` ${clip(a.message, 120)} `,
          h(
            "button",
            {
              type: "button",
              onclick: () => timeline.select(timeline.rows.findIndex((r) => r.sequence === a.eventSequence)),
            },
            "show its event"
          ),
          a.acknowledgedAt ? " (acknowledged)" : ""
        )
      )
    )
  );
}

// The permission requests a view shows (issue 40): each pending one as a panel with Allow /
// Deny (approval.js), and, on a session's page, the session's settled ones as its history.
// Loaded once, then again whenever the view's event stream delivers an event that opens,
// settles or closes a request (a burst is one load); never on a timer. A request that leaves
// the pending list was settled by some route (this tab, another, the API, the agent's
// terminal): its panel drops its buttons and shows how, then leaves the view a minute later.

import { get } from "./api.js";
import { coalesce } from "./dom.js";
import { Approval } from "./approval.js";

/** Coordination events that settle a request (in its session). */
const SETTLES = new Set(["permission_response", "permission_expired"]);
/** A session's hook events that close its pending requests as answered elsewhere. */
const CLOSES = new Set([
  "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionDenied",
  "UserPromptSubmit", "Stop", "StopFailure", "SessionEnd",
]);
/** A settled panel shows its outcome this long. */
const OUTCOME_MS = 60_000;

/** This hooklog's name (`/health`'s `origin`), once known. */
let here = null;

/** Whether a pending request can be decided here: this hooklog stored it (an aggregator's copy
 * of another machine's request is for reading: its hook waits there), and a hook waits for it,
 * and still does. One no hook waits on (installed without `--approvals`) is a record only, and
 * hooklog refuses a decision for it. */
const offered = (row) =>
  row.origin === here && Boolean(row.waitsUntil) && Date.parse(row.waitsUntil) > Date.now();

const opens = (envelope) => envelope.type === "PermissionRequest" || envelope.payload?.type === "permission_request";

export class Approvals {
  /**
   * `query`: which requests, as `GET /permission-requests` takes it (`state=pending` for the
   * board, `session=ID` for a session's page). `onChange(fresh)` after each load, with the
   * requests seen pending for the first time since the view started.
   */
  constructor(query, onChange) {
    this.query = query;
    this.onChange = onChange;
    /** The last answer's rows, newest first. */
    this.rows = [];
    /** requestId -> Approval: the pending, and the settled for OUTCOME_MS. */
    this.panels = new Map();
    /** Sessions whose hook events may close a request: the pending ones, and those whose
     * request opened after the last load was asked for (not in its answer yet). */
    this.watched = new Set();
    this.openedSince = new Set();
    /** Requests gone from the list whose outcome is being read. */
    this.lookingUp = new Set();
    this.loaded = false;
    this.failed = false;
    this.asked = 0;
    this.refresh = coalesce(100, () => this.load().catch(() => (this.failed = true)));
  }

  /** Called with each event the view's stream delivers. */
  see(envelope) {
    const session = envelope.context.sessionId;
    if (opens(envelope)) {
      this.watched.add(session);
      this.openedSince.add(session);
    }
    const relevant = opens(envelope) || SETTLES.has(envelope.type) || (CLOSES.has(envelope.type) && this.watched.has(session));
    if (relevant || this.failed) this.refresh();
  }

  async load() {
    const n = ++this.asked;
    this.openedSince = new Set();
    if (here === null) here = (await get("/health")).origin;
    const answer = await get(`/permission-requests?${this.query}&limit=1000`);
    if (n !== this.asked) return;
    this.failed = false;
    this.rows = answer.permissionRequests;
    const now = new Map(this.rows.map((r) => [r.requestId, r]));
    const fresh = [];
    for (const row of this.rows) {
      if (row.state !== "pending" || !offered(row) || this.panels.has(row.requestId)) continue;
      this.panels.set(row.requestId, new Approval(row));
      if (this.loaded) fresh.push(row);
    }
    for (const [id, panel] of this.panels) {
      if (panel.settledAt !== null || now.get(id)?.state === "pending") continue;
      if (now.has(id)) panel.settle(now.get(id));
      else if (!this.lookingUp.has(id)) this.lookUp(id, panel);
    }
    this.watched = new Set([...this.pending().map((p) => p.sessionId), ...this.openedSince]);
    this.loaded = true;
    this.onChange(fresh);
  }

  /** A request that left the list (the board lists only pending ones): how it was settled. */
  async lookUp(id, panel) {
    this.lookingUp.add(id);
    const request = await get(`/permission-requests/${encodeURIComponent(id)}`).catch(() => null);
    this.lookingUp.delete(id);
    if (panel.settledAt === null && request?.state !== "pending") panel.settle(request);
    this.onChange([]);
  }

  /** The panels not yet settled. */
  pending() {
    return [...this.panels.values()].filter((p) => p.settledAt === null);
  }

  /** A session's panels, oldest request first. */
  panelsOf(sessionId) {
    return [...this.panels.values()]
      .filter((p) => p.sessionId === sessionId)
      .sort((a, b) => a.request.sequence - b.request.sequence)
      .map((p) => p.el);
  }

  /** Each second: the waited times; settled panels leave once their time is up (answers
   * whether one did). */
  tick(now = Date.now()) {
    let left = false;
    for (const [id, panel] of this.panels) {
      if (panel.settledAt !== null && now - panel.settledAt > OUTCOME_MS) {
        this.panels.delete(id);
        left = true;
      } else {
        panel.tick(now);
      }
    }
    return left;
  }
}

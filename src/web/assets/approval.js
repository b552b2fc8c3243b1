// One permission request's panel (issue 40): what the agent asks (the tool and its whole
// preview: a person decides on what will run, not on a clipped line), how long it has waited,
// and Allow / Deny with a message for a deny. Once the request is settled, by this panel or by
// any other route, the buttons go and the outcome stays. The panel is one DOM node kept for
// the request's life, so a view that redraws around it keeps what was typed in it.

import { post } from "./api.js";
import { duration, h } from "./dom.js";

let panels = 0;

/** What a settled request's state means, in words (and a symbol). */
function outcome(request) {
  if (!request) return "no longer pending";
  const by = request.decidedBy ? ` by ${request.decidedBy}` : "";
  switch (request.state) {
    case "allowed":
      return `✓ allowed${by}`;
    case "denied":
      return `✗ denied${by}${request.message ? `: ${request.message}` : ""}`;
    case "expired":
      return "⌛ expired: the hook stopped waiting, the agent asks in its terminal";
    case "answered_elsewhere":
      return "↷ answered elsewhere: in the agent's terminal, or the agent moved on";
    default:
      return request.state.replace("_", " ");
  }
}

/** "Bash: rm -rf build", or "Plan: ..." for a plan's approval. */
export function asked(request) {
  const what = request.kind === "plan" ? "Plan" : request.tool;
  return request.preview ? `${what}: ${request.preview}` : what;
}

export class Approval {
  constructor(request) {
    this.request = request;
    /** When it was seen settled (ms), or null while pending. */
    this.settledAt = null;
    const ask = `approval-${++panels}`;
    this.message = h("input", { type: "text", name: "message", maxlength: 2000, autocomplete: "off",
      onkeydown: (e) => {
        // Enter in the message sends the deny it is for (never the Allow beside it).
        if (e.key === "Enter" && !e.isComposing) {
          e.preventDefault();
          this.decide(false);
        }
      } });
    this.allow = h("button", { type: "button", class: "allow", "aria-describedby": ask, onclick: () => this.decide(true) }, "✓ Allow");
    this.deny = h("button", { type: "button", class: "deny", "aria-describedby": ask, onclick: () => this.decide(false) }, "✗ Deny");
    this.decision = h("div", { class: "decide" }, h("label", {}, "message to the agent, with a deny ", this.message), this.allow, this.deny);
    this.waited = h("span", { class: "waited" });
    this.outcome = h("p", { class: "outcome", role: "status", tabindex: "-1" });
    this.el = h(
      "div",
      { class: "approval", role: "group", "aria-labelledby": ask, "data-request": request.requestId, "data-state": "pending" },
      h("p", { class: "ask", id: ask }, "⚠ ", h("strong", {}, request.kind === "plan" ? "Plan" : request.tool),
        request.preview ? [": ", h("code", { class: "preview" }, request.preview)] : null),
      h("p", { class: "since" }, this.waited),
      this.decision,
      this.outcome
    );
    this.tick(Date.now());
  }

  get sessionId() {
    return this.request.sessionId;
  }

  /** POST /permission-response; the answer settles the panel (`resolved: false`: another
   * decision, an expiry or the agent came first, and the panel says which). */
  async decide(approved) {
    if (this.settledAt !== null || this.allow.disabled) return;
    // Disabling the button pressed takes the focus from it: note where it was first.
    const focused = this.el.contains(document.activeElement);
    this.busy(true, approved ? "allowing…" : "denying…");
    const message = approved ? undefined : this.message.value.trim() || undefined;
    try {
      const answer = await post("/permission-response", { requestId: this.request.requestId, approved, message });
      this.settle(answer.request, answer.resolved, focused);
    } catch (error) {
      this.busy(false, `not sent: ${error.message}`);
      this.outcome.classList.add("error");
    }
  }

  busy(on, words) {
    for (const control of [this.allow, this.deny, this.message]) control.disabled = on;
    this.outcome.classList.remove("error");
    this.outcome.textContent = words;
  }

  /** The request as it was settled (`null`: unknown now). `resolved`: false when this tab's
   * decision came too late. Settling again (the list and this tab's answer both say) keeps the
   * first time and shows the latest words. `focused`: whether the focus was in the panel. */
  settle(request, resolved = true, focused = this.el.contains(document.activeElement)) {
    if (request) this.request = request;
    this.settledAt ??= Date.now();
    this.el.dataset.state = request?.state ?? "unknown";
    this.decision.remove();
    this.outcome.classList.remove("error");
    this.outcome.textContent = resolved ? outcome(request) : `already answered: ${outcome(request)}`;
    // The button pressed is gone: the focus goes to what it did, not to the top of the page.
    if (focused) this.outcome.focus({ preventScroll: true });
    this.tick(Date.now());
  }

  tick(now) {
    const { openedAt, closedAt } = this.request;
    this.waited.textContent =
      this.settledAt === null
        ? `waiting ${duration(now - Date.parse(openedAt))}`
        : closedAt
          ? `waited ${duration(Date.parse(closedAt) - Date.parse(openedAt))}`
          : "";
  }
}

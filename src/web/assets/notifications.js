// Browser notifications for permission requests that arrive while the tab is in the
// background, and the count of pending ones in the tab's title. The browser's permission is
// asked for only when the person presses "Notify me" (browsers ask only on a user gesture);
// the choice is kept in localStorage, for every view of this hooklog.

import { asked } from "./approval.js";
import { h } from "./dom.js";

const KEY = "hooklog.notify";
const TITLE = document.title;

function stored() {
  try {
    return localStorage.getItem(KEY) === "on";
  } catch {
    return false; // storage refused (a private window's policy): never on
  }
}

function store(on) {
  try {
    localStorage.setItem(KEY, on ? "on" : "off");
  } catch {
    // nothing kept: the toggle lasts as long as the page
  }
}

export class Notifier {
  /** `show(request)`: brings a request's panel into view, once its notification is clicked. */
  constructor(show = () => {}) {
    this.show = show;
    // Notifications need a secure context: https, or this machine (127.0.0.1, localhost).
    this.supported = "Notification" in window && window.isSecureContext;
    this.wanted = this.supported && stored();
    this.button = h("button", { type: "button", class: "notify-toggle", "aria-pressed": "false", onclick: () => this.toggle() }, "Notify me");
    this.note = h("span", { class: "note" });
    this.el = h("span", { class: "notify" }, this.button, this.note);
    this.draw();
  }

  get on() {
    return this.wanted && Notification.permission === "granted";
  }

  async toggle() {
    if (this.on) {
      this.wanted = false;
    } else {
      // The click is the gesture the browser wants before it asks.
      if (Notification.permission !== "granted") await Notification.requestPermission();
      this.wanted = Notification.permission === "granted";
    }
    store(this.wanted);
    this.draw();
  }

  draw() {
    this.button.setAttribute("aria-pressed", String(this.on));
    this.button.disabled = !this.supported;
    this.note.textContent = !this.supported
      ? "needs https or this machine's address"
      : Notification.permission === "denied"
        ? "blocked: allow notifications for this site in the browser"
        : "";
  }

  /** A notification for each request, if the tab is in the background and they are wanted. */
  tell(requests) {
    if (!document.hidden || !this.on) return;
    for (const request of requests) {
      const title = request.kind === "plan" ? "a plan to approve" : `${request.tool} asks for permission`;
      const notification = new Notification(`hooklog: ${title}`, {
        body: `${asked(request)}\nsession ${request.sessionId}`,
        tag: request.requestId, // another tab's notification of it replaces this one
      });
      notification.addEventListener("click", () => {
        window.focus();
        notification.close();
        this.show(request);
      });
    }
  }

  /** The title says how many requests are pending: "(2) hooklog". */
  count(n) {
    document.title = n ? `(${n}) ${TITLE}` : TITLE;
  }
}

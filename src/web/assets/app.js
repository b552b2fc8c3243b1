// The web view: one page whose URL names the view. "/" is the board, "/s/{id}" a session,
// "/coordination" the alerts and coordination tables, "/cost" cost and tokens by day and by
// model. Each view reads public routes and follows an event stream; nothing polls the server.

import { board } from "./board.js";
import { session } from "./session.js";
import { coordination } from "./coordination.js";
import { usagePage } from "./usage.js";

const main = document.getElementById("main");
const live = document.getElementById("live");

/** Shows the stream's state in the header ("live", "reconnecting…"). */
function status(state) {
  live.textContent = state === "reconnecting" ? "reconnecting…" : state;
  live.dataset.state = state;
}

const path = location.pathname;
for (const link of document.querySelectorAll("nav a")) {
  if (link.getAttribute("href") === path) link.setAttribute("aria-current", "page");
}
if (path.startsWith("/s/")) {
  session(main, decodeURIComponent(path.slice(3)), status);
} else if (path === "/coordination") {
  coordination(main, status);
} else if (path === "/cost") {
  usagePage(main, status);
} else {
  board(main, status);
}

// Ages and durations are shown relative to now: redraw them each second (the clock, not the
// server, drives this).
setInterval(() => document.dispatchEvent(new Event("tick")), 1000);

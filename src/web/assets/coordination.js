// Alerts (with acknowledge) and the coordination tables: watcher owners, chat claims,
// catch-up gaps. Loaded once, then reloaded when the global event stream says something
// happened (coalesced), never on a timer.

import { follow, get, head, post } from "./api.js";
import { clip, coalesce, h, table } from "./dom.js";

export async function coordination(main, status) {
  const start = await head();
  const sections = {
    alerts: h("div", { id: "alerts" }),
    owners: h("div", { id: "owners" }),
    claims: h("div", { id: "claims" }),
    gaps: h("div", { id: "gaps" }),
  };
  main.replaceChildren(
    h("h1", {}, "Alerts and coordination"),
    h("section", {}, h("h2", {}, "Alerts"), sections.alerts),
    h("section", {}, h("h2", {}, "Watcher owners"), sections.owners),
    h("section", {}, h("h2", {}, "Chat claims"), sections.claims),
    h("section", {}, h("h2", {}, "Catch-up gaps"), sections.gaps)
  );
  const load = async () => {
    const [alerts, owners, claims, gaps] = await Promise.all([
      get("/alerts?limit=1000"),
      get("/owners"),
      get("/claims?limit=1000"),
      get("/gaps?limit=1000"),
    ]);
    sections.alerts.replaceChildren(alertTable(alerts.alerts.slice().reverse(), load));
    sections.owners.replaceChildren(generic(owners.owners));
    sections.claims.replaceChildren(generic(claims.claims));
    sections.gaps.replaceChildren(generic(gaps.gaps));
  };
  await load();
  follow("/events", start, coalesce(300, load), status);
}

function alertTable(alerts, reload) {
  const ack = async (alert, button) => {
    button.disabled = true;
    try {
      await post(`/alerts/${alert.id}/ack`, { by: "web" });
      await reload();
    } catch (error) {
      button.disabled = false;
      button.title = error.message;
    }
  };
  return table(
    alerts,
    [
      ["id", "#"],
      ["kind", "kind"],
      ["message", "message", (a) => clip(a.message, 140)],
      ["sessionId", "session", (a) => (a.sessionId ? h("a", { href: `/s/${encodeURIComponent(a.sessionId)}` }, clip(a.sessionId, 24)) : "")],
      ["raisedAt", "raised"],
      [
        "acknowledgedAt",
        "acknowledged",
        (a) =>
          a.acknowledgedAt ||
          h("button", { type: "button", class: "ack", onclick: (e) => ack(a, e.target) }, "Acknowledge"),
      ],
    ],
    "no alerts"
  );
}

/** A table of whatever the rows hold: every scalar field, documents as JSON text. */
function generic(rows) {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  const show = (value) => (value !== null && typeof value === "object" ? clip(JSON.stringify(value), 80) : value ?? "");
  return table(rows, keys.map((k) => [k, k, (r) => show(r[k])]));
}

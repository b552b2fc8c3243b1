// Cost you can see: a session's tokens and cost per turn as a small chart, and the usage page
// (`/cost`): cost and tokens by day and by model, from `GET /usage`, with the models it has no
// price for called out and how to price them. The numbers are the route's, as it gives them.

import { follow, get, head } from "./api.js";
import { coalesce, h, svg, table } from "./dom.js";

/** Every token a group counts: input, output, cache writes and reads. */
export function tokensOf(g) {
  return g.inputTokens + g.outputTokens + g.cacheWrite5mTokens + g.cacheWrite1hTokens + g.cacheReadTokens;
}

/** `$0.0123`: a cost as the API gives it, to four places. */
export function dollars(usd) {
  return `$${usd.toFixed(4)}`;
}

/**
 * Columns of bars, one per item, `value(item)` high, labelled under each; each bar carries its
 * item's numbers (`data-cost`, `data-tokens`) and says them on hover.
 */
function columns(items, { value, label, title, width = 360, height = 80, name }) {
  const max = Math.max(...items.map(value), 0) || 1;
  const step = Math.min(48, width / Math.max(1, items.length));
  const plot = height - 14;
  const shapes = items.flatMap((item, i) => {
    const tall = Math.max(1, (value(item) / max) * plot);
    return [
      svg(
        "rect",
        {
          class: `bar${item.unpricedModels.length ? " unpriced" : ""}`,
          x: i * step + 1,
          y: plot - tall,
          width: Math.max(1, step - 2),
          height: tall,
          "data-key": item.key,
          "data-cost": item.costUsd,
          "data-tokens": tokensOf(item),
        },
        svg("title", {}, document.createTextNode(title(item)))
      ),
      svg("text", { x: i * step + step / 2, y: height - 2, "text-anchor": "middle" }, document.createTextNode(label(item, i))),
    ];
  });
  return svg("svg", { class: "columns", width: Math.max(step * items.length, 60), height, role: "img", "aria-label": name }, shapes);
}

/** What a group's tokens and cost are, in words. */
function said(g) {
  const priced = g.unpricedModels.length ? ` (leaves out ${g.unpricedModels.join(", ")})` : "";
  return `${tokensOf(g).toLocaleString("en")} tokens (${g.inputTokens} in, ${g.outputTokens} out, ${g.cacheWrite5mTokens + g.cacheWrite1hTokens} cache writes, ${g.cacheReadTokens} cache reads), ${g.calls} calls, ${dollars(g.costUsd)}${priced}`;
}

/**
 * A session's turns as bars of cost (of tokens when nothing is priced), in the order of its
 * prompts: `turns` maps a turn's key to its number in the timeline.
 */
const TURNS_SHOWN = 60;

export function turnChart(answer, turns) {
  const groups = answer.groups
    .filter((g) => g.key !== "")
    .map((g) => ({ ...g, n: turns(g.key) }))
    .sort((a, b) => (a.n || Infinity) - (b.n || Infinity));
  if (!groups.length) return h("p", { class: "empty" }, "No turn's usage read from a transcript yet.");
  const priced = groups.some((g) => g.costUsd > 0);
  // A long session's chart shows its last turns: a column stays wide enough to see and hover.
  const last = groups.slice(-TURNS_SHOWN);
  const which = last.length < groups.length ? `, the last ${last.length} of ${groups.length} turns` : "";
  return h(
    "div",
    { class: "turn-chart", id: "turn-chart" },
    h("p", { class: "note" }, (priced ? "Cost per turn" : "Tokens per turn (no cost: nothing priced)") + which),
    columns(last, {
      value: (g) => (priced ? g.costUsd : tokensOf(g)),
      label: (g) => (g.n ? `${g.n}` : "?"),
      title: (g) => `turn ${g.n || "?"}: ${said(g)}`,
      name: "tokens and cost per turn",
    }),
    answer.total.costNote ? h("p", { class: "note cost-note" }, answer.total.costNote) : null
  );
}

/** The periods the usage page offers (`GET /usage`'s `since`), kept in the URL's fragment. */
const PERIODS = [
  ["", "all time"],
  ["7d", "the last 7 days"],
  ["30d", "the last 30 days"],
  ["90d", "the last 90 days"],
];

/** The usage page: cost and tokens by day and by model, live. */
export async function usagePage(main, status) {
  const start = await head();
  const days = h("div", { id: "usage-days" });
  const models = h("div", { id: "usage-models" });
  const notice = h("div", { id: "usage-unpriced" });
  let since = new URLSearchParams(location.hash.slice(1)).get("since") || "";
  if (!PERIODS.some(([value]) => value === since)) since = "";
  const period = h(
    "select",
    {
      id: "usage-since",
      onchange: (e) => {
        since = e.target.value;
        history.replaceState(null, "", since ? `#since=${since}` : location.pathname);
        load();
      },
    },
    PERIODS.map(([value, name]) => h("option", { value, selected: value === since }, name))
  );
  main.replaceChildren(
    h("h1", {}, "Cost and tokens"),
    h("p", { class: "note" }, h("label", {}, "Over ", period), " · from the agents' transcripts (GET /usage); days in UTC."),
    notice,
    h("section", {}, h("h2", {}, "By day"), days),
    h("section", {}, h("h2", {}, "By model"), models)
  );
  let asked = 0;
  const load = async () => {
    const n = ++asked;
    const range = since ? `&since=${since}` : "";
    const [byDay, byModel] = await Promise.all([get(`/usage?by=day${range}`), get(`/usage?by=model${range}`)]);
    if (n !== asked) return; // a later load (another period) is under way: its answer is drawn

    const columnsOf = [
      ["key", "", null],
      ["calls", "calls"],
      ["inputTokens", "input"],
      ["outputTokens", "output"],
      ["cacheWrite5mTokens", "cache writes (5m)"],
      ["cacheWrite1hTokens", "cache writes (1h)"],
      ["cacheReadTokens", "cache reads"],
      ["costUsd", "cost", (g) => (g.unpricedModels.length ? `${dollars(g.costUsd)} + unpriced` : dollars(g.costUsd))],
    ];
    const withTotal = (answer) => [...answer.groups, answer.total];
    days.replaceChildren(
      byDay.groups.length
        ? columns(byDay.groups.slice(-60), {
            value: (g) => g.costUsd || 0,
            label: (g) => g.key.slice(5),
            title: (g) => `${g.key}: ${said(g)}`,
            width: 720,
            name: "cost per day",
          })
        : null,
      table(withTotal(byDay), [["key", "day"], ...columnsOf.slice(1)], "no usage read yet")
    );
    models.replaceChildren(table(withTotal(byModel), [["key", "model"], ...columnsOf.slice(1)], "no usage read yet"));
    const unpriced = byModel.groups.filter((g) => g.unpricedModels.length);
    notice.replaceChildren(
      unpriced.length
        ? h(
            "div",
            { class: "unpriced", role: "note" },
            h("strong", {}, `⚠ Not priced: ${unpriced.map((g) => g.key).join(", ")}. `),
            `Their ${unpriced.reduce((n, g) => n + tokensOf(g), 0).toLocaleString("en")} tokens are counted, not costed. `,
            byModel.total.costNote || ""
          )
        : null
    );
  };
  await load();
  // A transcript's records are where usage comes from: reload after them, a second at most.
  const reload = coalesce(1000, load);
  follow("/events", start, (envelope) => envelope.type.startsWith("Transcript") && reload(), status);
}

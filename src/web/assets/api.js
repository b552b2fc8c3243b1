// The routes the page reads, as curl would: JSON answers, and event streams followed with
// their cursors. A stream that drops (the server restarted, the laptop slept) is reopened
// with the last position it delivered, so no event is missed or delivered twice.

/** GET a JSON route. A 401 means the login is gone: reload, the server shows the form. */
export async function get(path) {
  const response = await fetch(path, { headers: { accept: "application/json" }, cache: "no-store" });
  if (response.status === 401) {
    location.reload();
    throw new Error("unauthorized");
  }
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

/** POST a JSON body; answers the parsed JSON (or throws with the error envelope's message). */
export async function post(path, body = {}) {
  const response = await fetch(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(answer.message || `${path}: ${response.status}`);
  return answer;
}

/** "path?after_sequence=N" (or "&" when the path has a query already). */
function withCursor(path, after) {
  return `${path}${path.includes("?") ? "&" : "?"}after_sequence=${after}`;
}

/** The fields of one block of an event stream (`id`, `event`, `data`); comments skipped. Lines
 * are walked with indexOf, not split: a session's history is 100,000 blocks at once. */
function parseFrame(block) {
  const frame = {};
  const n = block.length;
  let start = 0;
  while (start < n) {
    let end = block.indexOf("\n", start);
    if (end < 0) end = n;
    if (end > start && block.charCodeAt(start) !== 58 /* ":" starts a comment */) {
      let colon = block.indexOf(":", start);
      if (colon < 0 || colon > end) colon = end;
      const field = block.slice(start, colon);
      let from = colon + 1;
      if (from < end && block.charCodeAt(from) === 32) from += 1;
      const value = from < end ? block.slice(from, end) : "";
      if (field === "data") frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
      else frame[field] = value;
    }
    start = end + 1;
  }
  return frame;
}

/**
 * Follows an event stream from position `after` (exclusive): calls onEvent(envelope, position)
 * for each event, in order, once; onStatus("live" | "reconnecting" | "ended") as the connection
 * changes. Reconnects with the last position delivered. Answers {stop()}.
 *
 * fetch rather than EventSource: frames are named by event type (which an EventSource only
 * delivers to a listener per name), and the cursor and a refusal stay in our hands.
 */
export function follow(path, after, onEvent, onStatus = () => {}) {
  let stopped = false;
  let controller = null;
  let delay = 200;
  const run = async () => {
    while (!stopped) {
      controller = new AbortController();
      try {
        const response = await fetch(withCursor(path, after), {
          headers: { accept: "text/event-stream" },
          cache: "no-store",
          signal: controller.signal,
        });
        if (response.status === 401) return location.reload();
        if (response.status === 400) {
          // A stale cursor: the database was replaced or pruned. Start the view over.
          onStatus("ended");
          return location.reload();
        }
        if (!response.ok) throw new Error(String(response.status));
        onStatus("live");
        delay = 200;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          const blocks = buffer.split("\n\n");
          buffer = blocks.pop();
          for (const block of blocks) {
            const frame = parseFrame(block);
            const position = Number(frame.id);
            // Position 0 is a STREAM_GAP notice; anything at or before `after` was delivered.
            if (frame.data === undefined || !(position > after)) continue;
            after = position;
            onEvent(JSON.parse(frame.data), position);
          }
        }
      } catch (error) {
        if (stopped) return;
      }
      onStatus("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay = Math.min(delay * 2, 2000);
    }
  };
  run();
  return {
    stop() {
      stopped = true;
      controller?.abort();
    },
  };
}

/** The log's head sequence now: where a live view starts following. */
export async function head() {
  return (await get("/events?limit=1")).headSequence;
}

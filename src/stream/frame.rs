//! The SSE wire form, for every stream hooklog serves: `id:`, `event:` and `data:` lines and a
//! blank line after each frame, the `retry:` prelude and the keepalive comment. No other file
//! writes SSE text.

use super::events::Delivery;
use axum::body::Bytes;
use std::time::Duration;

/// How long a disconnected EventSource waits before reconnecting.
pub const RETRY: Duration = Duration::from_secs(1);

/// What an idle stream sends so proxies and clients see it is alive.
pub const KEEPALIVE: &[u8] = b": keepalive\n\n";

/// The first bytes of every stream: the reconnection delay.
pub fn retry() -> Bytes {
    Bytes::from(format!("retry: {}\n\n", RETRY.as_millis()))
}

/// Appends one frame. `event` holds no line break (types are refused with control characters
/// at ingest; the other names are hooklog's); `data` may (see [`split_data_lines`]).
pub fn push(out: &mut String, id: i64, event: &str, data: &str) {
    push_with(out, id, event, |out| out.push_str(data));
}

/// One frame, alone.
pub fn one(id: i64, event: &str, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 64);
    push(&mut out, id, event, data);
    Bytes::from(out)
}

/// Appends one frame whose data `write` appends in place (so an envelope is rendered straight
/// into the frame).
fn push_with(out: &mut String, id: i64, event: &str, write: impl FnOnce(&mut String)) {
    out.push_str("id: ");
    out.push_str(itoa::Buffer::new().format(id));
    out.push_str("\nevent: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    let start = out.len();
    write(out);
    split_data_lines(out, start);
    out.push_str("\n\n");
}

/// The frames of a batch of log events, in one buffer; `frame_event` names every frame, else
/// each is named by its event's type. Envelopes are one line unless a row written from outside
/// hooklog holds pretty-printed JSON, which `split_data_lines` handles.
pub fn events(batch: &[Delivery], frame_event: Option<&str>) -> Bytes {
    let size: usize = batch
        .iter()
        .map(|d| d.event.event.payload.len() + 400)
        .sum();
    let mut out = String::with_capacity(size);
    for d in batch {
        let name = frame_event.unwrap_or(&d.event.event.event_type);
        push_with(&mut out, d.position, name, |out| {
            if d.live {
                // Live events go to every subscriber: render once, share.
                out.push_str(d.event.envelope_json());
            } else {
                d.event.write_envelope(out);
            }
        });
    }
    Bytes::from(out)
}

/// A line break inside `data:` would end the field: continue it on further `data:` lines (the
/// client joins them with a newline, which in JSON is only whitespace between tokens, since a
/// JSON string cannot hold a raw line break).
fn split_data_lines(out: &mut String, start: usize) {
    if memchr::memchr2(b'\n', b'\r', &out.as_bytes()[start..]).is_none() {
        return;
    }
    let text = out.split_off(start);
    let lines = text.split(['\n', '\r']).filter(|line| !line.is_empty());
    for (i, line) in lines.enumerate() {
        if i > 0 {
            out.push_str("\ndata: ");
        }
        out.push_str(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_in_an_envelope_continue_on_further_data_lines() {
        let mut out = String::from("data: ");
        out.push_str("{\r\n  \"a\": 1,\n  \"b\": [\n]\r}");
        split_data_lines(&mut out, 6);
        assert_eq!(
            out,
            "data: {\ndata:   \"a\": 1,\ndata:   \"b\": [\ndata: ]\ndata: }"
        );
        let mut one = String::from("data: {\"a\":1}");
        split_data_lines(&mut one, 6);
        assert_eq!(one, "data: {\"a\":1}");
    }

    #[test]
    fn a_frame_is_id_event_data_and_a_blank_line() {
        assert_eq!(
            &one(7, "changes", "{\n\"a\":1}")[..],
            b"id: 7\nevent: changes\ndata: {\ndata: \"a\":1}\n\n"
        );
    }
}

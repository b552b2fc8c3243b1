//! The SSE wire form of delivered events: `id:`, `event:` and `data:` lines, a blank line after
//! each frame.

use super::events::Delivery;
use axum::body::Bytes;

/// `id:`, `event:`, `data:` frames for a batch, in one buffer. Types hold no control
/// characters (ingest refuses them); envelopes are one line unless a row written from outside
/// hooklog holds pretty-printed JSON, which `split_data_lines` handles.
pub fn frames(batch: &[Delivery], frame_event: Option<&str>) -> Bytes {
    let size: usize = batch
        .iter()
        .map(|d| d.event.event.payload.len() + 400)
        .sum();
    let mut out = String::with_capacity(size);
    for d in batch {
        out.push_str("id: ");
        out.push_str(itoa::Buffer::new().format(d.position));
        out.push_str("\nevent: ");
        out.push_str(frame_event.unwrap_or(&d.event.event.event_type));
        out.push_str("\ndata: ");
        let start = out.len();
        if d.live {
            // Live events go to every subscriber: render once, share.
            out.push_str(d.event.envelope_json());
        } else {
            d.event.write_envelope(&mut out);
        }
        split_data_lines(&mut out, start);
        out.push_str("\n\n");
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
}

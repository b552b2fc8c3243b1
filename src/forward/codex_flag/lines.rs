//! Line arithmetic on the file's text: its line ending, the line at an offset, removing a
//! line with its ending.

use std::ops::Range;

/// The file's own line ending, for the lines hooklog adds.
pub(super) fn newline(text: &str) -> &'static str {
    if text.contains("\r\n") { "\r\n" } else { "\n" }
}

/// The line holding offset `at`, without its line ending.
pub(super) fn line_at(text: &str, at: usize) -> Range<usize> {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let end = if text[..end].ends_with('\r') {
        end - 1
    } else {
        end
    };
    start..end
}

/// The line before the one starting at `start`.
pub(super) fn line_before(text: &str, start: usize) -> Option<Range<usize>> {
    (start > 0).then(|| line_at(text, start - 1))
}

/// Removes a line with its line ending; the last line, having none, takes the one before it.
pub(super) fn remove_line(text: &mut String, line: Range<usize>) {
    let rest = &text[line.end..];
    if let Some(ending) = ["\r\n", "\n"].iter().find(|e| rest.starts_with(**e)) {
        text.replace_range(line.start..line.end + ending.len(), "");
    } else {
        text.replace_range(line.clone(), "");
        remove_newline_before(text, line.start);
    }
}

pub(super) fn remove_newline_before(text: &mut String, at: usize) {
    let before = &text[..at];
    let len = ["\r\n", "\n"]
        .iter()
        .find(|e| before.ends_with(**e))
        .map_or(0, |e| e.len());
    text.replace_range(at - len..at, "");
}

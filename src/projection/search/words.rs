//! What a person typed, as an FTS5 expression of quoted terms.

/// The FTS5 expression for what a person typed: each word a quoted term (so `"`, `*`, `:`,
/// `-`, `AND` and the like are text, never syntax), all of them required; a part in double
/// quotes is a phrase; a word ending in `*` is a prefix. A lone `"` is ignored. Words without
/// a letter or digit (which the tokenizer would drop) are left out, so the expression is empty
/// when nothing searchable was typed.
pub fn words_to_fts(input: &str) -> String {
    let mut terms: Vec<String> = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('"') {
            match after.find('"') {
                Some(end) => {
                    terms.extend(quoted(&after[..end], false));
                    rest = &after[end + 1..];
                }
                // A quote that is never closed: the words after it, as words.
                None => rest = after,
            }
            continue;
        }
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '"')
            .unwrap_or(rest.len());
        let word = &rest[..end];
        let (word, prefix) = match word.trim_end_matches('*') {
            trimmed if trimmed.len() < word.len() => (trimmed, true),
            _ => (word, false),
        };
        terms.extend(quoted(word, prefix));
        rest = rest[end..].trim_start_matches(char::is_whitespace);
    }
    terms.join(" ")
}

/// `"text"` (a quote inside doubled), with `*` after it for a prefix; `None` without a letter
/// or digit.
fn quoted(text: &str, prefix: bool) -> Option<String> {
    if !text.chars().any(char::is_alphanumeric) {
        return None;
    }
    let star = if prefix { "*" } else { "" };
    Some(format!("\"{}\"{star}", text.replace('"', "\"\"")))
}

//! The JSON depth limit. A request body is scanned as it arrives, before any parser sees it:
//! once `[` and `{` outside strings are nested deeper than the limit, reading the body fails
//! and the route answers `400 invalid_request` (details `{"maxDepth": N}`). Every route gets
//! it, whatever parser it then uses, at the cost of one pass over the bytes. The scanner runs
//! inside [`super::body_guard`], which wraps every request body.

/// Why reading a body failed: it was nested deeper than the limit.
#[derive(Debug, thiserror::Error)]
#[error("the body nests JSON deeper than {limit} levels")]
pub struct TooDeep {
    pub limit: usize,
}

/// Tracks nesting across chunks: a string, and an escape, may span a chunk boundary.
#[derive(Default)]
pub struct DepthScanner {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl DepthScanner {
    pub fn feed(&mut self, bytes: &[u8], limit: usize) -> Result<(), TooDeep> {
        for &b in bytes {
            if self.in_string {
                match (self.escaped, b) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth > limit {
                        return Err(TooDeep { limit });
                    }
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_ok(body: &str, limit: usize) -> bool {
        DepthScanner::default().feed(body.as_bytes(), limit).is_ok()
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        assert!(depth_ok(r#"{"a":[{"b":1}]}"#, 3));
        assert!(!depth_ok(r#"{"a":[{"b":[]}]}"#, 3));
        assert!(depth_ok(r#"{"a":"[[[[[[\"[[[["}"#, 1));
        assert!(depth_ok("{}\n{}\n{}", 1), "NDJSON lines each start at 0");
    }

    #[test]
    fn a_string_may_span_chunks() {
        let mut scanner = DepthScanner::default();
        scanner.feed(br#"{"a":"[[\"#, 1).unwrap();
        scanner.feed(br#""[[["}"#, 1).unwrap();
        assert!(scanner.feed(b"[[", 1).is_err());
    }
}

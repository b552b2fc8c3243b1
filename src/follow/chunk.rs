//! Reading the new part of a transcript: the whole lines after an offset, at most
//! [`MAX_READ`] bytes at a time. A line still being written (no newline yet) is left for the
//! next read.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// The most bytes one read takes from a transcript.
pub const MAX_READ: u64 = 8 * 1024 * 1024;

/// The whole lines of a file after `from`, and the offset just past the last of them.
#[derive(Debug, PartialEq)]
pub struct Chunk {
    pub bytes: Vec<u8>,
    pub end: u64,
    /// More whole lines may follow (the read stopped at [`MAX_READ`]).
    pub more: bool,
}

/// The lines after `from`; `None` when there is no whole new line. A file shorter than `from`
/// was replaced or cut: it is read again from the start (its records are already stored, so
/// they are duplicates, and only new ones are appended).
pub fn read(path: &Path, from: u64, max: u64) -> std::io::Result<Option<Chunk>> {
    let mut file = super::trust::open(path)?;
    let len = file.metadata()?.len();
    let from = if len < from { 0 } else { from };
    if len == from {
        return Ok(None);
    }
    let take = (len - from).min(max);
    file.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::with_capacity(take as usize);
    file.take(take).read_to_end(&mut bytes)?;
    let capped = take < len - from;
    let whole = match memchr::memrchr(b'\n', &bytes) {
        Some(last) => last + 1,
        // One line longer than a whole read: passed over, so the file can still be followed.
        None if capped => bytes.len(),
        None => return Ok(None),
    };
    bytes.truncate(whole);
    Ok(Some(Chunk {
        end: from + whole as u64,
        bytes,
        more: capped,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_lines_are_read_and_a_cut_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(&path, "one\ntwo\nthr").unwrap();
        let chunk = read(&path, 0, MAX_READ).unwrap().unwrap();
        assert_eq!(chunk.bytes, b"one\ntwo\n");
        assert_eq!(chunk.end, 8);
        assert!(!chunk.more);
        assert_eq!(read(&path, 8, MAX_READ).unwrap(), None, "no whole line yet");
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        assert_eq!(read(&path, 8, MAX_READ).unwrap().unwrap().bytes, b"three\n");
        let small = read(&path, 0, 5).unwrap().unwrap();
        assert_eq!(
            (small.bytes.as_slice(), small.end, small.more),
            (&b"one\n"[..], 4, true)
        );
        std::fs::write(&path, "new\n").unwrap();
        assert_eq!(read(&path, 14, MAX_READ).unwrap().unwrap().end, 4);
    }
}

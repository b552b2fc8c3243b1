//! The lines of a file `hooklog import` reads, within the limits `POST /events` keeps: a line
//! longer than the size limit is refused by its number and passed over without being held (so
//! a 100 MB line costs a buffer, not 100 MB), one nested deeper than the depth limit is refused
//! too (`http::depth`, the check every request body gets), and the file must be a regular one,
//! opened without waiting (a FIFO or a device is refused, never read).

use crate::http::depth::DepthScanner;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The size and depth a line may have.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub bytes: usize,
    pub depth: usize,
}

/// Why a line was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    TooLong { limit: usize },
    TooDeep { limit: usize },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooLong { limit } => write!(f, "the line is longer than {limit} bytes"),
            Refused::TooDeep { limit } => {
                write!(f, "the line nests JSON deeper than {limit} levels")
            }
        }
    }
}

/// Opens `path` for reading if it is a regular file, without waiting on a FIFO or a device.
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, a device or a folder is not read)",
        ));
    }
    Ok(file)
}

/// One line and its number (from 1): its bytes, or why it was not read.
pub type Line = (usize, Result<Vec<u8>, Refused>);

/// The lines of a file, numbered from 1, each read or refused.
pub struct Lines<R> {
    reader: R,
    limits: Limits,
    number: usize,
}

impl Lines<BufReader<File>> {
    pub fn new(file: File, limits: Limits) -> Self {
        Lines::from_reader(BufReader::with_capacity(64 * 1024, file), limits)
    }
}

impl<R: BufRead> Lines<R> {
    pub fn from_reader(reader: R, limits: Limits) -> Self {
        Lines {
            reader,
            limits,
            number: 0,
        }
    }

    /// The next line (without its `\n` or `\r\n`) and its number, or `None` at the end.
    pub fn next_line(&mut self) -> std::io::Result<Option<Line>> {
        let mut line = Vec::new();
        let mut refused = None;
        let mut scanner = DepthScanner::default();
        let mut any = false;
        loop {
            let buffer = self.reader.fill_buf()?;
            if buffer.is_empty() {
                if !any {
                    return Ok(None);
                }
                break;
            }
            any = true;
            let (part, ended) = match memchr::memchr(b'\n', buffer) {
                Some(at) => (&buffer[..at], Some(at + 1)),
                None => (buffer, None),
            };
            if refused.is_none() {
                if line.len() + part.len() > self.limits.bytes {
                    refused = Some(Refused::TooLong {
                        limit: self.limits.bytes,
                    });
                    line = Vec::new();
                } else if scanner.feed(part, self.limits.depth).is_err() {
                    refused = Some(Refused::TooDeep {
                        limit: self.limits.depth,
                    });
                    line = Vec::new();
                } else {
                    line.extend_from_slice(part);
                }
            }
            let used = ended.unwrap_or(buffer.len());
            self.reader.consume(used);
            if ended.is_some() {
                break;
            }
        }
        self.number += 1;
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Ok(Some((self.number, refused.map_or(Ok(line), Err))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str, bytes: usize, depth: usize) -> Vec<(usize, Result<String, Refused>)> {
        let mut lines = Lines::from_reader(
            std::io::BufReader::with_capacity(4, text.as_bytes()),
            Limits { bytes, depth },
        );
        let mut out = Vec::new();
        while let Some((n, line)) = lines.next_line().unwrap() {
            out.push((n, line.map(|l| String::from_utf8(l).unwrap())));
        }
        out
    }

    #[test]
    fn long_and_deep_lines_are_refused_by_number_and_the_rest_read() {
        let text = "{\"a\":1}\r\n0123456789abc\n[[[1]]]\n\nlast";
        let lines = all(text, 10, 2);
        assert_eq!(
            lines,
            vec![
                (1, Ok("{\"a\":1}".to_string())),
                (2, Err(Refused::TooLong { limit: 10 })),
                (3, Err(Refused::TooDeep { limit: 2 })),
                (4, Ok(String::new())),
                (5, Ok("last".to_string())),
            ]
        );
        assert!(all("", 10, 2).is_empty());
        assert_eq!(all("x\n", 10, 2), vec![(1, Ok("x".to_string()))]);
    }
}

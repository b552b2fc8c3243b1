//! Scoring by rank over the newest matches only. FTS5's own `bm25` weighs each term by how
//! rare it is in the whole index, which it learns by walking every match of the term once per
//! query: 2.4 million rows for a common word at 5,000,000 events, 40 ms, whatever the page.
//! So the window of matches `order=rank` reads is scored here instead, with the same formula
//! (BM25, k1 = 1.2, b = 0.75) over the window itself: a term's weight is how rare it is among
//! the window's matches, a text's length is compared with their average.
//!
//! FTS5 tells an auxiliary function, for the row it is on, where each phrase of the query
//! matched; [`register`] adds one, `hooklog_hits(search)`, that answers a row's length in
//! tokens and how often each phrase matched in it ([`Hits`]). rusqlite has no API for FTS5
//! auxiliary functions, so registering it is the C API's, through `rusqlite::ffi`.

use rusqlite::Connection;
use rusqlite::ffi;
use std::ffi::{c_int, c_void};
use std::ptr;

/// The auxiliary function's name, as SQL calls it: `hooklog_hits(search)`.
pub const HITS: &str = "hooklog_hits";

/// BM25's term-frequency saturation and length normalisation (the values FTS5's `bm25` uses).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Adds `hooklog_hits` to the FTS5 of `conn` (for this connection; once per connection).
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    // SAFETY: the handle is this open connection's and is used only within this call. The
    // statement is the documented way to get the `fts5_api` (sqlite.org/fts5.html, "Extending
    // FTS5"): `SELECT fts5(?1)` writes the pointer into the one bound, which lives until the
    // statement is finalised below. The function and its name are copied by FTS5.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "could not ask for FTS5's API"));
        }
        let mut api: *mut ffi::fts5_api = ptr::null_mut();
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&mut api as *mut *mut ffi::fts5_api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
        if api.is_null() || (*api).iVersion < 2 {
            return Err(failure(ffi::SQLITE_ERROR, "this SQLite has no FTS5 API v2"));
        }
        let create = (*api)
            .xCreateFunction
            .ok_or_else(|| failure(ffi::SQLITE_ERROR, "FTS5 cannot add functions"))?;
        let rc = create(
            api,
            c"hooklog_hits".as_ptr(),
            ptr::null_mut(),
            Some(hits),
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(failure(rc, "FTS5 refused hooklog_hits"));
        }
    }
    Ok(())
}

fn failure(rc: c_int, message: &str) -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message.to_string()))
}

/// `hooklog_hits(search)`: the row's length in tokens, then each phrase's number of matches in
/// it, as little-endian `u32`s in a blob.
unsafe extern "C" fn hits(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    _args: c_int,
    _values: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: FTS5 calls this with its API and the context of the row it is on, both valid for
    // the call; every function used is in API version 2 (checked in `register`).
    unsafe {
        match row_hits(&*api, fts) {
            Ok(blob) => ffi::sqlite3_result_blob(
                ctx,
                blob.as_ptr().cast(),
                blob.len() as c_int,
                ffi::SQLITE_TRANSIENT(),
            ),
            Err(rc) => ffi::sqlite3_result_error_code(ctx, rc),
        }
    }
}

/// # Safety
/// `api` and `fts` are those FTS5 passed to an auxiliary function, during the call.
unsafe fn row_hits(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
) -> Result<Vec<u8>, c_int> {
    let check = |rc: c_int| {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(rc)
        }
    };
    let missing = ffi::SQLITE_ERROR;
    unsafe {
        let phrases = api.xPhraseCount.ok_or(missing)?(fts).max(0) as usize;
        let mut counts = vec![0u32; phrases];
        let mut instances: c_int = 0;
        check(api.xInstCount.ok_or(missing)?(fts, &mut instances))?;
        let inst = api.xInst.ok_or(missing)?;
        for i in 0..instances {
            let (mut phrase, mut column, mut offset) = (0, 0, 0);
            check(inst(fts, i, &mut phrase, &mut column, &mut offset))?;
            if let Some(count) = counts.get_mut(phrase as usize) {
                *count += 1;
            }
        }
        let mut length: c_int = 0;
        check(api.xColumnSize.ok_or(missing)?(fts, -1, &mut length))?;
        let mut blob = Vec::with_capacity(4 * (phrases + 1));
        blob.extend_from_slice(&(length.max(0) as u32).to_le_bytes());
        for count in counts {
            blob.extend_from_slice(&count.to_le_bytes());
        }
        Ok(blob)
    }
}

/// A matched row as `hooklog_hits` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Hits {
    pub sequence: i64,
    /// The row's length in tokens.
    pub length: u32,
    /// How often each phrase of the query matched in it.
    pub phrases: Vec<u32>,
}

impl Hits {
    /// From a row's `hooklog_hits` blob.
    pub fn from_blob(sequence: i64, blob: &[u8]) -> Hits {
        let mut words = blob
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        Hits {
            sequence,
            length: words.next().unwrap_or(0),
            phrases: words.collect(),
        }
    }
}

/// Each row's rank, as FTS5 writes `rank` (the BM25 score negated: lower is better), scored
/// among `rows` alone: a phrase's weight is `ln(1 + (n - m + 0.5) / (m + 0.5))` for `m` of
/// the `n` rows holding it, a row's length is compared with the rows' average.
pub fn ranks(rows: &[Hits]) -> Vec<f64> {
    let n = rows.len() as f64;
    if rows.is_empty() {
        return Vec::new();
    }
    let average = rows.iter().map(|r| f64::from(r.length)).sum::<f64>() / n;
    let phrases = rows.iter().map(|r| r.phrases.len()).max().unwrap_or(0);
    let weights: Vec<f64> = (0..phrases)
        .map(|p| {
            let m = rows
                .iter()
                .filter(|r| r.phrases.get(p).is_some_and(|c| *c > 0))
                .count() as f64;
            (1.0 + (n - m + 0.5) / (m + 0.5)).ln()
        })
        .collect();
    rows.iter()
        .map(|row| {
            let norm = K1 * (1.0 - B + B * f64::from(row.length) / average.max(1.0));
            let score: f64 = row
                .phrases
                .iter()
                .zip(&weights)
                .map(|(count, weight)| {
                    let tf = f64::from(*count);
                    weight * tf * (K1 + 1.0) / (tf + norm)
                })
                .sum();
            -score
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sequence: i64, length: u32, phrases: &[u32]) -> Hits {
        Hits {
            sequence,
            length,
            phrases: phrases.to_vec(),
        }
    }

    #[test]
    fn more_matches_in_a_shorter_text_rank_first() {
        let ranks = ranks(&[row(1, 10, &[1]), row(2, 10, &[3]), row(3, 40, &[3])]);
        assert!(ranks[1] < ranks[0], "3 matches beat 1 in texts as long");
        assert!(ranks[1] < ranks[2], "the same matches in a shorter text");
        assert!(ranks.iter().all(|r| *r < 0.0));
    }

    #[test]
    fn a_rarer_phrase_weighs_more() {
        // "common OR rare": every row has the first phrase, one row the second.
        let rows = [
            row(1, 10, &[2, 0]),
            row(2, 10, &[0, 2]),
            row(3, 10, &[2, 0]),
        ];
        let ranks = ranks(&rows);
        assert!(ranks[1] < ranks[0] && ranks[1] < ranks[2]);
    }

    #[test]
    fn the_blob_reads_back() {
        let blob: Vec<u8> = [7u32, 2, 0].iter().flat_map(|w| w.to_le_bytes()).collect();
        assert_eq!(Hits::from_blob(5, &blob), row(5, 7, &[2, 0]));
    }
}

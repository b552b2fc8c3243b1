//! Full-text search over the log (`migrations/0013_search.sql`): the text a person would
//! search in each event, in `search_text` (one row per event that has any, keyed by its
//! sequence), and the FTS5 index `search` over it.
//!
//! It is a projection like the others, with one difference in where it is written: the
//! writer indexes the events it appends after the commit that acknowledged them, in batches
//! of their own ([`write`]; `meta`'s `search_through` says how far, and [`catch_up`] makes
//! the rest from the log after a crash); a rebuild
//! (and the migration that adds it) indexes the whole retained log at once ([`reindex`]);
//! retention deletes a pruned event's row ([`prune`]). Applying events to the retention
//! snapshot or to a scratch database (`projection::apply`) does not touch it: the index
//! holds the retained events only, and the snapshot file keeps its tables empty.
//!
//! What is searchable ([`text_of`]): the string values of the fields in [`TEXT_KEYS`] found
//! anywhere in the payload (a prompt, a tool's name, a message, a reason, ...), every string
//! inside the fields in [`DOCUMENTS`] (a tool's whole input and response: commands, file
//! paths, patterns, URLs, outputs), and for coordination outcomes the fields in
//! [`COORDINATION_KEYS`] (the chat, the session that claimed it, the outcome). Each string is
//! cut at [`MAX_STRING_CHARS`] characters (the bound hook ingest already applies inside tool
//! inputs and responses), and an event's text at [`MAX_TEXT_BYTES`].
//!
//! `text.rs` says what an event's text is, `index.rs` keeps the index, `words.rs` turns what a
//! person typed into an FTS5 expression, `query.rs` has the [`Query`] and [`search`],
//! `plans.rs` the statements a search runs and how their rows become [`Hit`]s, and `rank.rs`
//! how `order=rank` scores a match (each reader connection [`register`]s its function).

mod index;
mod plans;
mod query;
mod rank;
mod text;
mod words;

pub use index::{catch_up, check, dump, prune, reindex, text_to_index, through, write};
pub use query::{Cursor, Hit, Order, Page, Part, Query, SESSION_PROBES, is_query_error, search};
pub use rank::register;
pub use text::{
    COORDINATION_KEYS, DOCUMENTS, MAX_STRING_CHARS, MAX_TEXT_BYTES, TEXT_KEYS, UNINDEXED_SOURCES,
    text_of, text_of_payload,
};
pub use words::words_to_fts;

#[cfg(test)]
mod tests;

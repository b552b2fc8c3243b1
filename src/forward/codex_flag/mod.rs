//! `[features] codex_hooks = true` in Codex's `config.toml`: the switch without which a Codex
//! from before hooks became a stable feature (0.124.0) runs no hook at all.
//!
//! The file is edited as text and never written back from a parsed tree: toml_edit only says
//! where things are (byte spans), and hooklog inserts or replaces a few bytes there, so every
//! other byte, comment and blank line stays as it was. Each change carries a marker comment
//! saying what it was, and [`undo`] takes back exactly that change:
//!
//! | the file has | [`turn_on`] writes | marker |
//! |---|---|---|
//! | no `features` | a `[features]` table with the key, at the end | ` # hooklog: added` on both lines |
//! | `[features]` without the key | `codex_hooks = true` under the header | ` # hooklog: added` |
//! | dotted `features.x = ...` keys | `features.codex_hooks = true` above the first | ` # hooklog: added` |
//! | `features = { ... }` | `codex_hooks = true` first in the braces | [`ADDED_INLINE`] on the line above |
//! | `codex_hooks = false` | `true` in its place | [`WAS_FALSE`] on the line above |
//! | `codex_hooks = true`, or Codex's newer name `hooks` | nothing: the setting is the user's | |
//!
//! Only a Codex from before hooks were on by default needs the flag; `version.rs` decides
//! from the version Codex reports. For a later Codex, install takes back a flag an older
//! hooklog wrote (with [`undo`]), so the deprecation notice Codex prints for it goes away.
//!
//! This file holds the markers and the error; `edit.rs` makes and takes back the change,
//! `locate.rs` finds where the file writes `features` and the flag, and `lines.rs` does the
//! line arithmetic on the text.

mod edit;
mod lines;
mod locate;
pub mod version;

pub use edit::{turn_on, undo};
pub use locate::hooks_off;

/// The feature's key in `[features]`.
pub const KEY: &str = "codex_hooks";
/// Ends a line that hooklog wrote whole.
const ADDED: &str = " # hooklog: added";
/// The line above a `codex_hooks` that hooklog turned from `false` to `true`.
pub const WAS_FALSE: &str = "# hooklog: codex_hooks below was false";
/// The line above a `features = { ... }` that hooklog put `codex_hooks = true` into.
pub const ADDED_INLINE: &str = "# hooklog: added codex_hooks to the line below";
/// What hooklog puts right after the `{` of an inline `features` table: the first when the
/// table had other keys, the second when it was empty.
const INLINE_ENTRIES: [&str; 2] = [" codex_hooks = true,", " codex_hooks = true "];

#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    #[error("{0} is not valid TOML: {1}")]
    Toml(String, toml_edit::TomlError),
    #[error("{0}: `features` must be a table, and `features.{KEY}` true or false")]
    Shape(String),
    #[error(
        "{0}: hooklog's edit would not leave valid TOML with `{KEY}` on; the file is left as it is"
    )]
    Unsafe(String),
}

#[cfg(test)]
mod tests;

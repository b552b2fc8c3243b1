//! `GET /search`: full-text search over the log (`projection::search`), newest first or by
//! rank, a page at a time.

use super::AppState;
use super::error::ApiError;
use super::events::page_limit_or;
use super::extract::{ApiQuery, blank_is_absent};
use crate::event::time;
use crate::http::openapi::schemas;
use crate::ingest::InvalidRequest;
use crate::projection::search::{self, Cursor, Hit, Order, Query};
use crate::store::StoreError;
use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Hits on a page unless `limit` says otherwise.
pub const DEFAULT_HITS: u32 = 20;
/// The longest `q`, in characters.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// Most words and phrases in one search, and most prefix terms (`word*`) among them: each is
/// a walk of the index, and a prefix one of every term it expands to.
pub const MAX_TERMS: usize = 64;
pub const MAX_PREFIXES: usize = 8;
/// Searches run at once, at most: the others wait (up to their budget) without a reader, so
/// half the reader pool (8 by default) stays free for cheap reads.
pub const CONCURRENT_SEARCHES: usize = 4;

static SEARCHING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(CONCURRENT_SEARCHES);

/// How long a search waits for the events acknowledged before it to be indexed (the writer
/// indexes them after their commit, in batches: normally within milliseconds).
pub const SEARCH_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// What to look for. In `words` mode (the default): words, all required, in any order;
    /// `"a phrase"` in double quotes; `prefix*`. Any other character is plain text. In `fts`
    /// mode: an FTS5 query expression (`AND`, `OR`, `NOT`, `NEAR(...)`, `"phrases"`,
    /// `prefix*`, `^first`).
    ///
    /// Required; it must have a character that is neither white space nor a control character,
    /// and no control character but tab and line breaks. (The pattern spells out Rust's white
    /// space, `char::is_whitespace`, as a pattern's `\s` differs.)
    #[param(
        required = true,
        min_length = 1,
        max_length = 2000,
        pattern = r"^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*[^\x00-\x20\x7F-\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$"
    )]
    q: Option<String>,
    /// `words` (default) or `fts`.
    #[param(schema_with = modes)]
    mode: Option<String>,
    /// Only this session's events (`sessionId` is accepted too).
    #[serde(alias = "sessionId")]
    session: Option<String>,
    /// Only events of this type.
    #[serde(rename = "type")]
    event_type: Option<String>,
    /// Only events of this source.
    source: Option<String>,
    /// Only events first stored by this hooklog instance (its `--origin` name; see
    /// docs/scale-out.md).
    origin: Option<String>,
    /// Only events whose time is at or after this: an RFC 3339 time, or an age (`7d`, `12h`,
    /// `90m`).
    #[serde(default, deserialize_with = "blank_is_absent")]
    #[param(schema_with = super::openapi::schemas::moment)]
    since: Option<String>,
    /// Only events whose time is before this (same forms as `since`).
    #[serde(default, deserialize_with = "blank_is_absent")]
    #[param(schema_with = super::openapi::schemas::moment)]
    until: Option<String>,
    /// `newest` (default): highest sequence first. `rank`: best match first (BM25 among the newest 10,000 matches).
    #[param(schema_with = orders)]
    order: Option<String>,
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<u32>,
    /// The `nextCursor` of the page before, with the same query.
    #[serde(default, deserialize_with = "blank_is_absent")]
    cursor: Option<String>,
}

fn modes() -> utoipa::openapi::schema::Object {
    enumeration(&["words", "fts"])
}

fn orders() -> utoipa::openapi::schema::Object {
    enumeration(&["newest", "rank"])
}

fn enumeration(values: &[&str]) -> utoipa::openapi::schema::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values.iter().copied()))
        .build()
}

#[derive(Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchPage {
    hits: Vec<Hit>,
    /// Pass as `cursor` for the next page; `null` on the last.
    next_cursor: Option<String>,
    /// The FTS5 expression that ran (in `words` mode, what `q` became).
    query: String,
    /// Every event at or below this sequence was searchable when the page was read. A search
    /// waits up to a second for the events acknowledged before it to be indexed, so this is
    /// normally the head it saw (docs/api.md).
    indexed_through: i64,
    order: &'static str,
}

#[utoipa::path(
    get,
    path = "/search",
    tag = "events",
    params(SearchQuery),
    responses(
        (status = 200, description = "A page of hits, each with its event's id, session, positions, time and a snippet.", body = SearchPage),
        (status = 400, description = "Invalid input (in `fts` mode, an expression FTS5 refuses); nothing was done.", body = schemas::ErrorBody)
    )
)]
/// `GET /search?q=...`: events whose text matches, newest first (or by rank), `limit` 20 by
/// default, the next page by `cursor`.
pub async fn search(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> Result<Json<SearchPage>, ApiError> {
    let q = query.q.unwrap_or_default();
    if q.trim().is_empty() {
        return Err(ApiError::invalid("q is required: what to search for"));
    }
    // Tabs and line breaks (pasted text) are spaces to the tokenizer; other control
    // characters (a NUL broke the statement) are nothing a person searches for.
    if q.chars()
        .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(ApiError::invalid(
            "q has a control character (NUL, ESC, ...): search for words",
        ));
    }
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::invalid(format!(
            "q is longer than {MAX_QUERY_CHARS} characters"
        )));
    }
    let fts = match query.mode.as_deref() {
        None | Some("words") => false,
        Some("fts") => true,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "mode must be words or fts, not {other:?}"
            )));
        }
    };
    let order = match query.order.as_deref() {
        None | Some("newest") => Order::Newest,
        Some("rank") => Order::Rank,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "order must be newest or rank, not {other:?}"
            )));
        }
    };
    let cursor = match query.cursor.as_deref() {
        None => None,
        Some(text) => match (Cursor::decode(text), order) {
            (Some(c @ Cursor::Before(_)), Order::Newest)
            | (Some(c @ Cursor::After(..)), Order::Rank) => Some(c),
            _ => {
                return Err(ApiError::invalid(
                    "cursor is not one this search gave (pass nextCursor back with the same order)",
                ));
            }
        },
    };
    let now = chrono::Utc::now();
    let search = Query {
        expression: if fts {
            q.clone()
        } else {
            search::words_to_fts(&q)
        },
        session: query.session,
        event_type: query.event_type,
        source: query.source,
        origin: query.origin,
        since: query
            .since
            .as_deref()
            .map(|t| moment("since", t, now))
            .transpose()?,
        until: query
            .until
            .as_deref()
            .map(|t| moment("until", t, now))
            .transpose()?,
        order,
        limit: page_limit_or(query.limit, DEFAULT_HITS)?,
        cursor,
    };
    let expression = search.expression.clone();
    let (terms, prefixes) = terms_of(&expression);
    if terms > MAX_TERMS || prefixes > MAX_PREFIXES {
        return Err(ApiError::Invalid(InvalidRequest::new(
            format!(
                "q has {terms} terms, {prefixes} of them prefixes (word*): at most {MAX_TERMS} and {MAX_PREFIXES}"
            ),
            json!({ "maxTerms": MAX_TERMS, "maxPrefixes": MAX_PREFIXES }),
        )));
    }
    let budget = state.config.security.search_budget;
    let over = move || {
        ApiError::Invalid(InvalidRequest::new(
            format!(
                "the search was stopped after {} ms: it reads too much of the index; add words, a session, a time range, or use order=newest",
                budget.as_millis()
            ),
            json!({ "budgetMs": budget.as_millis() as u64 }),
        ))
    };
    let _turn = tokio::time::timeout(budget, SEARCHING.acquire())
        .await
        .map_err(|_| {
            ApiError::Overloaded(crate::http::error::Overload::Readers(format!(
                "{CONCURRENT_SEARCHES} searches were running for all of {} ms",
                budget.as_millis()
            )))
        })?
        .map_err(|_| ApiError::ShuttingDown)?;
    let writer = &state.store.writer;
    writer.search().reached(writer.head(), SEARCH_WAIT).await;
    let (page, indexed_through) = state
        .store
        .read_within(budget, move |conn| {
            // One read transaction: the hits' events are those the page's query saw.
            let tx = conn.unchecked_transaction()?;
            let page = search::search(&tx, &search)?;
            let through = search::through(&tx)?;
            tx.finish()?;
            Ok((page, through))
        })
        .await
        .map_err(|e| match e {
            StoreError::Sqlite(e) if fts && search::is_query_error(&e) => {
                ApiError::Invalid(InvalidRequest::new(
                    format!("q is not an FTS5 query expression this index takes: {e}"),
                    json!({ "mode": "fts", "query": expression }),
                ))
            }
            StoreError::OverBudget { .. } => over(),
            e => e.into(),
        })?;
    Ok(Json(SearchPage {
        hits: page.hits,
        next_cursor: page.next.map(|c| c.encode()),
        query: expression,
        indexed_through,
        order: match order {
            Order::Newest => "newest",
            Order::Rank => "rank",
        },
    }))
}

/// The words and phrases of an FTS5 expression, and how many of them are prefixes: what is
/// outside double quotes split at spaces and parentheses (operators count: `a OR b` is three),
/// each quoted string one, and each `*` after a term a prefix.
fn terms_of(expression: &str) -> (usize, usize) {
    let (mut terms, mut prefixes) = (0, 0);
    let mut quoted = false;
    let mut in_term = false;
    for c in expression.chars() {
        match (quoted, c) {
            (false, '"') => {
                quoted = true;
                terms += 1;
                in_term = false;
            }
            (true, '"') => quoted = false,
            (true, _) => {}
            (false, '*') => prefixes += 1,
            (false, c) if c.is_whitespace() || c == '(' || c == ')' => in_term = false,
            (false, _) => {
                if !in_term {
                    terms += 1;
                }
                in_term = true;
            }
        }
    }
    (terms, prefixes)
}

/// `since` or `until` in the log's time format: an RFC 3339 time, or an age before `now`.
pub(super) fn moment(
    name: &str,
    text: &str,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<String, ApiError> {
    if let Some(t) = time::normalize(text) {
        return Ok(t);
    }
    age(text)
        .and_then(|age| now.checked_sub_signed(age))
        .map(time::format)
        .ok_or_else(|| {
            ApiError::invalid(format!(
                "{name} must be an RFC 3339 time (2026-11-30T12:00:00Z) or an age: 1 to 5 digits and s, m, h, d or w (7d, 12h, 90m)"
            ))
        })
}

/// An age as the description states it (`schemas::moment`): 1 to 5 digits, then `s`, `m`,
/// `h`, `d` or `w`. Nothing else, so what the description allows is exactly what is read.
fn age(text: &str) -> Option<chrono::Duration> {
    let unit = text.chars().last()?;
    let digits = &text[..text.len() - unit.len_utf8()];
    if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = digits.parse().ok()?;
    match unit {
        's' => Some(chrono::Duration::seconds(n)),
        'm' => Some(chrono::Duration::minutes(n)),
        'h' => Some(chrono::Duration::hours(n)),
        'd' => Some(chrono::Duration::days(n)),
        'w' => Some(chrono::Duration::weeks(n)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ages_are_digits_and_one_unit_as_described() {
        let now = chrono::Utc::now();
        for ok in ["7d", "12h", "90m", "30s", "2w", "0d", "99999d"] {
            assert!(super::moment("since", ok, now).is_ok(), "{ok}");
        }
        for bad in [
            "", "d", "7", "1 day", "12h 30m", "1y", "100000d", "-1d", "7D", "٣d",
        ] {
            assert!(super::moment("since", bad, now).is_err(), "{bad}");
        }
        assert!(super::moment("since", "2026-11-30T12:00:00+02:00", now).is_ok());
    }

    #[test]
    fn terms_and_prefixes_are_counted_as_fts5_reads_them() {
        assert_eq!(super::terms_of("\"cargo\" \"test\""), (2, 0));
        assert_eq!(super::terms_of("\"chec\"* \"half to\""), (2, 1));
        assert_eq!(super::terms_of("a* OR b* OR (c NOT d)"), (7, 2));
        assert_eq!(super::terms_of("NEAR(a b, 5)"), (4, 0));
    }
}

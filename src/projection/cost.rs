//! Usage summed by a key and costed: what `GET /usage`, `hooklog usage` and a session's page
//! show. Each key's rows come per model from [`usage::totals`]; a model the price table knows
//! adds to `costUsd`, one it does not is listed in `unpricedModels` (its tokens still count).

use super::prices::Prices;
use super::usage::{Row, Tokens};
use crate::ingest::transcript::Usage;
use serde::Serialize;

/// One key's tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The day (`YYYY-MM-DD`), session id, model, project directory, turn or origin.
    pub key: String,
    /// The tokens, count by count.
    #[serde(flatten)]
    pub tokens: Usage,
    /// Model calls counted (a streamed message is one).
    pub calls: u64,
    /// USD, for the tokens of the priced models.
    pub cost_usd: f64,
    /// Models with no price: their tokens are counted above, not costed.
    pub unpriced_models: Vec<String>,
    /// What `costUsd` leaves out, said for a person ([`unpriced_note`]); `null` when every
    /// model is priced.
    pub cost_note: Option<String>,
}

impl Group {
    fn add(&mut self, model: &str, tokens: &Tokens, prices: &Prices) {
        let u = &tokens.usage;
        self.tokens.add(u);
        self.calls += tokens.calls;
        match prices.cost(model, u) {
            Some(cost) => self.cost_usd += cost,
            None if !self.unpriced_models.iter().any(|m| m == model) => {
                self.unpriced_models.push(model.to_string());
                self.unpriced_models.sort();
            }
            None => {}
        }
    }
}

/// The groups, one per key in the rows' order, and their total.
pub fn groups(rows: &[Row], prices: &Prices) -> (Vec<Group>, Group) {
    let mut groups: Vec<Group> = Vec::new();
    let mut total = Group {
        key: "total".into(),
        ..Group::default()
    };
    for row in rows {
        if groups.last().is_none_or(|g| g.key != row.key) {
            groups.push(Group {
                key: row.key.clone(),
                ..Group::default()
            });
        }
        let group = groups.last_mut().expect("pushed");
        group.add(&row.model, &row.tokens, prices);
        total.add(&row.model, &row.tokens, prices);
    }
    for group in groups.iter_mut().chain([&mut total]) {
        group.cost_note = unpriced_note(&group.unpriced_models);
    }
    (groups, total)
}

/// Where hooklog's docs say how cost is computed and how to add a price.
pub const COST_DOCS: &str = "docs/usage.md#cost";

/// What a cost leaves out, for a person: the models with no price and how to add one; `None`
/// when there are none. (`hooklog usage` and the web page say the same.)
pub fn unpriced_note(models: &[String]) -> Option<String> {
    if models.is_empty() {
        return None;
    }
    let (price, its, it) = match models.len() {
        1 => ("no published price", "its", "it"),
        _ => ("no published prices", "their", "them"),
    };
    Some(format!(
        "cost leaves out {} ({price} known to hooklog; {its} tokens are counted); add {it} with `hooklog serve --prices FILE`, see {COST_DOCS}",
        models.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::transcript::Usage;

    fn row(key: &str, model: &str, input: u64) -> Row {
        Row {
            key: key.into(),
            model: model.into(),
            tokens: Tokens {
                usage: Usage {
                    input,
                    ..Usage::default()
                },
                calls: 1,
            },
        }
    }

    #[test]
    fn unknown_models_are_counted_and_listed_not_priced_at_zero() {
        let rows = [
            row("s1", "claude-haiku-4-5-20251001", 1_000_000),
            row("s1", "claude-nightly", 5),
            row("s2", "gpt-5-codex", 1_000_000),
        ];
        let (groups, total) = groups(&rows, &Prices::default());
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].tokens.input, 1_000_005);
        assert_eq!(groups[0].cost_usd, 1.0);
        assert_eq!(groups[0].unpriced_models, ["claude-nightly"]);
        assert_eq!(groups[1].cost_usd, 1.25);
        assert_eq!(total.calls, 3);
        assert_eq!(total.cost_usd, 2.25);
        assert_eq!(total.unpriced_models, ["claude-nightly"]);
        let note = total.cost_note.as_deref().unwrap();
        assert!(
            note.starts_with("cost leaves out claude-nightly (no published price"),
            "{note}"
        );
        assert!(note.contains("hooklog serve --prices FILE"), "{note}");
        assert!(note.contains("docs/usage.md#cost"), "{note}");
        assert_eq!(groups[1].cost_note, None, "every model of s2 is priced");
    }

    #[test]
    fn the_models_claude_code_sends_by_default_are_priced() {
        // Claude Code 2.1.197: `claude-opus-4-8` (default, `opus`), `claude-sonnet-5`
        // (`sonnet`), `claude-fable-5`; 2.1.332: `claude-opus-5-5` (default); prices as
        // published (docs/usage.md#cost).
        let prices = Prices::default();
        let million = |input| Tokens {
            usage: crate::ingest::transcript::Usage {
                input,
                output: 1_000_000,
                cache_write_5m: 1_000_000,
                cache_write_1h: 1_000_000,
                cache_read: 1_000_000,
                reasoning: 0,
            },
            calls: 1,
        };
        for (model, expected) in [
            ("claude-opus-4-8", 5.0 + 25.0 + 6.25 + 10.0 + 0.5),
            ("claude-opus-5-5", 4.0 + 20.0 + 5.0 + 8.0 + 0.2),
            ("claude-opus-5", 5.0 + 25.0 + 6.25 + 10.0 + 0.5),
            ("claude-sonnet-5", 2.0 + 10.0 + 2.5 + 4.0 + 0.2),
            ("claude-fable-5", 10.0 + 50.0 + 12.5 + 20.0 + 1.0),
        ] {
            let rows = [Row {
                key: "s".into(),
                model: model.into(),
                tokens: million(1_000_000),
            }];
            let (_, total) = groups(&rows, &prices);
            assert!(total.unpriced_models.is_empty(), "{model}");
            assert!(
                (total.cost_usd - expected).abs() < 1e-9,
                "{model}: {}",
                total.cost_usd
            );
        }
    }
}

//! Usage summed by a key and costed: what `GET /usage`, `hooklog usage` and a session's page
//! show. Each key's rows come per model from [`usage::totals`]; a model the price table knows
//! adds to `costUsd`, one it does not is listed in `unpricedModels` (its tokens still count).

use super::prices::Prices;
use super::usage::{Row, Tokens};
use serde::Serialize;

/// One key's tokens and cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Group {
    /// The day (`YYYY-MM-DD`), session id, model, project directory, turn or origin.
    pub key: String,
    /// Input tokens not read from the cache.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    pub cache_write_5m_tokens: u64,
    pub cache_write_1h_tokens: u64,
    pub cache_read_tokens: u64,
    /// The part of the output spent reasoning (Codex reports it).
    pub reasoning_tokens: u64,
    /// Model calls counted (a streamed message is one).
    pub calls: u64,
    /// USD, for the tokens of the priced models.
    pub cost_usd: f64,
    /// Models with no price: their tokens are counted above, not costed.
    pub unpriced_models: Vec<String>,
}

impl Group {
    fn add(&mut self, model: &str, tokens: &Tokens, prices: &Prices) {
        let u = &tokens.usage;
        self.input_tokens += u.input;
        self.output_tokens += u.output;
        self.cache_write_5m_tokens += u.cache_write_5m;
        self.cache_write_1h_tokens += u.cache_write_1h;
        self.cache_read_tokens += u.cache_read;
        self.reasoning_tokens += u.reasoning;
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
    (groups, total)
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
        assert_eq!(groups[0].input_tokens, 1_000_005);
        assert_eq!(groups[0].cost_usd, 1.0);
        assert_eq!(groups[0].unpriced_models, ["claude-nightly"]);
        assert_eq!(groups[1].cost_usd, 1.25);
        assert_eq!(total.calls, 3);
        assert_eq!(total.cost_usd, 2.25);
        assert_eq!(total.unpriced_models, ["claude-nightly"]);
    }
}

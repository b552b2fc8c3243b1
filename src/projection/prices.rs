//! Model prices, and the cost of token counts. The table is `prices.json` beside this file,
//! dated (`asOf`) and naming its sources; a file in the same form (`--prices FILE`) adds models
//! or replaces their prices. A model found in neither is unpriced: its tokens are counted and
//! its name listed, never priced at zero. docs/usage.md has the table and where it came from.

use crate::ingest::transcript::Usage;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

const EMBEDDED: &str = include_str!("prices.json");

/// One model's prices, in USD per million tokens. A price left out is unknown: tokens of that
/// kind make the model's cost unknown (OpenAI models have no cache writes, so none are given).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write_5m: Option<f64>,
    pub cache_write_1h: Option<f64>,
    pub cache_read: Option<f64>,
}

/// A price table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prices {
    /// The date of the sources the prices were read from.
    pub as_of: String,
    pub models: BTreeMap<String, Price>,
}

impl Default for Prices {
    fn default() -> Prices {
        serde_json::from_str(EMBEDDED).expect("the embedded price table is valid")
    }
}

impl Prices {
    /// The embedded table with the models of `file` added or replaced (its `asOf` wins).
    pub fn with_file(file: &Path) -> anyhow::Result<Prices> {
        let text = std::fs::read_to_string(file)?;
        let extra: Prices = serde_json::from_str(&text)?;
        let mut prices = Prices::default();
        prices.models.extend(extra.models);
        prices.as_of = extra.as_of;
        Ok(prices)
    }

    /// A model's prices: by its exact name, else without a date suffix
    /// (`claude-sonnet-4-5-20250929` is `claude-sonnet-4-5`, `gpt-5-2025-08-07` is `gpt-5`).
    pub fn of(&self, model: &str) -> Option<&Price> {
        self.models
            .get(model)
            .or_else(|| self.models.get(undated(model)?))
    }

    /// What `usage` cost on `model`, in USD; `None` when the model, or the price of a kind of
    /// token it used, is not in the table.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        let price = self.of(model)?;
        let part = |tokens: u64, price: Option<f64>| match tokens {
            0 => Some(0.0),
            n => price.map(|p| n as f64 * p),
        };
        let micro = part(usage.input, Some(price.input))?
            + part(usage.output, Some(price.output))?
            + part(usage.cache_write_5m, price.cache_write_5m)?
            + part(usage.cache_write_1h, price.cache_write_1h)?
            + part(usage.cache_read, price.cache_read)?;
        Some(micro / 1_000_000.0)
    }
}

/// The embedded table, with `file`'s models when one is given.
pub fn load(file: Option<&Path>) -> anyhow::Result<Prices> {
    use anyhow::Context;
    match file {
        None => Ok(Prices::default()),
        Some(file) => Prices::with_file(file)
            .with_context(|| format!("reading the price table {}", file.display())),
    }
}

/// `model` without a trailing `-YYYYMMDD` or `-YYYY-MM-DD`.
fn undated(model: &str) -> Option<&str> {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if let Some((head, date)) = model.rsplit_once('-')
        && date.len() == 8
        && digits(date)
    {
        return Some(head);
    }
    let parts: Vec<&str> = model.rsplitn(4, '-').collect();
    match parts.as_slice() {
        [d, m, y, head] if d.len() == 2 && m.len() == 2 && y.len() == 4 => {
            (digits(d) && digits(m) && digits(y)).then_some(*head)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dated_model_names_find_their_family_and_unknown_models_stay_unpriced() {
        let prices = Prices::default();
        assert_eq!(prices.as_of, "2026-12-03");
        assert!(prices.of("claude-sonnet-4-5-20250929").is_some());
        assert!(prices.of("claude-opus-4-20250514").is_some());
        assert_eq!(undated("gpt-5-2025-08-07"), Some("gpt-5"));
        assert_eq!(undated("gpt-5-codex"), None);
        assert!(prices.of("claude-nightly").is_none());
        let usage = Usage {
            input: 1,
            ..Usage::default()
        };
        assert_eq!(prices.cost("claude-nightly", &usage), None);
        assert_eq!(prices.cost("<synthetic>", &usage), None);
    }

    #[test]
    fn cost_is_each_kind_of_token_at_its_price() {
        let prices = Prices::default();
        // The fixture's Sonnet messages (fixtures/transcripts/README.md).
        let sonnet = Usage {
            input: 23,
            output: 755,
            cache_write_5m: 2_500,
            cache_write_1h: 300,
            cache_read: 55_500,
            reasoning: 0,
        };
        let cost = prices.cost("claude-sonnet-4-5-20250929", &sonnet).unwrap();
        assert!((cost - 0.039219).abs() < 1e-12, "{cost}");
        // Codex: no cache-write price, and none needed.
        let codex = Usage {
            input: 5_000,
            output: 1_000,
            cache_read: 15_000,
            reasoning: 300,
            ..Usage::default()
        };
        let cost = prices.cost("gpt-5-codex", &codex).unwrap();
        assert!((cost - 0.018125).abs() < 1e-12, "{cost}");
        let written = Usage {
            cache_write_5m: 1,
            ..codex
        };
        assert_eq!(prices.cost("gpt-5-codex", &written), None);
    }
}

//! Prices per token, from LiteLLM's public price table (a dated snapshot ships in
//! `prices/`; `--prices FILE` reads another in the same format), and what a response
//! costs by them, as ccusage 20.0.24 computes it (checked against it in
//! `tests/usage_ccusage.rs`):
//! - each kind of token at its own price; where the table has an `_above_200k_tokens`
//!   price, a response's tokens of that kind past 200,000 cost that;
//! - one-hour cache writes at `cache_creation_input_token_cost_above_1hr`, else twice
//!   the input price; a kind of token the table gives no price for costs nothing (a
//!   model that has no input or output price at all is unknown);
//! - reasoning counted apart from output (Gemini's thoughts) at the output price;
//! - Claude's fast mode at a multiple (6x for Opus 4.6 and 4.7, 2x for 4.8).

use crate::error::{Error, Result};
use crate::usage_record::Tokens;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// The shipped snapshot and where it comes from.
const SNAPSHOT: &str = include_str!("prices/litellm-1.102.0.json");
pub const SNAPSHOT_NAME: &str = "LiteLLM 1.102.0 (2026-09-20)";

/// Where a response's tokens of one kind start costing the higher price.
const TIER: u64 = 200_000;

/// A model's prices per token (USD).
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub struct Price {
    #[serde(default, rename = "input_cost_per_token")]
    pub input: Option<f64>,
    #[serde(default, rename = "output_cost_per_token")]
    pub output: Option<f64>,
    #[serde(default, rename = "cache_creation_input_token_cost")]
    pub cache_write: Option<f64>,
    #[serde(default, rename = "cache_creation_input_token_cost_above_1hr")]
    pub cache_write_1h: Option<f64>,
    #[serde(default, rename = "cache_read_input_token_cost")]
    pub cache_read: Option<f64>,
    #[serde(default, rename = "input_cost_per_token_above_200k_tokens")]
    pub input_above: Option<f64>,
    #[serde(default, rename = "output_cost_per_token_above_200k_tokens")]
    pub output_above: Option<f64>,
    #[serde(default, rename = "cache_creation_input_token_cost_above_200k_tokens")]
    pub cache_write_above: Option<f64>,
    #[serde(
        default,
        rename = "cache_creation_input_token_cost_above_1hr_above_200k_tokens"
    )]
    pub cache_write_1h_above: Option<f64>,
    #[serde(default, rename = "cache_read_input_token_cost_above_200k_tokens")]
    pub cache_read_above: Option<f64>,
}

/// `n` tokens at `base`, those past the tier at `above` when there is such a price.
fn tiered(n: u64, base: Option<f64>, above: Option<f64>) -> f64 {
    let Some(base) = base else { return 0.0 };
    match above {
        Some(a) if n > TIER => TIER as f64 * base + (n - TIER) as f64 * a,
        _ => n as f64 * base,
    }
}

impl Price {
    /// What `t` cost at these prices.
    pub fn cost(&self, t: &Tokens) -> f64 {
        let twice = |p: Option<f64>| p.map(|p| 2.0 * p);
        tiered(t.input, self.input, self.input_above)
            + tiered(t.output + t.reasoning, self.output, self.output_above)
            + tiered(t.cache_write_5m, self.cache_write, self.cache_write_above)
            + tiered(
                t.cache_write_1h,
                self.cache_write_1h.or(twice(self.input)),
                self.cache_write_1h_above.or(twice(self.input_above)),
            )
            + tiered(t.cache_read, self.cache_read, self.cache_read_above)
    }
}

/// The model names Claude Code writes for messages it made itself (no model call).
pub const SYNTHETIC: &str = "<synthetic>";

/// Fast mode's price multiple, by model name prefix (ccusage's table).
const FAST: [(&str, f64); 3] = [
    ("claude-opus-4-6", 6.0),
    ("claude-opus-4-7", 6.0),
    ("claude-opus-4-8", 2.0),
];

/// Provider prefixes LiteLLM files models under, tried after the bare name.
const PREFIXES: [&str; 8] = [
    "anthropic/",
    "openai/",
    "gemini/",
    "vertex_ai/",
    "azure/",
    "openrouter/anthropic/",
    "openrouter/openai/",
    "openrouter/google/",
];

pub struct Prices {
    models: HashMap<String, Price>,
    /// What the table is (the snapshot's name, or the file given).
    pub label: String,
    found: Mutex<HashMap<String, Option<Price>>>,
}

impl Prices {
    /// The snapshot shipped with fen-fs.
    pub fn builtin() -> Prices {
        Self::parse(SNAPSHOT.as_bytes(), SNAPSHOT_NAME).expect("the shipped price table parses")
    }

    /// A table in LiteLLM's format read from `path` (`--prices FILE`).
    pub fn from_file(path: &Path) -> Result<Prices> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path.display(), &e))?;
        Self::parse(&bytes, &path.display().to_string())
    }

    pub fn parse(bytes: &[u8], label: &str) -> Result<Prices> {
        let all: HashMap<String, serde_json::Value> = serde_json::from_slice(bytes)
            .map_err(|e| Error::invalid(format!("{label}: not a LiteLLM price table: {e}")))?;
        let models: HashMap<String, Price> = all
            .into_iter()
            .filter_map(|(k, v)| Some((k, serde_json::from_value::<Price>(v).ok()?)))
            .filter(|(_, p)| p.input.is_some() || p.output.is_some())
            .collect();
        if models.is_empty() {
            return Err(Error::invalid(format!(
                "{label}: no model in it has a price per token"
            )));
        }
        Ok(Prices {
            models,
            label: label.to_string(),
            found: Mutex::new(HashMap::new()),
        })
    }

    /// The price of `model`: its own entry, else under a provider's prefix, else
    /// without a date suffix (`-20250929`), else an entry named `<provider>/<model>`.
    pub fn lookup(&self, model: &str) -> Option<Price> {
        if let Some(p) = self.found.lock().unwrap().get(model) {
            return *p;
        }
        let found = self.search(model);
        self.found.lock().unwrap().insert(model.to_string(), found);
        found
    }

    fn search(&self, model: &str) -> Option<Price> {
        let bare = model
            .rsplit_once('/')
            .filter(|(p, _)| matches!(*p, "anthropic" | "openai" | "google" | "gemini"))
            .map_or(model, |(_, m)| m);
        let exact = |name: &str| {
            self.models.get(name).copied().or_else(|| {
                PREFIXES
                    .iter()
                    .find_map(|p| self.models.get(&format!("{p}{name}")).copied())
            })
        };
        if let Some(p) = exact(model).or_else(|| exact(bare)) {
            return Some(p);
        }
        let undated = bare
            .rsplit_once('-')
            .filter(|(_, d)| d.len() == 8 && d.bytes().all(|b| b.is_ascii_digit()))
            .map(|(m, _)| m);
        if let Some(p) = undated.and_then(exact) {
            return Some(p);
        }
        let suffix = format!("/{bare}");
        let mut names: Vec<&String> = self
            .models
            .keys()
            .filter(|k| k.ends_with(&suffix))
            .collect();
        names.sort_by_key(|k| (k.len(), k.as_str()));
        names.first().and_then(|k| self.models.get(*k).copied())
    }

    /// What a response of `model` with `tokens` cost (`None`: no price for it).
    pub fn cost(&self, model: Option<&str>, tokens: &Tokens, fast: bool) -> Option<f64> {
        let model = model?;
        if model == SYNTHETIC {
            return Some(0.0);
        }
        let base = self.lookup(model)?.cost(tokens);
        let times = if fast {
            FAST.iter()
                .find(|(p, _)| model.starts_with(p) || model.contains(&format!("/{p}")))
                .map_or(1.0, |(_, m)| *m)
        } else {
            1.0
        };
        Some(base * times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_snapshot_prices_known_models_and_their_tiers() {
        let p = Prices::builtin();
        let t = |input, output| Tokens {
            input,
            output,
            ..Tokens::default()
        };
        let sonnet = Some("claude-sonnet-4-5-20250929");
        // ccusage: 1M input = 200k at $3/M + 800k at $6/M.
        let c = p.cost(sonnet, &t(1_000_000, 0), false).unwrap();
        assert!((c - 5.4).abs() < 1e-9, "{c}");
        let hour = Tokens {
            cache_write_1h: 1_000_000,
            ..Tokens::default()
        };
        assert!((p.cost(sonnet, &hour, false).unwrap() - 10.8).abs() < 1e-9);
        assert_eq!(p.cost(Some("no-such-model-x"), &t(1, 1), false), None);
        assert_eq!(p.cost(None, &t(1, 1), false), None);
        assert_eq!(p.cost(Some(SYNTHETIC), &t(5, 5), false), Some(0.0));
        // Fast mode: 6x for Opus 4.6.
        let opus = Some("claude-opus-4-6");
        let normal = p.cost(opus, &t(100, 100), false).unwrap();
        let fast = p.cost(opus, &t(100, 100), true).unwrap();
        assert!((fast - 6.0 * normal).abs() < 1e-12);
        // A name LiteLLM keeps only under a provider.
        assert!(p.lookup("claude-3-sonnet").is_some());
    }
}

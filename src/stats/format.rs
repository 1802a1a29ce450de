// SPDX-License-Identifier: GPL-2.0-only
//! The monitor's text: one block per sample, one `  name value` line per described field, in the
//! metadata's (alphabetical) order so related fields (`codel_*`, `knob_*`, `nr_*`) sit together
//! and a script can split each line on whitespace. Counters also show their rate since the
//! previous sample; a [ranked](RANKED_ATTR) dict prints its largest entries first.

use super::metrics::{COUNTER_ATTR, RANKED_ATTR};
use scx_stats::StatsMeta;
use serde_json::Value;

/// Header of every block; the gate and scripts split the output on it.
pub const BLOCK_HEADER: &str = "--- scx_pandemonium statistics";

fn scalar(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => format!("{:.3}", n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    }
}

/// "(+N/s)" from two readings `secs` apart; "(reset)" when the counter went back (the BPF program
/// was reloaded after CPU hotplug).
fn rate(cur: &Value, prev: Option<&Value>, secs: Option<f64>) -> String {
    let (Some(c), Some(p), Some(secs)) = (cur.as_u64(), prev.and_then(Value::as_u64), secs) else {
        return String::new();
    };
    match c.checked_sub(p) {
        Some(d) => format!("(+{}/s)", (d as f64 / secs).round() as u64),
        None => "(reset)".into(),
    }
}

/// A scalar with its rate when it is a counter, `sep` between the two.
fn with_rate(c: &Value, p: Option<&Value>, counter: bool, secs: Option<f64>, sep: &str) -> String {
    let r = if counter {
        rate(c, p, secs)
    } else {
        String::new()
    };
    if r.is_empty() {
        scalar(c)
    } else {
        format!("{}{sep}{r}", scalar(c))
    }
}

/// Dicts (per tier, per expert) print as `key=value` words, by key or, `ranked`, largest value
/// first; an empty one as `-`.
fn value(
    cur: &Value,
    prev: Option<&Value>,
    counter: bool,
    ranked: bool,
    secs: Option<f64>,
) -> String {
    match cur {
        Value::Object(m) if m.is_empty() => "-".into(),
        Value::Object(m) => {
            let mut entries: Vec<_> = m.iter().collect();
            if ranked {
                let v = |x: &Value| x.as_f64().unwrap_or(f64::NEG_INFINITY);
                entries.sort_by(|a, b| v(b.1).total_cmp(&v(a.1)).then_with(|| a.0.cmp(b.0)));
            }
            entries
                .into_iter()
                .map(|(k, c)| {
                    let p = prev.and_then(|p| p.get(k));
                    format!("{k}={}", with_rate(c, p, counter, secs, ""))
                })
                .collect::<Vec<_>>()
                .join(" ")
        }
        c => with_rate(c, prev, counter, secs, " "),
    }
}

/// When a sample was taken (its `at_ms`): what tells two samples apart.
pub fn sample_at(v: &Value) -> Option<u64> {
    v.get("at_ms").and_then(Value::as_u64)
}

/// One block for sample `cur`, with rates against `prev` when there is one.
pub fn block(meta: &StatsMeta, prev: Option<&Value>, cur: &Value) -> String {
    let at = sample_at;
    let secs = prev
        .and_then(|p| Some((at(cur)?.checked_sub(at(p)?)?) as f64 / 1000.0))
        .filter(|s| *s > 0.0);
    let mut out = match secs {
        Some(s) => format!("{BLOCK_HEADER} (rates over {s:.1} s) ---\n"),
        None => format!("{BLOCK_HEADER} ---\n"),
    };
    let width = meta.fields.keys().map(String::len).max().unwrap_or(0);
    for (name, field) in &meta.fields {
        let counter = field.attrs.user.contains_key(COUNTER_ATTR);
        let ranked = field.attrs.user.contains_key(RANKED_ATTR);
        let text = match cur.get(name) {
            Some(c) => value(c, prev.and_then(|p| p.get(name)), counter, ranked, secs),
            None => "absent".into(),
        };
        out.push_str(&format!("  {name:width$} {text}\n"));
    }
    out
}

//! The README's metrics table lists exactly what pico-kafka's `/metrics` serves.
#![allow(clippy::unwrap_used)]

use pico_kafka::METRICS_PREFIX;
use pico_kafka::metrics::Metrics;

/// Every metric served is in the README's table, and the table names no other.
#[test]
fn the_readme_table_lists_exactly_the_metrics_served() {
    let readme = include_str!("../README.md");
    let table: Vec<&str> = readme
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("| `{METRICS_PREFIX}_")))
        .filter_map(|l| l.split('`').next())
        .collect();
    let text = Metrics::new(METRICS_PREFIX).encode().unwrap();
    let mut served: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("# TYPE {METRICS_PREFIX}_")))
        .map(|l| match l.split_once(' ') {
            Some((name, "counter")) => format!("{name}_total"),
            Some((name, _)) => name.to_owned(),
            None => l.to_owned(),
        })
        .collect();
    served.sort();
    let mut listed: Vec<String> = table.iter().map(|s| (*s).to_owned()).collect();
    listed.sort();
    assert!(!served.is_empty(), "{text}");
    assert_eq!(listed, served, "README table vs /metrics");
}

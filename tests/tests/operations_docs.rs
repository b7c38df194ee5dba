//! docs/operations/: the alert rules pass `promtool check rules` and their own unit tests
//! (`promtool test rules`: each alert fires on the series that should raise it, and stays quiet
//! on the others); every query of the rules and of the Grafana dashboard runs on a real
//! Prometheus and names only metrics pico-kafka serves (the README's table, which a pico-kafka
//! test keeps equal to what it serves). Where Prometheus is not installed, a loud SKIPPED line.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use pico_suite::provide::find_binary;
use pico_suite::serve::prometheus::Prometheus;
use pico_workspace_tests::workspace_root;

/// The checkout the tests run in, found at run time: a path compiled into the binary would
/// name the checkout that built it, which a shared target directory may outlive.
fn repo() -> PathBuf {
    workspace_root()
}

fn operations(file: &str) -> PathBuf {
    repo().join("docs/operations").join(file)
}

#[test]
fn alert_rules_pass_promtool_and_their_unit_tests() {
    let Some(promtool) = find_binary(&["promtool"], &["/usr/bin"]) else {
        eprintln!("SKIPPED — no promtool installed (scripts/setup.sh installs prometheus)");
        return;
    };
    for args in [
        vec!["check", "rules", "alerts.yml"],
        vec!["test", "rules", "alerts.test.yml"],
    ] {
        let out = Command::new(&promtool)
            .args(&args)
            .current_dir(operations(""))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        eprintln!("promtool {}: {text}", args.join(" "));
        assert!(out.status.success(), "promtool {}: {text}", args.join(" "));
        assert!(text.contains("SUCCESS"), "{text}");
    }
}

/// The `expr:` of each rule in a rules file: one line, or a folded block (`>-`) of the lines
/// indented below it.
fn rule_exprs(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut exprs = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let rest = rest.trim();
        if rest != ">-" {
            exprs.push(rest.to_owned());
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let block: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| l.len() - l.trim_start().len() > indent)
            .map(|l| l.trim())
            .collect();
        exprs.push(block.join(" "));
    }
    exprs
}

/// Every query of the Grafana dashboard (its panels' targets and its template variables').
fn dashboard_exprs(dashboard: &serde_json::Value) -> Vec<String> {
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            exprs.push(target["expr"].as_str().unwrap().to_owned());
        }
    }
    assert!(!exprs.is_empty());
    exprs
}

/// The metric names pico-kafka serves, from its README's table (histograms by their base name).
fn served() -> BTreeSet<String> {
    let readme = std::fs::read_to_string(repo().join("runtime/kafka/README.md")).unwrap();
    readme
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| n.starts_with("pico_kafka_"))
        .map(str::to_owned)
        .collect()
}

/// The `pico_kafka_…` names in `expr` that pico-kafka does not serve.
fn unknown_names(expr: &str, served: &BTreeSet<String>) -> Vec<String> {
    expr.match_indices("pico_kafka_")
        .map(|(at, _)| {
            expr[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect::<String>()
        })
        .filter(|name| {
            let base = ["_bucket", "_count", "_sum"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            !served.contains(name) && !served.contains(base)
        })
        .collect()
}

/// Grafana's variables, as a query of this test gives them.
fn as_prometheus_query(expr: &str) -> String {
    expr.replace("$__rate_interval", "1m")
        .replace("$__range", "1h")
        .replace("$topic", ".*")
}

#[tokio::test]
async fn every_query_runs_on_a_real_prometheus_and_names_only_served_metrics() {
    let rules = std::fs::read_to_string(operations("alerts.yml")).unwrap();
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(operations("grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut exprs = rule_exprs(&rules);
    assert_eq!(exprs.len(), rules.matches("- alert:").count(), "{exprs:?}");
    exprs.extend(dashboard_exprs(&dashboard));
    let served = served();
    assert!(served.len() >= 10, "{served:?}");
    for expr in &exprs {
        let unknown = unknown_names(expr, &served);
        assert!(
            unknown.is_empty(),
            "{expr} names metrics pico-kafka does not serve: {unknown:?}"
        );
    }
    assert_eq!(
        unknown_names("rate(pico_kafka_records_writen_total[1m])", &served),
        ["pico_kafka_records_writen_total"],
        "the name check must catch a misspelt metric"
    );
    let prometheus = match Prometheus::start(&[]).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("SKIPPED (the queries) — no Prometheus could be started: {e}");
            return;
        }
    };
    for expr in &exprs {
        let query = as_prometheus_query(expr);
        if let Err(e) = prometheus.value(&query).await {
            panic!("{query} does not run on Prometheus: {e}");
        }
    }
    assert!(
        prometheus
            .value("sum(rate(pico_kafka_records_read_total[1m])")
            .await
            .is_err(),
        "Prometheus must refuse a broken query, or this check proves nothing"
    );
    eprintln!("{} queries ran on a real Prometheus", exprs.len());
    prometheus.stop().await.unwrap();
}

//! A real Prometheus (Debian's `prometheus` package, installed by `scripts/setup.sh`, or the
//! binary `PICO_PROMETHEUS_BIN` names) started through the native provider ([`native::start`]:
//! free port, throwaway directory, ready on `/-/ready`), scraping the targets it is given every
//! second: how the suite checks that pico-kafka's `/metrics` is what a Prometheus actually
//! reads.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

use crate::serve::native::{self, BinaryServer, NativeProcess};

/// The Prometheus binary and what it scrapes.
struct Binary {
    /// `host:port` targets, path `/metrics`.
    targets: Vec<String>,
    /// Time between two scrapes of a target.
    every: Duration,
}

impl BinaryServer for Binary {
    fn sink(&self) -> &'static str {
        "prometheus"
    }

    fn binary_names(&self) -> &'static [&'static str] {
        &["prometheus"]
    }

    fn command(&self, bin: &Path, dir: &Path, port: u16) -> Result<Command, String> {
        let quoted: Vec<String> = self.targets.iter().map(|t| format!("\"{t}\"")).collect();
        let every = self.every.as_millis().max(1);
        let config = format!(
            "global:\n  scrape_interval: {every}ms\n  scrape_timeout: {every}ms\n\
             scrape_configs:\n  - job_name: pico-kafka\n    static_configs:\n      - targets: [{}]\n",
            quoted.join(", ")
        );
        let path = dir.join("prometheus.yml");
        std::fs::write(&path, config).map_err(|e| e.to_string())?;
        let mut command = Command::new(bin);
        command
            .arg(format!("--config.file={}", path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"));
        Ok(command)
    }

    fn health(&self) -> &'static str {
        "/-/ready"
    }

    fn startup(&self) -> Duration {
        Duration::from_secs(30)
    }
}

/// One series of a range vector: its labels (`__name__`, `instance` and the metric's own) and
/// its samples, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Label name → value.
    pub labels: BTreeMap<String, String>,
    /// `(Unix seconds, value)` per scrape.
    pub samples: Vec<(f64, f64)>,
}

impl Series {
    /// A series of Prometheus's JSON answer: `{"metric": {…}, "values": [[t, "v"], …]}`.
    fn from_json(json: &serde_json::Value) -> Option<Self> {
        let labels = json["metric"]
            .as_object()?
            .iter()
            .map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
            .collect::<Option<_>>()?;
        let samples = json["values"]
            .as_array()?
            .iter()
            .map(|pair| Some((pair[0].as_f64()?, pair[1].as_str()?.parse().ok()?)))
            .collect::<Option<_>>()?;
        Some(Self { labels, samples })
    }

    /// The value of label `name` (empty where it has none).
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).map_or("", String::as_str)
    }
}

/// A running Prometheus.
pub struct Prometheus(NativeProcess);

impl Prometheus {
    /// Starts one scraping `targets` (`host:port`, path `/metrics`) every second; `Err` where no
    /// `prometheus` binary is found or it does not become ready within 30 s.
    pub async fn start(targets: &[String]) -> Result<Self, String> {
        Self::scraping_every(targets, Duration::from_secs(1)).await
    }

    /// [`Prometheus::start`] with a scrape of each target every `every` (at least 1 ms).
    pub async fn scraping_every(targets: &[String], every: Duration) -> Result<Self, String> {
        native::start(&Binary {
            targets: targets.to_vec(),
            every,
        })
        .await
        .map(Self)
    }

    /// The `result` of an instant `query` (a vector, or a matrix for a range selector).
    async fn query(&self, query: &str) -> Result<Vec<serde_json::Value>, String> {
        let answer: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.0.url))
            .query(&[("query", query)])
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        if answer["status"] != "success" {
            return Err(format!("{query}: {answer}"));
        }
        match answer["data"]["result"].as_array() {
            Some(result) => Ok(result.clone()),
            None => Err(format!("{query}: no result in {answer}")),
        }
    }

    /// The value of an instant query whose answer is one number (`sum(…)`), `None` while it has
    /// no sample.
    pub async fn value(&self, query: &str) -> Result<Option<f64>, String> {
        let result = self.query(query).await?;
        let Some(first) = result.first() else {
            return Ok(None);
        };
        first["value"][1]
            .as_str()
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{query}: no number in {first}"))
    }

    /// Every sample Prometheus holds of the series `selector` picks (`name{label="…"}`) over
    /// the last `range`, series by series.
    pub async fn series(&self, selector: &str, range: Duration) -> Result<Vec<Series>, String> {
        let query = format!("{selector}[{}s]", range.as_secs().max(1));
        self.query(&query)
            .await?
            .iter()
            .map(|s| Series::from_json(s).ok_or_else(|| format!("{query}: cannot read {s}")))
            .collect()
    }

    /// Polls `query` every 250 ms until it reads `expected` or `timeout` passed; the last value
    /// read.
    pub async fn wait_for(
        &self,
        query: &str,
        expected: f64,
        timeout: Duration,
    ) -> Result<Option<f64>, String> {
        let started = std::time::Instant::now();
        loop {
            let value = self.value(query).await?;
            if value == Some(expected) || started.elapsed() > timeout {
                return Ok(value);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    /// Stops it (SIGTERM, then killed after the grace period) and removes its data.
    pub async fn stop(self) -> Result<(), String> {
        self.0.stop().await
    }
}

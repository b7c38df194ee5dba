//! A real Prometheus (Debian's `prometheus` package, installed by `scripts/setup.sh`) started
//! natively on free ports with a throwaway storage directory, scraping the targets it is given
//! every second: how the suite checks that pico-kafka's `/metrics` is what a Prometheus
//! actually reads. Killed when stopped or dropped.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::provide::{find_binary, free_port};
use crate::serve::reaper::Tracked;
use crate::serve::server::wait_http;

/// A running Prometheus.
pub struct Prometheus {
    url: String,
    child: Tracked,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts one scraping `targets` (`host:port`, path `/metrics`) every second; `Err` where no
    /// `prometheus` binary is installed or it does not become ready within 30 s.
    pub async fn start(targets: &[String]) -> Result<Self, String> {
        let bin = find_binary(&["prometheus"], &["/usr/bin"]).ok_or("no prometheus installed")?;
        let dir = tempfile::Builder::new()
            .prefix("pico-prometheus-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let port = free_port().map_err(|e| e.to_string())?;
        let quoted: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: pico-kafka\n    static_configs:\n      - targets: [{}]\n",
            quoted.join(", ")
        );
        let path = dir.path().join("prometheus.yml");
        std::fs::write(&path, config).map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(dir.path().join("prometheus.log")).map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg(format!("--config.file={}", path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .map(Tracked::new)
            .map_err(|e| format!("starting prometheus: {e}"))?;
        let url = format!("http://127.0.0.1:{port}");
        wait_http(
            &format!("{url}/-/ready"),
            Duration::from_secs(30),
            &[],
            |s, _| s == 200,
        )
        .await?;
        Ok(Self {
            url,
            child,
            _dir: dir,
        })
    }

    /// The value of an instant query whose answer is one number (`sum(…)`), `None` while it has
    /// no sample.
    pub async fn value(&self, query: &str) -> Result<Option<f64>, String> {
        let answer: serde_json::Value = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.url))
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
        let Some(first) = answer["data"]["result"].as_array().and_then(|r| r.first()) else {
            return Ok(None);
        };
        first["value"][1]
            .as_str()
            .and_then(|v| v.parse().ok())
            .map(Some)
            .ok_or_else(|| format!("{query}: no number in {answer}"))
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

    /// Stops it.
    pub async fn stop(mut self) -> Result<(), String> {
        self.child.kill().await.map_err(|e| e.to_string())
    }
}

//! The meter-readings reference workload, ported from `meter_readings.py` so that it reproduces
//! the Python module bit for bit: the same generator, the same 2 400 readings, the same rows
//! chosen for loss and duplication, the same pipeline figures.
//!
//! `tests/meter_python.rs` prints the port's figures in the module's own format and compares them
//! with what `python3 meter_readings.py` prints, when `python3` is present.

mod pipeline;
mod source;

pub use pipeline::{Figures, Pipeline, run_pipeline};
pub use source::{DeliveryMode, PERIODS, Reading, deliver, generate_source};

/// Python's `round(x, 2)`: correctly rounded to two decimals (ties to even on the exact binary
/// value), which is what Rust's `{:.2}` formatting computes.
pub(crate) fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// The serving difference per region, as the Python module computes it (zero entries dropped).
pub fn serving_diff(serving: &[(String, f64)], base: &[(String, f64)]) -> Vec<(String, f64)> {
    base.iter()
        .filter_map(|(region, b)| {
            let got = serving
                .iter()
                .find(|(r, _)| r == region)
                .map(|(_, v)| *v)
                .unwrap_or(0.0);
            let d = round2(got - b);
            (d != 0.0).then(|| (region.clone(), d))
        })
        .collect()
}

//! The meter-readings reference workload, ported from `meter_readings.py` so that it reproduces
//! the Python module bit for bit: the same generator, the same 2 400 readings, the same rows
//! chosen for loss and duplication, the same pipeline figures.
//!
//! [`python_report`] prints exactly what `python3 meter_readings.py` prints; a test compares
//! the two when `python3` is present.

mod pipeline;
mod source;

pub use pipeline::{Figures, Pipeline, run_pipeline};
pub use source::{DeliveryMode, PERIODS, Reading, deliver, generate_source};

/// Python's `round(x, 2)`: correctly rounded to two decimals (ties to even on the exact binary
/// value), which is what Rust's `{:.2}` formatting computes.
pub fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

/// Python's `repr` of a float (shortest round-trip digits, `.0` on whole numbers).
pub fn py_float(x: f64) -> String {
    let s = format!("{x}");
    if s.contains(['.', 'e', 'i', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Python's `repr` of a `{str: float}` dict in insertion order.
pub fn py_dict(items: &[(String, f64)]) -> String {
    let inner: Vec<String> = items
        .iter()
        .map(|(k, v)| format!("'{k}': {}", py_float(*v)))
        .collect();
    format!("{{{}}}", inner.join(", "))
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

/// Exactly the text `python3 meter_readings.py` prints.
pub fn python_report() -> String {
    let raw = generate_source();
    let base = run_pipeline(&raw, Pipeline::WithDedupe);
    let mut out = format!(
        "rows {} consumption {} summary cells {}\nserving {}\n",
        raw.len(),
        base.consumption_rows,
        base.summary.len(),
        py_dict(&base.serving)
    );
    for mode in [
        DeliveryMode::AtMostOnce,
        DeliveryMode::AtLeastOnce,
        DeliveryMode::Keyed,
    ] {
        for pipeline in [Pipeline::WithDedupe, Pipeline::WithoutDedupe] {
            let delivered = deliver(&raw, mode);
            let f = run_pipeline(&delivered.records, pipeline);
            let diff = serving_diff(&f.serving, &base.serving);
            out.push_str(&format!(
                "{} {} rows {} lost {} dup {} consumption {} dirty {} diff {}\n",
                mode.python_name(),
                match pipeline {
                    Pipeline::WithDedupe => "dedupe",
                    Pipeline::WithoutDedupe => "no-dedupe",
                },
                delivered.records.len(),
                delivered.lost.len(),
                delivered.duplicated.len(),
                f.consumption_rows,
                f.polluted_cells(&base),
                if diff.is_empty() {
                    "empty".to_owned()
                } else {
                    py_dict(&diff)
                }
            ));
        }
    }
    out
}

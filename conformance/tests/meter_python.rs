//! The Rust port of the meter-readings workload prints exactly what the Python module prints.

#![allow(clippy::unwrap_used)] // test helpers may panic

use std::path::PathBuf;
use std::process::Command;

use pico_conformance::meter::{
    DeliveryMode, Pipeline, deliver, generate_source, run_pipeline, serving_diff,
};

/// The module's name for a delivery mode.
fn python_name(mode: DeliveryMode) -> &'static str {
    match mode {
        DeliveryMode::AtMostOnce => "at_most_once",
        DeliveryMode::AtLeastOnce => "at_least_once",
        DeliveryMode::Keyed => "exactly_once",
    }
}

/// Python's `repr` of a float (shortest round-trip digits, `.0` on whole numbers).
fn py_float(x: f64) -> String {
    let s = format!("{x}");
    if s.contains(['.', 'e', 'i', 'N']) {
        s
    } else {
        format!("{s}.0")
    }
}

/// Python's `repr` of a `{str: float}` dict in insertion order.
fn py_dict(items: &[(String, f64)]) -> String {
    let inner: Vec<String> = items
        .iter()
        .map(|(k, v)| format!("'{k}': {}", py_float(*v)))
        .collect();
    format!("{{{}}}", inner.join(", "))
}

/// The port's figures as exactly the text `python3 meter_readings.py` prints.
fn python_report() -> String {
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
                python_name(mode),
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

fn script() -> Option<PathBuf> {
    // At run time: the compile-time value names whichever checkout last built this binary.
    let here = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let candidates = [
        std::env::var_os("PICO_METER_READINGS_PY").map(PathBuf::from),
        Some(here.join("../../shared/workloads/meter_readings.py")),
        Some(here.join("../shared/workloads/meter_readings.py")),
    ];
    candidates.into_iter().flatten().find(|p| p.is_file())
}

#[test]
fn rust_port_matches_the_python_module_bit_for_bit() {
    let Some(script) = script() else {
        eprintln!("SKIPPED — meter_readings.py not found (set PICO_METER_READINGS_PY)");
        return;
    };
    let Ok(out) = Command::new("python3").arg(&script).output() else {
        eprintln!("SKIPPED — python3 is not installed");
        return;
    };
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(python_report(), String::from_utf8(out.stdout).unwrap());
}

#[test]
fn the_reference_figures_hold_without_python() {
    // The figures the Python module printed when the port was written, so the port is
    // checked even where python3 is missing.
    let report = python_report();
    assert!(
        report.starts_with("rows 2400 consumption 2200 summary cells 55\n"),
        "{report}"
    );
    assert!(report.contains(
        "at_least_once no-dedupe rows 2419 lost 0 dup 19 consumption 2219 dirty 5 diff {'central': 6.19, 'north': 12.27, 'east': 3.64, 'west': 18.36, 'south': 6.45}"
    ), "{report}");
    let raw = generate_source();
    assert_eq!(raw.len(), 2400);
    let lost = deliver(&raw, DeliveryMode::AtMostOnce).lost;
    assert_eq!(lost.len(), 19);
    assert!(lost.iter().all(|p| raw[*p].period == "2026-07"));
}

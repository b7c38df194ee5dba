//! One short verdict per summary cell, and the legend that explains the marks.

use pico_conformance::horizon::Horizon;
use pico_conformance::ledger::Measured;
use pico_conformance::report::{ScenarioReport, Verdict};
use pico_sink::Claim;

/// The marks of the summary, each with what it means.
pub const LEGEND: [(&str, &str); 8] = [
    (
        "✓",
        "no visible duplicate: every record read back exactly once, as the sink claims",
    ),
    (
        "≈",
        "overwritten in place: the replay landed on the same entries (same identity), one copy visible",
    ),
    (
        "⚠ N repeat",
        "N visible rows beyond the first copy; the sink says so in its claim (the destination offers no mechanism for this case)",
    ),
    (
        "✗",
        "a failure: records lost, a claim the measurement contradicts, or a scenario that could not run; the run fails",
    ),
    (
        "○ not exercised",
        "nothing lost, but the scenario's fault never happened for this sink (the count and the reason are in the details): the cell proves nothing either way",
    ),
    (
        "n/a",
        "the scenario has no meaning for this destination (no network between the sink and an embedded destination)",
    ),
    (
        "—",
        "not verified here: no server could be provided (reason below)",
    ),
    (
        "· N rejected",
        "N records the destination cannot take, reported with their offsets and reasons (dead-lettered), none lost",
    ),
];

/// The summary cell for one scenario: a mark and at most a few words (never over 40 characters).
pub fn short_verdict(r: &ScenarioReport) -> String {
    let m = r.measured.as_ref();
    let count = |f: fn(&Measured) -> usize| m.map_or(0, f);
    let mut text = match &r.verdict {
        Verdict::NotApplicable(_) => return "n/a".to_owned(),
        Verdict::NotExercised(_) => return "○ not exercised".to_owned(),
        Verdict::Failed(_) => return "✗ failed".to_owned(),
        Verdict::Lost(_) => format!("✗ {} lost", count(|m| m.lost.len())),
        Verdict::Contradicted(_) => match m {
            Some(m) if !m.rejected_but_stored.is_empty() => {
                format!("✗ {} rejected but stored", m.rejected_but_stored.len())
            }
            _ => format!("✗ {} repeat, claim broken", count(|m| m.visible_duplicates)),
        },
        Verdict::Pass if count(|m| m.visible_duplicates) > 0 => match bounded_horizon(m) {
            Some(h) => format!("⚠ {} repeat after {}", count(|m| m.visible_duplicates), h),
            None => format!("⚠ {} repeat", count(|m| m.visible_duplicates)),
        },
        Verdict::Pass if bounded_horizon(m).is_some() => "✓ beyond horizon".to_owned(),
        Verdict::Pass if r.claim == Claim::OverwrittenInPlace => {
            "≈ overwritten in place".to_owned()
        }
        Verdict::Pass => "✓ no duplicate".to_owned(),
    };
    let rejected = count(|m| m.dead_lettered.len());
    let rejected = if rejected > 0 {
        format!(" · {rejected} rejected")
    } else {
        String::new()
    };
    // Physical copies a merge will remove (ClickHouse) are worth a word where they fit; the
    // details table always has them.
    if let Some(p) = m.and_then(|m| m.physical_duplicates).filter(|p| *p > 0) {
        let physical = format!(" · {p} before merge");
        if (text.clone() + &physical + &rejected).chars().count() <= 40 {
            text.push_str(&physical);
        }
    }
    text.push_str(&rejected);
    text
}

/// The horizon a replay-after-horizon cell went past, in short, where it has one (a count or
/// a duration).
fn bounded_horizon(m: Option<&Measured>) -> Option<String> {
    m.and_then(|m| m.upkeep.as_ref())
        .map(|u| &u.horizon)
        .filter(|h| h.is_bounded())
        .map(Horizon::short)
}

/// The class of a verdict, for colouring: `ok`, `overwrite`, `repeat`, `fail`, `na`.
pub(super) fn kind(r: &ScenarioReport) -> &'static str {
    match &r.verdict {
        Verdict::NotApplicable(_) | Verdict::NotExercised(_) => "na",
        Verdict::Failed(_) | Verdict::Lost(_) | Verdict::Contradicted(_) => "fail",
        Verdict::Pass
            if r.measured
                .as_ref()
                .is_some_and(|m| m.visible_duplicates > 0) =>
        {
            "repeat"
        }
        Verdict::Pass if r.claim == Claim::OverwrittenInPlace => "overwrite",
        Verdict::Pass => "ok",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pico_sink::Scenario;

    fn report(claim: Claim, verdict: Verdict, m: Measured) -> ScenarioReport {
        ScenarioReport {
            scenario: Scenario::LostAck,
            claim,
            outcome: String::new(),
            verdict,
            measured: Some(m),
            ran: None,
        }
    }

    #[test]
    fn cells_are_short_and_say_what_happened() {
        let many = Measured {
            visible_duplicates: 123_456_789,
            physical_duplicates: Some(987_654),
            dead_lettered: vec![("x".into(), "y".into()); 9999],
            ..Measured::default()
        };
        let cases = [
            (
                report(Claim::Repeats, Verdict::Pass, many.clone()),
                "⚠ 123456789 repeat · 9999 rejected",
            ),
            (
                report(
                    Claim::NoVisibleDuplicate,
                    Verdict::Lost("x".into()),
                    Measured {
                        lost: vec!["a".into(), "b".into()],
                        ..Measured::default()
                    },
                ),
                "✗ 2 lost",
            ),
            (
                report(
                    Claim::OverwrittenInPlace,
                    Verdict::Pass,
                    Measured::default(),
                ),
                "≈ overwritten in place",
            ),
            (
                report(
                    Claim::NoVisibleDuplicate,
                    Verdict::Pass,
                    Measured::default(),
                ),
                "✓ no duplicate",
            ),
        ];
        for (r, want) in cases {
            assert_eq!(short_verdict(&r), want);
        }
        let merged = Measured {
            physical_duplicates: Some(200),
            ..Measured::default()
        };
        assert_eq!(
            short_verdict(&report(Claim::NoVisibleDuplicate, Verdict::Pass, merged)),
            "✓ no duplicate · 200 before merge"
        );
        // The longest realistic cell still fits the summary's width.
        let typical = Measured {
            visible_duplicates: 20_000,
            physical_duplicates: Some(20_000),
            dead_lettered: vec![("x".into(), "y".into()); 100],
            ..Measured::default()
        };
        let cell = short_verdict(&report(Claim::Repeats, Verdict::Pass, typical));
        assert!(cell.chars().count() <= 40, "{cell}");
    }

    #[test]
    fn a_cell_beyond_a_bounded_horizon_says_so() {
        use pico_conformance::horizon::Upkeep;
        let after = |horizon: Horizon, visible_duplicates| Measured {
            visible_duplicates,
            upkeep: Some(Upkeep::of(horizon)),
            ..Measured::default()
        };
        let day = || Horizon::Duration {
            seconds: 86_400,
            of: "idempotency keys".into(),
        };
        let cases = [
            (after(day(), 100), "⚠ 100 repeat after 24 h"),
            (after(day(), 0), "✓ beyond horizon"),
            (after(Horizon::unbounded("key"), 0), "✓ no duplicate"),
            (after(Horizon::NoDedupe, 100), "⚠ 100 repeat"),
        ];
        for (m, want) in cases {
            let claim = if m.visible_duplicates > 0 {
                Claim::Repeats
            } else {
                Claim::NoVisibleDuplicate
            };
            assert_eq!(short_verdict(&report(claim, Verdict::Pass, m)), want);
        }
    }
}

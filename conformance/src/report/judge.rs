//! The outcome of a scenario in words, and its verdict against the sink's claim.

use pico_sink::Claim;

use super::Verdict;
use crate::evidence;
use crate::ledger::Measured;

/// Short words for a claim.
pub fn claim_words(claim: &Claim) -> String {
    match claim {
        Claim::NoVisibleDuplicate => "no visible duplicate".into(),
        Claim::OverwrittenInPlace => "overwritten in place".into(),
        Claim::Repeats => "repeats".into(),
        Claim::Measured { why } => format!("measured only ({why})"),
        other => format!("{other:?}"),
    }
}

/// The outcome in plain words, and the verdict against `claim`. Loss and contradictions fail
/// the cell whatever else happened; a cell that would pass while one of its faults never
/// happened is [`Verdict::NotExercised`].
pub fn judge(claim: &Claim, m: &Measured) -> (String, Verdict) {
    let mut words = Vec::new();
    let mut verdict;
    if !m.lost.is_empty() {
        words.push(format!("LOST {}: {}", m.lost.len(), list(&m.lost)));
        verdict = Verdict::Lost(format!("missing {}", list(&m.lost)));
    } else if !m.present_unheld.is_empty() {
        let more = match m.present_unheld.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let why = format!(
            "already present for records the destination did not hold (a runtime commits past \
             them): {}{more}",
            m.present_unheld[0]
        );
        words.push(why.clone());
        verdict = Verdict::Failed(why);
    } else if !m.rejected_but_stored.is_empty() {
        words.push(format!(
            "{} rejected but stored: {}",
            m.rejected_but_stored.len(),
            list(&m.rejected_but_stored)
        ));
        verdict = Verdict::Contradicted(format!(
            "rejected {} record(s) as refused that the destination holds ({}): a dead-letter \
             queue replayed later would write them twice",
            m.rejected_but_stored.len(),
            list(&m.rejected_but_stored)
        ));
    } else if !m.rejected_valid.is_empty() {
        let why = format!(
            "rejected {} valid record(s) ({}): a runtime dead-letters them and the destination \
             never holds them",
            m.rejected_valid.len(),
            list(&m.rejected_valid)
        );
        words.push(why.clone());
        verdict = Verdict::Failed(why);
    } else if !m.miscounted.is_empty() {
        let more = match m.miscounted.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        };
        let why = format!(
            "the sink's reported outcome is wrong: {}{more}",
            m.miscounted[0]
        );
        words.push(why.clone());
        verdict = Verdict::Failed(why);
    } else if !m.mismatches.is_empty() {
        words.push(format!("{} rows repeat", m.visible_duplicates));
        verdict = Verdict::Contradicted(m.mismatches.join("; "));
    } else if !m.corrupted.is_empty() || m.foreign > 0 {
        let why = format!(
            "{} corrupted ({}), {} foreign rows",
            m.corrupted.len(),
            list(&m.corrupted),
            m.foreign
        );
        words.push(why.clone());
        verdict = Verdict::Failed(why);
    } else if m.visible_duplicates > 0 {
        words.push(format!(
            "{} rows repeat ({} records)",
            m.visible_duplicates, m.repeated_records
        ));
        verdict = if claim.promises_single_copy() {
            Verdict::Contradicted(format!(
                "claims {}, {} rows repeat",
                claim_words(claim),
                m.visible_duplicates
            ))
        } else {
            Verdict::Pass
        };
    } else {
        words.push(match claim {
            Claim::OverwrittenInPlace => "overwritten in place".to_owned(),
            _ => "no visible duplicate".to_owned(),
        });
        verdict = Verdict::Pass;
    }
    if verdict == Verdict::Pass
        && let Some(why) = evidence::unexercised(&m.faults)
    {
        words.push(format!("not exercised: {why}"));
        verdict = Verdict::NotExercised(why);
    }
    // A lone fault that never happened is named by "not exercised" already.
    let named = matches!(verdict, Verdict::NotExercised(_)) && m.faults.len() == 1;
    if let Some(faults) = evidence::summary(&m.faults).filter(|_| !named) {
        words.push(faults);
    }
    // The meter-readings figures per delivery mode have their own table (render_markdown).
    if let Some(p) = m.physical_duplicates.filter(|p| *p > 0) {
        words.push(format!("{p} physical duplicates before merge"));
    }
    if !m.dead_lettered.is_empty() {
        let ids: Vec<String> = m.dead_lettered.iter().map(|(id, _)| id.clone()).collect();
        words.push(format!(
            "rejected {}: {} ({})",
            m.dead_lettered.len(),
            list(&ids),
            truncate(&m.dead_lettered[0].1, 60)
        ));
    }
    (words.join("; "), verdict)
}

fn list(items: &[String]) -> String {
    let shown: Vec<String> = items.iter().take(3).map(|s| truncate(s, 40)).collect();
    let more = items.len().saturating_sub(3);
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

pub(super) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max).collect();
        t.push('…');
        t
    }
}

//! [`FaultCount`]: how often a scenario's fault happened — the evidence that its cell could
//! have failed. A cell whose fault never happened is "not exercised", never a pass.

use serde::{Deserialize, Serialize};

/// One fault a scenario injected (or one condition it created), and how often it happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultCount {
    /// What happened, in words, counted: "answers cut after the destination committed".
    pub fault: String,
    /// How often it happened.
    pub count: u64,
    /// Why it cannot happen for this destination, when the scenario knows (a sink whose
    /// `consume` finishes without yielding cannot be dropped halfway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
}

impl FaultCount {
    /// `count` occurrences of `fault`.
    pub fn new(fault: impl Into<String>, count: u64) -> Self {
        Self {
            fault: fault.into(),
            count,
            why_not: None,
        }
    }

    /// A fault that could not be made to happen, and why.
    pub fn impossible(fault: impl Into<String>, why: impl Into<String>) -> Self {
        Self {
            fault: fault.into(),
            count: 0,
            why_not: Some(why.into()),
        }
    }

    /// The count in words: "3 answers cut after the destination committed".
    pub fn words(&self) -> String {
        format!("{} {}", self.count, self.fault)
    }
}

/// Why a measurement does not exercise its scenario: the first fault that never happened, with
/// its reason when the scenario gave one. `None` when every fault happened at least once.
pub(crate) fn unexercised(faults: &[FaultCount]) -> Option<String> {
    faults
        .iter()
        .find(|f| f.count == 0)
        .map(|f| match &f.why_not {
            Some(why) => format!("0 {}: {why}", f.fault),
            None => format!("0 {}", f.fault),
        })
}

/// Every count in words, for a cell's outcome: "faults: 3 answers cut, 2 batches redelivered".
pub fn summary(faults: &[FaultCount]) -> Option<String> {
    (!faults.is_empty()).then(|| {
        let words: Vec<String> = faults.iter().map(FaultCount::words).collect();
        format!("faults: {}", words.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zero_count_names_the_fault_and_its_reason() {
        let happened = [FaultCount::new("answers cut", 3)];
        assert_eq!(unexercised(&happened), None);
        let never = [
            FaultCount::new("answers cut", 3),
            FaultCount::new("batches redelivered after a cut", 0),
        ];
        assert_eq!(
            unexercised(&never).as_deref(),
            Some("0 batches redelivered after a cut")
        );
        let impossible = [FaultCount::impossible("futures dropped", "no await")];
        assert_eq!(
            unexercised(&impossible).as_deref(),
            Some("0 futures dropped: no await")
        );
        assert_eq!(summary(&[]), None);
        assert_eq!(
            summary(&never).as_deref(),
            Some("faults: 3 answers cut, 0 batches redelivered after a cut")
        );
    }
}

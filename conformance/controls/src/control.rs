//! The controls: one honest sink and the ways it is broken on purpose, each with what the
//! suite must find.

use pico_conformance::report::Finding;

/// One way of being a sink: honest, or broken in one way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Control {
    /// Keyed on the record identity, one transaction per batch: must pass every scenario.
    Honest,
    /// Leaves out the last record of every batch of two or more and reports it written.
    DropsRecord,
    /// A table without the identity key: every delivery appends, while claiming no duplicate.
    AppendsClaimingNoDuplicate,
    /// Rejects the first record of every batch of two or more (a valid record) without
    /// storing it.
    DeadLettersValid,
    /// Stores every record and rejects the first of every batch of two or more as refused.
    DeadLettersStored,
    /// Writes each new record in two steps (a truncated value, then the whole one); a consume
    /// cancelled between them leaves the truncated value, which a redelivery keeps as present.
    TornOnCancel,
    /// Answers before its write is visible: the write runs later in the background and dies
    /// with the sink instance (as a buffer dies with a crashed process).
    AcksBeforeVisible,
    /// Skips a record only while it is among the last rows it stored (a dedupe window): a
    /// replay older than the window appends again, while claiming no duplicate.
    ForgetsOldWrites,
    /// Stores every record under its key, and reports its first writes as already present
    /// (and replays as written), without saying it tells them apart.
    PresentBeforeHeld,
}

impl Control {
    /// Every control, the honest sink first.
    pub const ALL: [Control; 9] = [
        Control::Honest,
        Control::DropsRecord,
        Control::AppendsClaimingNoDuplicate,
        Control::DeadLettersValid,
        Control::DeadLettersStored,
        Control::TornOnCancel,
        Control::AcksBeforeVisible,
        Control::ForgetsOldWrites,
        Control::PresentBeforeHeld,
    ];

    /// The control's id (its row in the table, its SQLite file).
    pub fn id(self) -> &'static str {
        match self {
            Control::Honest => "honest",
            Control::DropsRecord => "drops-a-record",
            Control::AppendsClaimingNoDuplicate => "appends-claiming-no-duplicate",
            Control::DeadLettersValid => "dead-letters-a-valid-record",
            Control::DeadLettersStored => "dead-letters-a-stored-record",
            Control::TornOnCancel => "torn-on-cancel",
            Control::AcksBeforeVisible => "acks-before-visible",
            Control::ForgetsOldWrites => "forgets-old-writes",
            Control::PresentBeforeHeld => "present-before-held",
        }
    }

    /// What the control does, in words.
    pub fn does(self) -> &'static str {
        match self {
            Control::Honest => {
                "PRIMARY KEY on the identity, INSERT … ON CONFLICT DO NOTHING, one transaction per batch"
            }
            Control::DropsRecord => {
                "leaves out the last record of each batch and reports it written"
            }
            Control::AppendsClaimingNoDuplicate => {
                "no key: every delivery appends, while claiming no visible duplicate"
            }
            Control::DeadLettersValid => {
                "rejects the first record of each batch, a valid one, and does not store it"
            }
            Control::DeadLettersStored => {
                "stores every record and rejects the first of each batch as refused"
            }
            Control::TornOnCancel => {
                "writes a truncated value, then the whole one; a cancel between leaves it torn and a redelivery keeps it"
            }
            Control::AcksBeforeVisible => {
                "answers before its write is visible; the write dies with the sink instance"
            }
            Control::ForgetsOldWrites => {
                "skips a record only while it is among its last 16 384 rows; an older replay appends again"
            }
            Control::PresentBeforeHeld => {
                "stores every record, and reports first writes as already present and replays as written"
            }
        }
    }

    /// What the suite must find (`None` for the honest sink).
    pub fn expected(self) -> Option<Finding> {
        match self {
            Control::Honest => None,
            Control::DropsRecord | Control::AcksBeforeVisible => Some(Finding::Lost),
            Control::AppendsClaimingNoDuplicate | Control::ForgetsOldWrites => {
                Some(Finding::Duplicates)
            }
            Control::DeadLettersValid => Some(Finding::RejectedValid),
            Control::DeadLettersStored => Some(Finding::RejectedButStored),
            Control::TornOnCancel => Some(Finding::Corrupted),
            Control::PresentBeforeHeld => Some(Finding::PresentNotHeld),
        }
    }
}

//! Placeholder until the conformance crate lands.

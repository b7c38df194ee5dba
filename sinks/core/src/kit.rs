//! For sink authors: the pieces most sinks need beside the contract.
//!
//! * [`Isolator`] and [`Attempt`]: split a batch the destination refuses until the refused
//!   records are isolated, and reject only those; [`convert_records`] turns every record into
//!   the destination's form or a rejection with its reason.
//! * [`Envelope`], [`Payload`], [`document_json`] and [`DocumentShape`]: a record as JSON,
//!   whatever its bytes, and as the document a search index stores.
//! * [`MappedColumn`], [`extract_mapped`] and [`check_mapped_columns`]: payload fields written to
//!   their own columns, checked against the columns the sink writes itself
//!   ([`pico_identity::columns`]).
//! * [`ConflictAction`]: what a record held with another payload does.
//! * [`Secret`], [`redact_url`] and friends: how configurations keep credentials out of `Debug`;
//!   [`refuse_unused_setting`] for sinks built on a caller's own client.
//! * [`error_chain`] and [`unhealable_connect_failure`]: error messages that say what to change.

pub use crate::conflict::{CHANGED_REASON, ConflictAction};
pub use crate::connect_failure::unhealable_connect_failure;
pub use crate::document::{DocumentShape, RESERVED_PREFIX, document_json};
pub use crate::envelope::{Envelope, EnvelopeError, EnvelopeHeader, Payload};
pub use crate::error::{convert_records, error_chain};
pub use crate::isolate::{Attempt, Isolator};
pub use crate::mapping::{MappedColumn, check_mapped_columns, extract_mapped};
pub use crate::own_client::refuse_unused_setting;
pub use crate::secret::{REDACTED, Secret, is_secret_name, redact_options, redact_url, url_origin};

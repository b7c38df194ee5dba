//! [`Namespace`] and [`Scope`]: qualifying identities with the source they came from.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::batch_id::BatchId;
use crate::error::{IdentityError, clip};
use crate::record_id::RecordId;

/// Name of a source cluster or runtime: 1 to 64 characters from `[A-Za-z0-9._-]`, not starting
/// with `.`.
///
/// The alphabet leaves out `/`, so `namespace/topic` splits unambiguously at the first `/`, and
/// it is safe as-is in every destination encoding.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Namespace(Arc<str>);

impl Namespace {
    /// Validates and wraps a namespace name.
    pub fn new(name: &str) -> Result<Self, IdentityError> {
        let ok = (1..=64).contains(&name.len())
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
        if ok {
            Ok(Self(name.into()))
        } else {
            Err(IdentityError::BadNamespace(clip(name)))
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for Namespace {
    type Error = IdentityError;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::new(&value)
    }
}

impl From<Namespace> for String {
    fn from(value: Namespace) -> Self {
        value.0.to_string()
    }
}

/// The context a sink writes identities in: an optional [`Namespace`].
///
/// Every encoding is a method of `Scope`, so a namespace configured once prefixes every form.
/// With a namespace the canonical texts become `ns/topic:partition:offset` and
/// `ns/topic:partition:first..=last`.
///
/// Injectivity holds among the identities of one scope and across scopes with different
/// namespaces. A destination shared by a namespaced writer and a writer without namespace is not
/// covered (`a/b:0:1` is topic `b` in namespace `a` and also topic `a/b` without one): give every
/// writer of a shared destination a namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scope {
    namespace: Option<Namespace>,
}

impl Scope {
    /// A scope with or without namespace.
    pub fn new(namespace: Option<Namespace>) -> Self {
        Self { namespace }
    }

    /// The namespace, if any.
    pub fn namespace(&self) -> Option<&Namespace> {
        self.namespace.as_ref()
    }

    /// The topic as stored in the `pico_topic` column: `ns/topic`, or the topic alone.
    pub fn qualified_topic<'a>(&self, topic: &'a str) -> Cow<'a, str> {
        match &self.namespace {
            Some(ns) => Cow::Owned(format!("{ns}/{topic}")),
            None => Cow::Borrowed(topic),
        }
    }

    /// Canonical text of a record identity, namespace included
    /// (Postgres text, MongoDB `_id`). Injective.
    pub fn record_text(&self, id: &RecordId) -> String {
        let ns = self.namespace.as_ref().map(Namespace::as_str);
        let mut out = String::with_capacity(ns.map_or(0, |n| n.len() + 1) + id.topic.len() + 32);
        if let Some(ns) = ns {
            out.push_str(ns);
            out.push('/');
        }
        out.push_str(&id.topic);
        out.push(':');
        crate::escape::push_decimal(&mut out, u64::from(id.partition));
        out.push(':');
        crate::escape::push_decimal(&mut out, id.offset);
        out
    }

    /// Canonical text of a topic-partition, namespace included: `[ns/]topic:partition` (the key
    /// of per-partition watermarks: Delta `txn` app ids, Iceberg snapshot properties).
    /// Injective: the partition is read from the right.
    pub fn partition_text(&self, topic: &str, partition: u32) -> String {
        format!("{}:{partition}", self.qualified_topic(topic))
    }

    /// Canonical text of a batch identity, namespace included. Injective.
    pub fn batch_text(&self, id: &BatchId) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{id}"),
            None => id.to_string(),
        }
    }

    /// Parses [`Scope::record_text`] back.
    pub fn parse_record(&self, text: &str) -> Result<RecordId, IdentityError> {
        self.strip_namespace(text)?.parse()
    }

    /// Parses [`Scope::batch_text`] back.
    pub fn parse_batch(&self, text: &str) -> Result<BatchId, IdentityError> {
        self.strip_namespace(text)?.parse()
    }

    /// Splits a `pico_topic` column value back into the bare topic.
    pub fn unqualify_topic<'a>(&self, qualified: &'a str) -> Result<&'a str, IdentityError> {
        self.strip_namespace(qualified)
    }

    fn strip_namespace<'a>(&self, text: &'a str) -> Result<&'a str, IdentityError> {
        match &self.namespace {
            None => Ok(text),
            Some(ns) => text
                .strip_prefix(ns.as_str())
                .and_then(|rest| rest.strip_prefix('/'))
                .ok_or_else(|| IdentityError::WrongNamespace {
                    text: clip(text),
                    expected: ns.to_string(),
                }),
        }
    }
}

//! What every sink configuration shares when it is read from a file (a pipeline file's
//! `[sink]` section): durations written as whole milliseconds, the unit pipeline files use
//! everywhere (`request_timeout_ms = 30000`), and the identity's scope written as its
//! namespace (`namespace = "cluster-a"`, validated; absent: no namespace), name–value pairs
//! (headers) as a table in the file's order (`headers = { Authorization = "Bearer …" }`), and a
//! name with its secret as a table ([`user_password`], [`access_key`]).
//!
//! Every `*SinkConfig` derives `Deserialize` with `deny_unknown_fields`, so a misspelt key is
//! refused with its name, and gives each optional field the default its `new` documents.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer};

/// `#[serde(with = "pico_sink::config::millis")]`: a [`Duration`] as whole milliseconds.
pub mod millis {
    use super::{Deserialize, Deserializer, Duration, Serializer};

    /// Writes whole milliseconds (a duration past `u64::MAX` ms is written as `u64::MAX`).
    pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(value.as_millis()).unwrap_or(u64::MAX))
    }

    /// Reads whole milliseconds.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}

/// `#[serde(rename = "namespace", with = "pico_sink::config::namespace")]`: a
/// [`Scope`](crate::identity::Scope) as its namespace's name, checked as
/// [`Namespace::new`](crate::identity::Namespace::new) checks it; absent or unset: no namespace.
pub mod namespace {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::identity::{Namespace, Scope};

    /// Writes the namespace's name (callers skip an unscoped field with [`is_unset`]).
    pub fn serialize<S: Serializer>(scope: &Scope, serializer: S) -> Result<S::Ok, S::Error> {
        match scope.namespace() {
            Some(ns) => serializer.serialize_some(ns.as_str()),
            None => serializer.serialize_none(),
        }
    }

    /// Reads a namespace's name; a name outside `[A-Za-z0-9._-]{1,64}` is refused with the
    /// reason.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Scope, D::Error> {
        Option::<Namespace>::deserialize(deserializer).map(Scope::new)
    }

    /// `skip_serializing_if`: the scope has no namespace.
    pub fn is_unset(scope: &Scope) -> bool {
        scope.namespace().is_none()
    }
}

/// Declares a module for `#[serde(with = …)]` that reads and writes a name and its secret
/// (`Option<(String, Secret)>`) as a table with the given key names.
macro_rules! credentials_as {
    ($(#[$doc:meta])* $module:ident, $name:literal, $secret:literal) => {
        $(#[$doc])*
        pub mod $module {
            use serde::{Deserialize, Deserializer, Serialize, Serializer};

            use crate::kit::Secret;

            #[derive(Serialize, Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Pair {
                #[serde(rename = $name)]
                name: String,
                #[serde(rename = $secret)]
                secret: Secret,
            }

            /// Writes the pair as a table (callers skip `None`).
            pub fn serialize<S: Serializer>(
                value: &Option<(String, Secret)>,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                value
                    .as_ref()
                    .map(|(name, secret)| Pair {
                        name: name.clone(),
                        secret: secret.clone(),
                    })
                    .serialize(serializer)
            }

            /// Reads the table; a key other than the two is refused with its name.
            pub fn deserialize<'de, D: Deserializer<'de>>(
                deserializer: D,
            ) -> Result<Option<(String, Secret)>, D::Error> {
                Ok(Option::<Pair>::deserialize(deserializer)?.map(|p| (p.name, p.secret)))
            }
        }
    };
}

credentials_as!(
    /// `#[serde(with = "pico_sink::config::user_password")]`: a user and its password as
    /// `credentials = { user = "…", password = "…" }`.
    user_password,
    "user",
    "password"
);

credentials_as!(
    /// `#[serde(with = "pico_sink::config::access_key")]`: an access key and its secret as
    /// `credentials = { access_key = "…", secret_key = "…" }`.
    access_key,
    "access_key",
    "secret_key"
);

/// `#[serde(with = "pico_sink::config::pairs")]`: name–value pairs (`Vec<(String, String)>`,
/// such as extra headers) as a table, in the order the file gives them.
pub mod pairs {
    use std::fmt;

    use serde::de::{MapAccess, Visitor};
    use serde::ser::SerializeMap;
    use serde::{Deserializer, Serializer};

    /// Writes the pairs as a table.
    pub fn serialize<S: Serializer>(
        pairs: &[(String, String)],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(pairs.len()))?;
        for (name, value) in pairs {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }

    /// Reads a table of strings into pairs, in the file's order.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<(String, String)>, D::Error> {
        deserializer.deserialize_map(PairsVisitor)
    }

    struct PairsVisitor;

    impl<'de> Visitor<'de> for PairsVisitor {
        type Value = Vec<(String, String)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a table of names to string values")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(pair) = map.next_entry::<String, String>()? {
                pairs.push(pair);
            }
            Ok(pairs)
        }
    }
}

/// What a sink crate's tests check of its configuration's file form (feature `testing`).
#[cfg(feature = "testing")]
pub mod checks {
    use std::fmt::Debug;

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    /// Reads `text` as TOML, or panics with the error (a test helper).
    pub fn read<C: DeserializeOwned>(text: &str) -> C {
        toml::from_str(text).unwrap_or_else(|e| panic!("{e}\nin:\n{text}"))
    }

    /// Checks a configuration's file form and returns `full` read, for the caller's own
    /// assertions on each key: `minimal` (the required keys) reads as `expected` (compared
    /// through `Debug`, which redacts secrets); `full` written back and read again is the same
    /// configuration; each `(text, key)` of `refused` is refused with `key` in the error.
    /// Panics on the first that does not hold.
    pub fn file_form<C>(minimal: &str, expected: &C, full: &str, refused: &[(&str, &str)]) -> C
    where
        C: Serialize + DeserializeOwned + Debug,
    {
        let read: C = self::read(minimal);
        assert_eq!(
            format!("{read:?}"),
            format!("{expected:?}"),
            "minimal: {minimal}"
        );
        let full: C = self::read(full);
        let written =
            toml::to_string(&full).unwrap_or_else(|e| panic!("writing {full:?} back: {e}"));
        let again: C = self::read(&written);
        assert_eq!(
            format!("{again:?}"),
            format!("{full:?}"),
            "written: {written}"
        );
        // Secrets are redacted in `Debug`; written out they are whole, so this compares them.
        let twice = toml::to_string(&again).unwrap_or_else(|e| panic!("writing again: {e}"));
        assert_eq!(
            twice, written,
            "a second round trip changed the configuration"
        );
        for (text, key) in refused {
            match toml::from_str::<C>(text) {
                Ok(c) => panic!("{key:?} was not refused: {c:?}\nin:\n{text}"),
                Err(e) => assert!(e.to_string().contains(key), "{key:?} not named: {e}"),
            }
        }
        full
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Timeouts {
        #[serde(rename = "request_timeout_ms", with = "millis")]
        request_timeout: Duration,
    }

    #[test]
    fn a_duration_is_whole_milliseconds_both_ways() {
        let read: Timeouts = serde_json::from_str(r#"{"request_timeout_ms": 2500}"#).unwrap();
        assert_eq!(read.request_timeout, Duration::from_millis(2500));
        let written = serde_json::to_string(&read).unwrap();
        assert_eq!(written, r#"{"request_timeout_ms":2500}"#);
        assert!(serde_json::from_str::<Timeouts>(r#"{"request_timeout_ms": "2s"}"#).is_err());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Headers {
        #[serde(with = "pairs")]
        headers: Vec<(String, String)>,
    }

    #[test]
    fn pairs_are_a_table_in_the_files_order() {
        let read: Headers =
            serde_json::from_str(r#"{"headers": {"X-B": "2", "Authorization": "t"}}"#).unwrap();
        let expected = [("X-B", "2"), ("Authorization", "t")].map(|(k, v)| (k.into(), v.into()));
        assert_eq!(read.headers, expected);
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"headers":{"X-B":"2","Authorization":"t"}}"#
        );
        assert!(serde_json::from_str::<Headers>(r#"{"headers": {"X": 1}}"#).is_err());
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Scoped {
        #[serde(
            rename = "namespace",
            with = "namespace",
            default,
            skip_serializing_if = "namespace::is_unset"
        )]
        scope: crate::identity::Scope,
    }

    #[test]
    fn a_scope_is_its_namespace_checked_and_absent_when_unset() {
        let read: Scoped = serde_json::from_str(r#"{"namespace": "cluster-a"}"#).unwrap();
        assert_eq!(read.scope.namespace().unwrap().as_str(), "cluster-a");
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            r#"{"namespace":"cluster-a"}"#
        );
        let unset: Scoped = serde_json::from_str("{}").unwrap();
        assert!(unset.scope.namespace().is_none());
        assert_eq!(serde_json::to_string(&unset).unwrap(), "{}");
        let bad = serde_json::from_str::<Scoped>(r#"{"namespace": "a/b"}"#).unwrap_err();
        assert!(bad.to_string().contains("a/b"), "{bad}");
    }
}

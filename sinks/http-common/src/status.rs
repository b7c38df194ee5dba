//! [`StatusClass`]: the one table from the statuses every HTTP API shares to the sink
//! contract, and [`Advice`], what a sink tells its user to change for the fatal ones.

use reqwest::StatusCode;

/// What an answer's status means for the sink contract, for the statuses every HTTP API
/// shares. A sink gives its own API's statuses (a refused payload, a conflict) their meaning
/// first and leaves the rest to this table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx.
    Success,
    /// 408, 425, 429 and 5xx: the same request may succeed later (`Retryable`, honouring
    /// `Retry-After`).
    Transient,
    /// 401 and 403: the credentials or their privileges (`Fatal`).
    Denied,
    /// 404 and 405: the URL, or what it names, does not exist (`Fatal`).
    NotFound,
    /// Anything else: an answer the sink does not expect (`Fatal`).
    Other,
}

impl StatusClass {
    /// The class of `status`.
    pub fn of(status: StatusCode) -> Self {
        match status.as_u16() {
            200..=299 => Self::Success,
            408 | 425 | 429 | 500..=599 => Self::Transient,
            401 | 403 => Self::Denied,
            404 | 405 => Self::NotFound,
            _ => Self::Other,
        }
    }
}

/// What a sink tells its user to change when its destination answers with a fatal status of
/// the shared table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advice {
    /// For 401 and 403 (`"check the credentials in the sink's headers"`).
    pub denied: &'static str,
    /// For 404 and 405 (`"check the url"`, or how to create what is missing).
    pub not_found: &'static str,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_one_class() {
        let class = |code: u16| StatusClass::of(StatusCode::from_u16(code).unwrap());
        for code in [200, 201, 202, 204, 299] {
            assert_eq!(class(code), StatusClass::Success, "{code}");
        }
        for code in [408, 425, 429, 500, 502, 503, 504, 599] {
            assert_eq!(class(code), StatusClass::Transient, "{code}");
        }
        assert_eq!(class(401), StatusClass::Denied);
        assert_eq!(class(403), StatusClass::Denied);
        assert_eq!(class(404), StatusClass::NotFound);
        assert_eq!(class(405), StatusClass::NotFound);
        for code in [100, 301, 400, 409, 413, 415, 422] {
            assert_eq!(class(code), StatusClass::Other, "{code}");
        }
    }
}

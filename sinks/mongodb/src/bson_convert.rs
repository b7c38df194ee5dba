//! JSON to BSON without Extended-JSON interpretation.

use mongodb::bson::{Bson, Document};
use serde_json::Value;

/// The BSON of a JSON value; integers outside i64 are refused rather than rounded.
pub(crate) fn to_bson(value: Value) -> Result<Bson, String> {
    Ok(match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Bson::Int64(i)
            } else if n.is_u64() {
                return Err(format!(
                    "integer {n} is above the largest BSON integer (i64)"
                ));
            } else {
                Bson::Double(
                    n.as_f64()
                        .ok_or_else(|| format!("number {n} does not fit a double"))?,
                )
            }
        }
        Value::String(s) => Bson::String(s),
        Value::Array(items) => {
            Bson::Array(items.into_iter().map(to_bson).collect::<Result<_, _>>()?)
        }
        Value::Object(map) => Bson::Document(to_document(map)?),
    })
}

/// The BSON document of a JSON object.
pub(crate) fn to_document(map: serde_json::Map<String, Value>) -> Result<Document, String> {
    let mut doc = Document::new();
    for (k, v) in map {
        doc.insert(k, to_bson(v)?);
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_fields_stay_plain() {
        let v: Value =
            serde_json::from_str(r#"{"$date":"x","n":-3,"f":1.5,"a":[true,null],"o":{"k":"v"}}"#)
                .unwrap();
        let Value::Object(map) = v else { panic!() };
        let doc = to_document(map).unwrap();
        assert_eq!(doc.get_str("$date").unwrap(), "x");
        assert_eq!(doc.get_i64("n").unwrap(), -3);
        assert_eq!(doc.get_f64("f").unwrap(), 1.5);
        assert_eq!(doc.get_document("o").unwrap().get_str("k").unwrap(), "v");
        let big: Value = serde_json::from_str("18446744073709551615").unwrap();
        assert!(to_bson(big).unwrap_err().contains("i64"));
    }
}

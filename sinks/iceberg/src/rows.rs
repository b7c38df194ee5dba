//! The table schema and a batch's records as an Arrow record batch.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, LargeBinaryArray, RecordBatch, StringArray};
use iceberg::spec::{NestedField, PrimitiveType, Schema, Type};
use pico_sink::Record;
use pico_sink::identity::Scope;
use pico_sink::kit::EnvelopeHeader;

/// Column names, in schema order: the shared schema ([`pico_sink::identity::columns::RECORD`]);
/// `ts` holds milliseconds since the Unix epoch.
pub const COLUMNS: [&str; 7] = pico_sink::identity::columns::RECORD;

/// The schema of a table the sink creates.
pub fn table_schema() -> iceberg::Result<Schema> {
    let p = Type::Primitive;
    Schema::builder()
        .with_schema_id(0)
        .with_fields(vec![
            NestedField::required(1, COLUMNS[0], p(PrimitiveType::String)).into(),
            // Long, like Delta's: a Kafka partition is an unsigned 32-bit number here, and an
            // Iceberg int would wrap above i32::MAX.
            NestedField::required(2, COLUMNS[1], p(PrimitiveType::Long)).into(),
            NestedField::required(3, COLUMNS[2], p(PrimitiveType::Long)).into(),
            NestedField::optional(4, COLUMNS[3], p(PrimitiveType::Binary)).into(),
            NestedField::required(5, COLUMNS[4], p(PrimitiveType::Binary)).into(),
            NestedField::optional(6, COLUMNS[5], p(PrimitiveType::String)).into(),
            NestedField::optional(7, COLUMNS[6], p(PrimitiveType::Long)).into(),
        ])
        .build()
}

/// Why a record cannot be a row: an offset above the `long` range.
pub(crate) fn check(record: &Record) -> Result<(), String> {
    i64::try_from(record.id.offset).map(|_| ()).map_err(|_| {
        format!(
            "offset {} is above i64::MAX (Iceberg long)",
            record.id.offset
        )
    })
}

/// The records (already checked) as a record batch of `schema`.
pub(crate) fn to_arrow(
    scope: &Scope,
    records: &[&Record],
    schema: &Schema,
) -> Result<RecordBatch, String> {
    let arrow_schema =
        iceberg::arrow::schema_to_arrow_schema(schema).map_err(|e| format!("arrow schema: {e}"))?;
    let topics: StringArray = records
        .iter()
        .map(|r| Some(scope.qualified_topic(&r.id.topic).into_owned()))
        .collect();
    let partitions: Int64Array = records
        .iter()
        .map(|r| Some(i64::from(r.id.partition)))
        .collect();
    let offsets: Int64Array = records
        .iter()
        .map(|r| i64::try_from(r.id.offset).ok())
        .collect();
    let keys: LargeBinaryArray = records.iter().map(|r| r.key.as_deref()).collect();
    let values: LargeBinaryArray = records.iter().map(|r| Some(r.value.as_ref())).collect();
    let headers: StringArray = records
        .iter()
        .map(|r| EnvelopeHeader::json_text(&r.headers))
        .collect();
    let timestamps: Int64Array = records.iter().map(|r| r.timestamp_ms).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(topics),
        Arc::new(partitions),
        Arc::new(offsets),
        Arc::new(keys),
        Arc::new(values),
        Arc::new(headers),
        Arc::new(timestamps),
    ];
    RecordBatch::try_new(Arc::new(arrow_schema), columns).map_err(|e| format!("record batch: {e}"))
}

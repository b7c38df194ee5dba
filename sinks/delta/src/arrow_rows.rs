//! Records to an Arrow batch of the table's schema.

use std::sync::Arc;

use deltalake::arrow::array::{ArrayRef, BinaryArray, Int64Array, StringArray};
use deltalake::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use deltalake::arrow::record_batch::RecordBatch;
use deltalake::kernel::{DataType as DeltaType, PrimitiveType, StructField};
use pico_sink::Record;
use pico_sink::identity::{Scope, columns};
use pico_sink::kit::EnvelopeHeader;

/// The Delta columns: the shared schema ([`columns::RECORD`]).
pub(crate) fn delta_columns() -> Vec<StructField> {
    let col = |name: &str, ty: PrimitiveType, nullable: bool| {
        StructField::new(name, DeltaType::Primitive(ty), nullable)
    };
    vec![
        col(columns::TOPIC, PrimitiveType::String, false),
        col(columns::PARTITION, PrimitiveType::Long, false),
        col(columns::OFFSET, PrimitiveType::Long, false),
        col(columns::RECORD_KEY, PrimitiveType::Binary, true),
        col(columns::VALUE, PrimitiveType::Binary, true),
        col(columns::HEADERS, PrimitiveType::String, true),
        col(columns::TIMESTAMP, PrimitiveType::Long, true),
    ]
}

/// The Arrow schema matching [`delta_columns`].
pub(crate) fn arrow_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new(columns::TOPIC, DataType::Utf8, false),
        Field::new(columns::PARTITION, DataType::Int64, false),
        Field::new(columns::OFFSET, DataType::Int64, false),
        Field::new(columns::RECORD_KEY, DataType::Binary, true),
        Field::new(columns::VALUE, DataType::Binary, true),
        Field::new(columns::HEADERS, DataType::Utf8, true),
        Field::new(columns::TIMESTAMP, DataType::Int64, true),
    ]))
}

/// One Arrow batch of `records` (offsets already checked to fit i64).
pub(crate) fn to_arrow(scope: &Scope, records: &[Record]) -> Result<RecordBatch, String> {
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
    let keys: BinaryArray = records.iter().map(|r| r.key.as_deref()).collect();
    let values: BinaryArray = records.iter().map(|r| Some(r.value.as_ref())).collect();
    let headers: StringArray = records
        .iter()
        .map(|r| EnvelopeHeader::json_text(&r.headers))
        .collect();
    let ts: Int64Array = records.iter().map(|r| r.timestamp_ms).collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(topics),
        Arc::new(partitions),
        Arc::new(offsets),
        Arc::new(keys),
        Arc::new(values),
        Arc::new(headers),
        Arc::new(ts),
    ];
    RecordBatch::try_new(arrow_schema(), columns).map_err(|e| e.to_string())
}

//! Mapped columns with PostgreSQL's text rule (no NUL).

use pico_sink::kit::MappedColumn;

/// [`pico_sink::kit::extract_mapped`], refusing NUL characters, which text columns cannot store.
pub fn extract_mapped(
    value: &serde_json::Value,
    columns: &[MappedColumn],
) -> Result<Vec<Option<String>>, String> {
    let fields = pico_sink::kit::extract_mapped(value, columns)?;
    if let Some(i) = fields
        .iter()
        .position(|f| f.as_deref().is_some_and(|t| t.contains('\0')))
    {
        return Err(format!("field {} holds a NUL character", columns[i].field));
    }
    Ok(fields)
}

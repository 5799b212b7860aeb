//! The rows as one Parquet file (no compression): `conversations` a list of `{role,
//! content}` structs, the other columns strings (`reward` a double; `result`, `reward` and
//! `tool_definitions` nullable), which Hugging Face `datasets` loads as Harbor's rows.

use std::sync::Arc;

use agentcompass_schema::traces::TraceRow;
use arrow_array::{ArrayRef, Float64Array, ListArray, RecordBatch, StringArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema};
use parquet::arrow::ArrowWriter;
use parquet::errors::ParquetError;

/// Why the Parquet file could not be written.
#[derive(Debug, thiserror::Error)]
pub(super) enum ParquetFileError {
    /// Building the columns.
    #[error("columns: {0}")]
    Arrow(#[from] ArrowError),
    /// Writing the file.
    #[error("parquet: {0}")]
    Parquet(#[from] ParquetError),
}

fn strings<'a>(rows: &'a [TraceRow], get: impl Fn(&'a TraceRow) -> Option<&'a str>) -> ArrayRef {
    Arc::new(rows.iter().map(get).collect::<StringArray>())
}

/// The `conversations` column.
fn conversations(rows: &[TraceRow]) -> Result<(Field, ArrayRef), ParquetFileError> {
    let message = Fields::from(vec![
        Field::new("role", DataType::Utf8, false),
        Field::new("content", DataType::Utf8, false),
    ]);
    let all: Vec<_> = rows.iter().flat_map(|r| &r.conversations).collect();
    let roles: ArrayRef = Arc::new(
        all.iter()
            .map(|m| Some(m.role.as_str()))
            .collect::<StringArray>(),
    );
    let contents: ArrayRef = Arc::new(
        all.iter()
            .map(|m| Some(m.content.as_str()))
            .collect::<StringArray>(),
    );
    let values = StructArray::try_new(message.clone(), vec![roles, contents], None)?;
    let item = Arc::new(Field::new("item", DataType::Struct(message), false));
    let offsets = OffsetBuffer::from_lengths(rows.iter().map(|r| r.conversations.len()));
    let list = ListArray::try_new(item.clone(), offsets, Arc::new(values), None)?;
    Ok((
        Field::new("conversations", DataType::List(item), false),
        Arc::new(list),
    ))
}

/// A required text column's value in a row.
type Column = fn(&TraceRow) -> &str;

/// Writes `rows` as Parquet to `out`.
pub(super) fn write(out: &mut std::fs::File, rows: &[TraceRow]) -> Result<(), ParquetFileError> {
    let (conversations_field, conversations) = conversations(rows)?;
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    let mut fields = vec![conversations_field];
    let mut columns = vec![conversations];
    let required: [(&str, Column); 8] = [
        ("agent", |r| &r.agent),
        ("model", |r| &r.model),
        ("model_provider", |r| &r.model_provider),
        ("date", |r| &r.date),
        ("task", |r| &r.task),
        ("episode", |r| &r.episode),
        ("run_id", |r| &r.run_id),
        ("trial_name", |r| &r.trial_name),
    ];
    for (name, get) in required {
        fields.push(text(name));
        columns.push(strings(rows, |r| Some(get(r))));
    }
    fields.push(Field::new("result", DataType::Utf8, true));
    columns.push(strings(rows, |r| r.result.as_deref()));
    fields.push(Field::new("reward", DataType::Float64, true));
    columns.push(Arc::new(
        rows.iter().map(|r| r.reward).collect::<Float64Array>(),
    ));
    fields.push(Field::new("tool_definitions", DataType::Utf8, true));
    columns.push(strings(rows, |r| r.tool_definitions.as_deref()));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    let mut writer = ArrowWriter::try_new(out, batch.schema(), None)?;
    writer.write(&batch)?;
    writer.close()?;
    Ok(())
}

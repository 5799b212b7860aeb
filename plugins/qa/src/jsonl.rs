//! A JSONL dataset read as a task stream: one pass checks every record (and hashes the file),
//! a second pass hands the selected tasks out a page at a time. Neither pass keeps the
//! records, so a dataset of any length costs the same memory.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};

use agentcompass_plugin_api::contracts::TaskSpec;
use agentcompass_plugin_api::sdk::{select::unknown_sample_ids, TaskStream};
use agentcompass_plugin_api::Result;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::record::{parse_record, task_of, Record};
use crate::shared::fail;

/// Reads a JSONL file's lines: the line number (1-based) and the text without its line end
/// (`\n` or `\r\n`); a UTF-8 byte-order mark before the first line is skipped.
struct Lines {
    path: String,
    reader: BufReader<File>,
    number: usize,
    buf: Vec<u8>,
    /// Every byte read, when hashing.
    hasher: Option<Sha256>,
}

impl Lines {
    fn open(path: &str, hash: bool) -> Result<Lines> {
        let file = File::open(path).map_err(|e| fail(format!("{path}: cannot read: {e}")))?;
        Ok(Lines {
            path: path.to_string(),
            reader: BufReader::with_capacity(64 * 1024, file),
            number: 0,
            buf: Vec::new(),
            hasher: hash.then(Sha256::new),
        })
    }

    /// The next line, `None` at the end of the file.
    fn next_line(&mut self) -> Result<Option<(usize, &str)>> {
        self.buf.clear();
        let read = self
            .reader
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| fail(format!("{}: cannot read: {e}", self.path)))?;
        if read == 0 {
            return Ok(None);
        }
        if let Some(hasher) = &mut self.hasher {
            hasher.update(&self.buf);
        }
        self.number += 1;
        let mut bytes = self.buf.as_slice();
        if self.number == 1 {
            bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
        }
        if let Some(rest) = bytes.strip_suffix(b"\n") {
            bytes = rest.strip_suffix(b"\r").unwrap_or(rest);
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| fail(format!("{}:{}: not UTF-8: {e}", self.path, self.number)))?;
        Ok(Some((self.number, text)))
    }

    /// The next record (blank lines skipped) and its line number.
    fn next_record(&mut self) -> Result<Option<(usize, Record)>> {
        loop {
            let path = self.path.clone();
            let Some((number, line)) = self.next_line()? else {
                return Ok(None);
            };
            if line.trim().is_empty() {
                continue;
            }
            let value: Value = serde_json::from_str(line)
                .map_err(|e| fail(format!("{path}:{number}: invalid JSON: {e}")))?;
            let record = parse_record(&value).map_err(|e| fail(format!("{path}:{number}: {e}")))?;
            return Ok(Some((number, record)));
        }
    }
}

/// The selected tasks of a JSONL dataset.
pub(crate) struct JsonlTasks {
    lines: Lines,
    sha256: String,
    wanted: Option<HashSet<String>>,
    total: usize,
}

impl JsonlTasks {
    /// Checks the whole file (every record valid, ids unique, `wanted` ids present) and opens
    /// it again for reading tasks; `wanted` keeps only those ids, in dataset order.
    pub(crate) fn open(path: &str, wanted: Option<Vec<String>>) -> Result<JsonlTasks> {
        let mut lines = Lines::open(path, true)?;
        // Id hash → line number of its first record (ids themselves are not kept).
        let mut first_seen: HashMap<u64, usize> = HashMap::new();
        let mut unseen: Option<HashSet<&str>> = wanted
            .as_ref()
            .map(|ids| ids.iter().map(String::as_str).collect());
        let (mut records, mut total) = (0usize, 0usize);
        while let Some((number, record)) = lines.next_record()? {
            records += 1;
            if let Some(&first) = first_seen.get(&id_hash(&record.id)) {
                if id_at_line(path, first).as_deref() == Some(record.id.as_str()) {
                    return Err(fail(format!(
                        "{path}:{number}: duplicate id \"{}\" (first at line {first})",
                        record.id
                    )));
                }
            } else {
                first_seen.insert(id_hash(&record.id), number);
            }
            match &mut unseen {
                None => total += 1,
                Some(unseen) => {
                    // Ids are unique, so a wanted id is removed at most once.
                    if unseen.remove(record.id.as_str()) {
                        total += 1;
                    }
                }
            }
        }
        if records == 0 {
            return Err(fail(format!("{path}: the dataset holds no records")));
        }
        if let (Some(ids), Some(unseen)) = (&wanted, &unseen) {
            if !unseen.is_empty() {
                let missing: Vec<&str> = ids
                    .iter()
                    .map(String::as_str)
                    .filter(|id| unseen.contains(id))
                    .collect();
                return Err(unknown_sample_ids(&missing));
            }
        }
        let sha256 = lines
            .hasher
            .take()
            .map(|h| hex::encode(h.finalize()))
            .unwrap_or_default();
        drop(unseen);
        Ok(JsonlTasks {
            lines: Lines::open(path, false)?,
            sha256,
            wanted: wanted.map(|ids| ids.into_iter().collect()),
            total,
        })
    }
}

impl TaskStream for JsonlTasks {
    fn total(&self) -> usize {
        self.total
    }

    fn next_page(&mut self, max: usize) -> Result<Vec<TaskSpec>> {
        let mut page = Vec::with_capacity(max.clamp(1, 1024));
        while page.len() < max.max(1) {
            let Some((_, record)) = self.lines.next_record()? else {
                break;
            };
            if let Some(wanted) = &self.wanted {
                if !wanted.contains(&record.id) {
                    continue;
                }
            }
            page.push(task_of(record, &self.sha256, &self.lines.path));
        }
        Ok(page)
    }
}

fn id_hash(id: &str) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    id.hash(&mut hasher);
    hasher.finish()
}

/// The id of the record on line `number` (to tell a repeated id from a hash collision).
fn id_at_line(path: &str, number: usize) -> Option<String> {
    let mut lines = Lines::open(path, false).ok()?;
    loop {
        let (at, record) = lines.next_record().ok()??;
        if at == number {
            return Some(record.id);
        }
    }
}

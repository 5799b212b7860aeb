//! Following a job's progress events: each run of a job appends `progress.jsonl` lines
//! ([`EventLine`]) to its own events file; the coordinator reads the complete lines added
//! since its last look (a line still being written waits for the next).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use agentcompass_schema::progress::EventLine;

/// The read position in one events file.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

/// The most read from one file in one look (the rest waits for the next look).
const MAX_READ: u64 = 4 << 20;

impl Tail {
    /// A tail of `path` from its start.
    pub fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            offset: 0,
            partial: Vec::new(),
        }
    }

    /// The events appended since the last call (unparsable lines are skipped with a warning).
    pub fn read_new(&mut self) -> Vec<EventLine<'static>> {
        let Ok(mut file) = File::open(&self.path) else {
            return Vec::new();
        };
        if file.seek(SeekFrom::Start(self.offset)).is_err() {
            return Vec::new();
        }
        let mut bytes = Vec::new();
        let read = (&mut file).take(MAX_READ).read_to_end(&mut bytes);
        let Ok(read) = read else {
            return Vec::new();
        };
        self.offset += read as u64;
        self.partial.extend_from_slice(&bytes);
        let Some(last_newline) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Vec::new();
        };
        let rest = self.partial.split_off(last_newline + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        complete
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .filter_map(|line| match serde_json::from_slice::<EventLine<'_>>(line) {
                Ok(event) => Some(event.into_owned()),
                Err(e) => {
                    tracing::warn!("{}: skipped an unreadable event: {e}", self.path.display());
                    None
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn only_complete_lines_are_read_and_each_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("7.0.jsonl");
        let mut tail = Tail::new(path.clone());
        assert!(tail.read_new().is_empty());
        let mut file = std::fs::File::create(&path).unwrap();
        write!(
            file,
            "{{\"event\":\"task_started\",\"task_id\":\"a\",\"payload\":{{\"index\":0}}}}\n{{\"event\":\"task_fin"
        )
        .unwrap();
        let first = tail.read_new();
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].task_id.as_deref(), Some("a"));
        assert!(tail.read_new().is_empty());
        writeln!(
            file,
            "ished\",\"task_id\":\"a\",\"status\":\"completed\"}}\nnot json"
        )
        .unwrap();
        let second = tail.read_new();
        assert_eq!(second.len(), 1);
        assert_eq!(
            second[0].event,
            agentcompass_schema::progress::EventKind::TaskFinished
        );
        assert!(tail.read_new().is_empty());
    }
}

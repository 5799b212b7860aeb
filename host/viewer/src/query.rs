//! The `/api/tasks` query: the state, correctness, category, issue and search filters, and
//! paging over a run's listing (with the run's index when a filter needs per-task facts).

use std::sync::Arc;

use crate::error::ViewerError;
use crate::index::RunIndex;
use crate::tasks::State;

/// The `filter` parameter of `/api/tasks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Every task.
    All,
    /// Tasks in `details/running/`.
    Running,
    /// Published in `normal/`.
    Completed,
    /// Published in `fatal/`.
    Failed,
    /// Published in `error/`.
    Error,
    /// Final attempt correct.
    Correct,
    /// Final attempt evaluated and not correct.
    Wrong,
}

impl Filter {
    /// The filter named `name`.
    pub fn parse(name: &str) -> Result<Filter, ViewerError> {
        Ok(match name {
            "all" | "" => Filter::All,
            "running" => Filter::Running,
            "completed" => Filter::Completed,
            "failed" => Filter::Failed,
            "error" => Filter::Error,
            "correct" => Filter::Correct,
            "wrong" => Filter::Wrong,
            other => {
                return Err(ViewerError::BadRequest(format!(
                "unknown filter {other:?} (all, running, completed, failed, error, correct, wrong)"
            )))
            }
        })
    }

    /// Whether the filter needs only the state (no per-task facts).
    pub fn by_state(self) -> Option<Option<State>> {
        match self {
            Filter::All => Some(None),
            Filter::Running => Some(Some(State::Running)),
            Filter::Completed => Some(Some(State::Normal)),
            Filter::Failed => Some(Some(State::Fatal)),
            Filter::Error => Some(Some(State::Error)),
            Filter::Correct | Filter::Wrong => None,
        }
    }
}

/// A `/api/tasks` query.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskQuery {
    /// Page number (from 0).
    pub page: usize,
    /// Rows per page (1..=1000).
    pub size: usize,
    /// The state or correctness filter.
    pub filter: Filter,
    /// Only this category.
    pub category: Option<String>,
    /// Only tasks whose final attempt has this issue code.
    pub issue: Option<String>,
    /// Only task ids containing this text (case-insensitive).
    pub q: Option<String>,
}

impl TaskQuery {
    /// Whether answering needs the run's index (anything but a state filter).
    pub fn needs_index(&self) -> bool {
        self.filter.by_state().is_none()
            || self.category.is_some()
            || self.issue.is_some()
            || self.q.is_some()
    }
}

/// A run's task directories in listing order: read from disk, or the entries of a terminal
/// run's index (then a request reads no directory).
#[derive(Debug)]
pub enum Listing {
    /// Read from `details/` just now.
    Dirs(Vec<(State, String)>),
    /// The entries of the run's index (a terminal run's task set no longer changes).
    Indexed(Arc<RunIndex>),
}

impl Listing {
    /// The entry at `at` as (state, directory name).
    pub fn get(&self, at: usize) -> Option<(State, &str)> {
        match self {
            Listing::Dirs(dirs) => dirs.get(at).map(|(s, n)| (*s, n.as_str())),
            Listing::Indexed(index) => index
                .entries()
                .get(at)
                .map(|e| (State::from_u8(e.state), index.name(e))),
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = (State, &str)> + '_> {
        match self {
            Listing::Dirs(dirs) => Box::new(dirs.iter().map(|(s, n)| (*s, n.as_str()))),
            Listing::Indexed(index) => Box::new(
                index
                    .entries()
                    .iter()
                    .map(|e| (State::from_u8(e.state), index.name(e))),
            ),
        }
    }
}

/// The page of `query` over `listing`: `(total matching, the page's positions in the
/// listing)`. Without `index`, only state filters apply.
pub fn select(
    listing: &Listing,
    index: Option<&RunIndex>,
    query: &TaskQuery,
) -> (usize, Vec<usize>) {
    let start = query.page.saturating_mul(query.size);
    let mut total = 0;
    let mut page = Vec::new();
    let state_filter = query.filter.by_state();
    let q = query.q.as_ref().map(|q| q.to_lowercase());
    let category = index.and_then(|i| query.category.as_ref().map(|c| i.category_id(c)));
    let issue = index.and_then(|i| query.issue.as_ref().map(|c| i.code_id(c)));
    for (at, (state, name)) in listing.iter().enumerate() {
        let keep = match state_filter {
            Some(Some(wanted)) => state == wanted,
            Some(None) => true,
            None => true,
        };
        if !keep {
            continue;
        }
        if let Some(index) = index {
            let Some(entry) = index.entry(state, name) else {
                // Not in the index (appeared after it was built): only a state filter keeps it.
                if query.needs_index() {
                    continue;
                }
                total += 1;
                if total > start && page.len() < query.size {
                    page.push(at);
                }
                continue;
            };
            let ok = match query.filter {
                Filter::Correct => entry.correct == 1,
                Filter::Wrong => entry.correct == 0,
                _ => true,
            } && category.is_none_or(|c| c == Some(entry.category))
                && issue.is_none_or(|c| c.is_some_and(|c| index.has_code(entry, c)))
                && q.as_ref()
                    .is_none_or(|q| index.task_id(entry).to_lowercase().contains(q.as_str()));
            if !ok {
                continue;
            }
        }
        total += 1;
        if total > start && page.len() < query.size {
            page.push(at);
        }
    }
    (total, page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse() {
        assert_eq!(Filter::parse("wrong").unwrap(), Filter::Wrong);
        assert!(matches!(
            Filter::parse("nope"),
            Err(ViewerError::BadRequest(_))
        ));
    }

    fn query(page: usize, size: usize, filter: Filter) -> TaskQuery {
        TaskQuery {
            page,
            size,
            filter,
            category: None,
            issue: None,
            q: None,
        }
    }

    #[test]
    fn paging_by_state_without_index() {
        let listing: Vec<(State, String)> = (0..7)
            .map(|i| {
                (
                    if i < 2 { State::Running } else { State::Normal },
                    format!("t{i}"),
                )
            })
            .collect();
        assert_eq!(
            select(
                &Listing::Dirs(listing.clone()),
                None,
                &query(0, 3, Filter::All)
            ),
            (7, vec![0, 1, 2])
        );
        assert_eq!(
            select(
                &Listing::Dirs(listing.clone()),
                None,
                &query(2, 3, Filter::All)
            ),
            (7, vec![6])
        );
        assert_eq!(
            select(
                &Listing::Dirs(listing.clone()),
                None,
                &query(9, 3, Filter::All)
            ),
            (7, vec![])
        );
        assert_eq!(
            select(
                &Listing::Dirs(listing.clone()),
                None,
                &query(0, 10, Filter::Running)
            ),
            (2, vec![0, 1])
        );
        assert_eq!(
            select(
                &Listing::Dirs(listing.clone()),
                None,
                &query(1, 2, Filter::Completed)
            ),
            (5, vec![4, 5])
        );
    }
}

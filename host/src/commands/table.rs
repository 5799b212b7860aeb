//! Plain aligned text tables, fitted to the terminal's width.

/// The width tables are fitted to: standard output's terminal width, else `$COLUMNS`, else 80
/// (a pipe or file gets lines that fit an 80-column terminal).
pub fn output_width() -> usize {
    agentcompass_host::console::columns_of(std::io::stdout())
        .filter(|width| *width >= 20)
        .unwrap_or(80)
}

/// Word wrapping at `width` columns, only at spaces: a hyphenated name
/// (`@anthropic-ai/claude-code`) is never split.
pub fn wrapping(width: usize) -> textwrap::Options<'static> {
    textwrap::Options::new(width).word_splitter(textwrap::WordSplitter::NoHyphenation)
}

/// The narrowest the last column is wrapped to; when the other columns leave less, it is not
/// wrapped (a line longer than the terminal beats a column of single words).
const MIN_LAST_COLUMN: usize = 24;

/// [`render`], with the last column word-wrapped so every line fits `width` columns (its
/// continuation lines indented under it).
pub fn render_fitted(header: &[&str], rows: &[Vec<String>], width: usize) -> String {
    let widths = column_widths(header, rows);
    let indent: usize = widths
        .iter()
        .take(header.len().saturating_sub(1))
        .map(|w| w + 2)
        .sum();
    let room = width.saturating_sub(indent);
    if room < MIN_LAST_COLUMN {
        return render(header, rows);
    }
    let mut out = String::new();
    for line in render(header, rows).lines() {
        let (head, last) = split_at_column(line, indent);
        let wrapped = textwrap::wrap(last, wrapping(room));
        for (n, piece) in wrapped.iter().enumerate() {
            if n == 0 {
                out.push_str(head);
            } else {
                out.push_str(&" ".repeat(indent));
            }
            out.push_str(piece.trim_end());
            out.push('\n');
        }
        if wrapped.is_empty() {
            out.push_str(head.trim_end());
            out.push('\n');
        }
    }
    out
}

/// `line` split before the character at column `indent` (the start of the last column).
fn split_at_column(line: &str, indent: usize) -> (&str, &str) {
    match line.char_indices().nth(indent) {
        Some((at, _)) => line.split_at(at),
        None => (line, ""),
    }
}

fn column_widths(header: &[&str], rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    widths
}

/// Renders rows under a header with columns padded to their widest cell (the last column is
/// not padded).
pub fn render(header: &[&str], rows: &[Vec<String>]) -> String {
    let widths = column_widths(header, rows);
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, cell) in cells.into_iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<width$}  ", width = widths[i]));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = line(header.to_vec());
    out.push('\n');
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn columns_align() {
        let out = super::render(
            &["ID", "SOURCE"],
            &[
                vec!["a".into(), "built-in".into()],
                vec!["long_id".into(), "x".into()],
            ],
        );
        assert_eq!(out, "ID       SOURCE\na        built-in\nlong_id  x\n");
    }

    #[test]
    fn the_last_column_wraps_to_the_width() {
        let long = "one two three four five six seven eight nine ten eleven twelve thirteen";
        let out = super::render_fitted(
            &["ID", "DESCRIPTION"],
            &[vec!["a".into(), long.into()], vec!["bb".into(), "".into()]],
            40,
        );
        assert_eq!(
            out,
            "ID  DESCRIPTION\n\
             a   one two three four five six seven\n    \
             eight nine ten eleven twelve\n    thirteen\nbb\n"
        );
        assert!(out.lines().all(|line| line.chars().count() <= 40), "{out}");
        // Too little room: not wrapped.
        let narrow = super::render_fitted(&["ID", "D"], &[vec!["a".repeat(30), long.into()]], 40);
        assert_eq!(narrow.lines().count(), 2);
    }
}

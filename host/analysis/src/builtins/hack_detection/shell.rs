//! A small POSIX-shell reader: splits a command line into simple commands (words with quotes
//! removed, redirections, here-document bodies, whether stdin is piped) and collects the
//! bodies of command substitutions. It never fails: unterminated quotes run to the end.

/// One simple command.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Simple {
    /// Its words, quotes removed (assignments and wrappers included).
    pub words: Vec<String>,
    /// Its redirections: (operator, target); here-documents as (`<<`, delimiter).
    pub redirects: Vec<(String, String)>,
    /// The bodies of its here-documents.
    pub heredocs: Vec<String>,
    /// Whether its stdin is the previous command's stdout (`a | b`).
    pub piped: bool,
}

/// The parsed script: its simple commands in order and the scripts of its command
/// substitutions (`$(...)`, backticks).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Parsed {
    /// The simple commands.
    pub commands: Vec<Simple>,
    /// The command substitutions' scripts.
    pub substitutions: Vec<String>,
}

/// Whether `c` ends an unquoted word.
fn is_delimiter(c: char) -> bool {
    matches!(
        c,
        ' ' | '\t' | '\r' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'
    )
}

struct Reader {
    cs: Vec<char>,
    i: usize,
    parsed: Parsed,
    cur: Simple,
    /// Here-documents waiting for the next newline: (delimiter, strip tabs, command index).
    pending: Vec<(String, bool, usize)>,
}

/// Parses a shell script.
pub(crate) fn parse(script: &str) -> Parsed {
    let mut r = Reader {
        cs: script.chars().collect(),
        i: 0,
        parsed: Parsed::default(),
        cur: Simple::default(),
        pending: Vec::new(),
    };
    r.run();
    r.parsed
}

impl Reader {
    fn peek(&self, offset: usize) -> Option<char> {
        self.cs.get(self.i + offset).copied()
    }

    fn run(&mut self) {
        while let Some(c) = self.peek(0) {
            match c {
                ' ' | '\t' | '\r' => self.i += 1,
                '\\' if self.peek(1) == Some('\n') => self.i += 2,
                '\n' => {
                    self.i += 1;
                    self.end_command(false);
                    self.read_heredocs();
                }
                '#' => {
                    while self.peek(0).is_some_and(|c| c != '\n') {
                        self.i += 1;
                    }
                }
                ';' | '(' | ')' => {
                    self.i += 1;
                    self.end_command(false);
                }
                '&' if self.peek(1) == Some('>') => self.redirect(),
                '&' => {
                    self.i += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.end_command(false);
                }
                '|' if self.peek(1) == Some('|') => {
                    self.i += 2;
                    self.end_command(false);
                }
                '|' => {
                    self.i += if self.peek(1) == Some('&') { 2 } else { 1 };
                    self.end_command(true);
                }
                '<' | '>' => self.redirect(),
                _ => {
                    let word = self.read_word();
                    // A word of digits right before `<`/`>` is the redirected descriptor.
                    if matches!(self.peek(0), Some('<' | '>'))
                        && !word.is_empty()
                        && word.chars().all(|c| c.is_ascii_digit())
                    {
                        self.redirect();
                    } else {
                        self.cur.words.push(word);
                    }
                }
            }
        }
        self.end_command(false);
        self.read_heredocs();
    }

    /// Ends the current command; the next one is piped when `pipe`.
    fn end_command(&mut self, pipe: bool) {
        let cur = std::mem::take(&mut self.cur);
        if !cur.words.is_empty() || !cur.redirects.is_empty() {
            self.parsed.commands.push(cur);
        }
        self.cur.piped = pipe;
    }

    /// Reads a redirection operator and its target at `self.i`.
    fn redirect(&mut self) {
        let mut op = String::new();
        if self.peek(0) == Some('&') {
            op.push('&');
            self.i += 1;
        }
        let Some(first) = self.peek(0) else {
            return;
        };
        op.push(first);
        self.i += 1;
        let follow: &[&str] = if first == '<' {
            &["<<-", "<<<", "<<", "<&", "<>"]
        } else {
            &[">>", ">|", ">&"]
        };
        for candidate in follow {
            let rest: String = candidate.chars().skip(1).collect();
            let n = rest.chars().count();
            let ahead: String = self.cs.iter().skip(self.i).take(n).collect();
            if ahead == rest && (op.len() == 1) {
                op.push_str(&rest);
                self.i += n;
                break;
            }
        }
        if op == "&>" && self.peek(0) == Some('>') {
            op.push('>');
            self.i += 1;
        }
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.i += 1;
        }
        let target = if self.peek(0).is_some_and(|c| !is_delimiter(c)) {
            self.read_word()
        } else {
            String::new()
        };
        match op.as_str() {
            "<<" | "<<-" => {
                self.pending
                    .push((target.clone(), op == "<<-", self.parsed.commands.len()));
                self.cur.redirects.push((op, target));
            }
            ">&" | "<&" => {
                if !(target == "-" || target.chars().all(|c| c.is_ascii_digit())) && op == ">&" {
                    self.cur.redirects.push((">".to_string(), target));
                }
            }
            _ => self.cur.redirects.push((op, target)),
        }
    }

    /// Reads the bodies of pending here-documents, line by line from `self.i`.
    fn read_heredocs(&mut self) {
        for (delimiter, strip, index) in std::mem::take(&mut self.pending) {
            let mut body = String::new();
            while self.i < self.cs.len() {
                let mut line = String::new();
                while let Some(c) = self.peek(0) {
                    self.i += 1;
                    if c == '\n' {
                        break;
                    }
                    line.push(c);
                }
                let trimmed = line.trim_end_matches('\r');
                let compared = if strip {
                    trimmed.trim_start_matches('\t')
                } else {
                    trimmed
                };
                if compared == delimiter {
                    break;
                }
                body.push_str(&line);
                body.push('\n');
            }
            if let Some(command) = self.parsed.commands.get_mut(index) {
                command.heredocs.push(body);
            }
        }
    }

    /// Reads one word (quotes removed) up to an unquoted delimiter.
    fn read_word(&mut self) -> String {
        let mut word = String::new();
        while let Some(c) = self.peek(0) {
            if is_delimiter(c) {
                break;
            }
            self.i += 1;
            match c {
                '\'' => {
                    while let Some(q) = self.peek(0) {
                        self.i += 1;
                        if q == '\'' {
                            break;
                        }
                        word.push(q);
                    }
                }
                '"' => self.read_double_quoted(&mut word),
                '\\' => {
                    if let Some(next) = self.peek(0) {
                        self.i += 1;
                        if next != '\n' {
                            word.push(next);
                        }
                    }
                }
                '$' if self.peek(0) == Some('(') => {
                    let body = self.read_balanced('(', ')');
                    word.push_str(&format!("$({body})"));
                    self.parsed.substitutions.push(body);
                }
                '$' if self.peek(0) == Some('{') => {
                    let body = self.read_balanced('{', '}');
                    word.push_str(&format!("${{{body}}}"));
                }
                '`' => {
                    let body = self.read_backticks();
                    word.push_str(&format!("`{body}`"));
                    self.parsed.substitutions.push(body);
                }
                other => word.push(other),
            }
        }
        word
    }

    /// Reads a double-quoted part (after its opening quote) into `word`.
    fn read_double_quoted(&mut self, word: &mut String) {
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '"' => return,
                '\\' => match self.peek(0) {
                    Some(next @ ('$' | '`' | '"' | '\\')) => {
                        self.i += 1;
                        word.push(next);
                    }
                    Some('\n') => self.i += 1,
                    _ => word.push('\\'),
                },
                '$' if self.peek(0) == Some('(') => {
                    let body = self.read_balanced('(', ')');
                    word.push_str(&format!("$({body})"));
                    self.parsed.substitutions.push(body);
                }
                '`' => {
                    let body = self.read_backticks();
                    word.push_str(&format!("`{body}`"));
                    self.parsed.substitutions.push(body);
                }
                other => word.push(other),
            }
        }
    }

    /// Reads `open ... close` starting at the opening character; returns what is inside.
    fn read_balanced(&mut self, open: char, close: char) -> String {
        self.i += 1;
        let mut depth = 1usize;
        let mut body = String::new();
        let mut quote: Option<char> = None;
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match quote {
                Some(q) => {
                    if c == '\\' && q == '"' {
                        if let Some(next) = self.peek(0) {
                            body.push(c);
                            body.push(next);
                            self.i += 1;
                            continue;
                        }
                    }
                    if c == q {
                        quote = None;
                    }
                }
                None => {
                    if c == '\'' || c == '"' {
                        quote = Some(c);
                    } else if c == open {
                        depth += 1;
                    } else if c == close {
                        depth -= 1;
                        if depth == 0 {
                            return body;
                        }
                    }
                }
            }
            body.push(c);
        }
        body
    }

    /// Reads a backtick substitution (after its opening backtick).
    fn read_backticks(&mut self) -> String {
        let mut body = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '`' => break,
                '\\' => {
                    if let Some(next) = self.peek(0) {
                        self.i += 1;
                        body.push(next);
                    }
                }
                other => body.push(other),
            }
        }
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(script: &str) -> Vec<Vec<String>> {
        parse(script)
            .commands
            .into_iter()
            .map(|c| c.words)
            .collect()
    }

    #[test]
    fn splits_commands_and_removes_quotes() {
        assert_eq!(
            words("cd /app && echo 'a b' \"c $d\" e\\ f; ls|wc -l\nfalse || true # note"),
            vec![
                vec!["cd", "/app"],
                vec!["echo", "a b", "c $d", "e f"],
                vec!["ls"],
                vec!["wc", "-l"],
                vec!["false"],
                vec!["true"],
            ]
        );
        let parsed = parse("ls | wc");
        assert!(!parsed.commands[0].piped && parsed.commands[1].piped);
    }

    #[test]
    fn redirections() {
        let c =
            &parse("echo 1 > /logs/verifier/reward.txt 2>&1 >>b 2>/dev/null &>c <in").commands[0];
        assert_eq!(c.words, vec!["echo", "1"]);
        let r: Vec<(&str, &str)> = c
            .redirects
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            r,
            vec![
                (">", "/logs/verifier/reward.txt"),
                (">>", "b"),
                (">", "/dev/null"),
                ("&>", "c"),
                ("<", "in")
            ]
        );
        let c = &parse("echo 1>x").commands[0];
        assert_eq!(c.words, vec!["echo"]);
        assert_eq!(c.redirects, vec![(">".to_string(), "x".to_string())]);
    }

    #[test]
    fn heredocs_and_substitutions() {
        let p = parse("cat > /tests/t.py <<'EOF'\nimport x > y\nEOF\npython3 - <<-END\n\tprint(1)\n\tEND\necho $(rm -rf /tests) `touch a`");
        assert_eq!(p.commands.len(), 3);
        assert_eq!(p.commands[0].heredocs, vec!["import x > y\n"]);
        assert_eq!(p.commands[1].words, vec!["python3", "-"]);
        assert_eq!(p.commands[1].heredocs, vec!["\tprint(1)\n"]);
        assert_eq!(p.substitutions, vec!["rm -rf /tests", "touch a"]);
    }

    #[test]
    fn never_fails_on_junk() {
        for junk in [
            "'unterminated",
            "\"x",
            "$(",
            "`",
            "<<",
            ">",
            "&>",
            "a\\",
            "<<EOF\nno end",
            "((((",
            "2>",
        ] {
            let _ = parse(junk);
        }
    }
}

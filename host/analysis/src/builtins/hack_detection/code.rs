//! What inline program code (Python, Node, Perl, Ruby, PHP) writes, found from the string
//! literals that name a protected path and the call they are an argument of: `open(p, 'w')`,
//! `Path(p).write_text(...)`, `os.remove(p)`, `shutil.rmtree(p)`, `fs.writeFileSync(p)`,
//! `shutil.copy(src, p)`, and shell commands run with `os.system(...)`/`subprocess.run(...)`.
//! A read (`open(p)`, `open(p, 'r')`) is not a write.

use super::write::{Kind, Write};

/// Reads shell commands that code runs; given by the shell side (which in turn reads the
/// inline code of the commands it parses), so this module does not depend on it.
pub(crate) trait ShellReader {
    /// What a shell script writes.
    fn script(&self, script: &str, depth: usize) -> Vec<Write>;
    /// What an argument vector (`["rm", "-rf", "/tests"]`) writes.
    fn argv(&self, words: &[String], depth: usize) -> Vec<Write>;
}

/// A string literal: byte span (quotes included) and its text.
#[derive(Debug, Clone)]
struct Lit {
    start: usize,
    end: usize,
    value: String,
}

/// The string literals of `code` (`'...'`, `"..."`, triple quotes, backticks), skipping
/// `#` comments that start a line or follow whitespace.
fn literals(code: &str) -> Vec<Lit> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'#' && (i == 0 || b[i - 1].is_ascii_whitespace()) {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if !matches!(c, b'\'' | b'"' | b'`') {
            i += 1;
            continue;
        }
        let start = i;
        let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
        i += if triple { 3 } else { 1 };
        let body_start = i;
        let mut body_end = b.len();
        while i < b.len() {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == c && (!triple || (b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c))) {
                body_end = i;
                i += if triple { 3 } else { 1 };
                break;
            }
            if b[i] == b'\n' && !triple && c != b'`' {
                body_end = i;
                break;
            }
            i += 1;
        }
        let i_end = i.min(b.len());
        let raw = code
            .get(body_start..body_end.min(b.len()))
            .unwrap_or_default();
        out.push(Lit {
            start,
            end: i_end,
            value: unescape(raw),
        });
        i = i_end.max(start + 1);
    }
    out
}

/// Removes backslash escapes of quotes and backslashes.
fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(next @ ('\'' | '"' | '\\' | '`')) => out.push(next),
                Some('n') => out.push('\n'),
                Some(other) => {
                    out.push('\\');
                    out.push(other);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The literal ending right before byte `pos` (exclusive end == `pos`), if any.
fn literal_ending_at(lits: &[Lit], pos: usize) -> Option<&Lit> {
    let i = lits.partition_point(|l| l.end < pos);
    lits.get(i).filter(|l| l.end == pos)
}

/// The literal starting at byte `pos`, if any.
fn literal_starting_at(lits: &[Lit], pos: usize) -> Option<&Lit> {
    let i = lits.partition_point(|l| l.start < pos);
    lits.get(i).filter(|l| l.start == pos)
}

/// How far back a call's opening bracket is looked for.
const MAX_LOOKBACK: usize = 400;

/// The unclosed bracket (`(`, `[`, `{`) enclosing byte `pos`, within the statement.
fn enclosing_open(b: &[u8], lits: &[Lit], pos: usize) -> Option<(usize, u8)> {
    let mut depth = 0usize;
    let mut j = pos;
    let floor = pos.saturating_sub(MAX_LOOKBACK);
    while j > floor {
        if let Some(lit) = literal_ending_at(lits, j) {
            j = lit.start;
            continue;
        }
        j -= 1;
        match b[j] {
            b')' | b']' | b'}' => depth += 1,
            open @ (b'(' | b'[' | b'{') => {
                if depth == 0 {
                    return Some((j, open));
                }
                depth -= 1;
            }
            b';' if depth == 0 => return None,
            b'\n' if depth == 0 => {
                let before = b[..j].iter().rev().find(|c| !c.is_ascii_whitespace());
                if !matches!(before, Some(b'(' | b'[' | b'{' | b',' | b'\\' | b'+')) {
                    return None;
                }
            }
            _ => {}
        }
    }
    None
}

/// How far forward a call's closing bracket is looked for.
const MAX_LOOKAHEAD: usize = 4000;

/// The matching close of the bracket at `open` (or where the search gave up).
fn matching_close(b: &[u8], lits: &[Lit], open: usize) -> usize {
    let mut depth = 0usize;
    let mut j = open;
    let limit = b.len().min(open.saturating_add(MAX_LOOKAHEAD));
    while j < limit {
        if let Some(lit) = literal_starting_at(lits, j) {
            j = lit.end.max(j + 1);
            continue;
        }
        match b[j] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return j;
                }
            }
            _ => {}
        }
        j += 1;
    }
    limit
}

/// The callee name right before the bracket at `open` (`os.path.join`, `open`), with its
/// start.
fn callee_before(code: &str, open: usize) -> (usize, &str) {
    let b = code.as_bytes();
    let mut end = open;
    while end > 0 && b[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    let mut start = end;
    while start > 0
        && (b[start - 1].is_ascii_alphanumeric() || matches!(b[start - 1], b'_' | b'.' | b'$'))
    {
        start -= 1;
    }
    (start, code.get(start..end).unwrap_or_default())
}

/// How many top-level commas lie between the bracket at `open` and `pos`.
fn arg_index(b: &[u8], lits: &[Lit], open: usize, pos: usize) -> usize {
    let mut depth = 0usize;
    let mut commas = 0;
    let mut j = open + 1;
    while j < pos.min(b.len()) {
        if let Some(lit) = literal_starting_at(lits, j) {
            j = lit.end.max(j + 1);
            continue;
        }
        match b[j] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => commas += 1,
            _ => {}
        }
        j += 1;
    }
    commas
}

/// The last dotted segment of a callee and the one before it.
fn segments(callee: &str) -> (&str, &str) {
    let mut parts = callee.rsplit('.');
    let last = parts.next().unwrap_or_default();
    (last, parts.next().unwrap_or_default())
}

/// Module names whose mutating functions are recognised (`os.remove`, `fs.rm`, ...).
const MODULES: &[&str] = &[
    "os",
    "shutil",
    "fs",
    "fsp",
    "promises",
    "File",
    "FileUtils",
    "IO",
    "Files",
    "pathlib",
    "Dir",
];

/// Functions whose first argument is written, by (module-qualified) name, and how.
fn mutator(callee: &str) -> Option<Kind> {
    let (last, module) = segments(callee);
    let unambiguous = match last {
        "rmtree" | "unlinkSync" | "rmSync" | "rmdirSync" | "rm_rf" | "rm_r" | "removedirs" => {
            Some(Kind::Delete)
        }
        "writeFileSync" | "appendFileSync" | "truncateSync" | "mkdirSync" | "makedirs"
        | "file_put_contents" | "mkdir_p" => Some(Kind::Modify),
        "chmodSync" | "chownSync" => Some(Kind::Permission),
        _ => None,
    };
    if unambiguous.is_some() {
        return unambiguous;
    }
    // Bare builtins (Perl, PHP): `unlink("...")`, `chmod(...)`.
    if module.is_empty() && !callee.contains('.') {
        return match last {
            "unlink" | "rmdir" => Some(Kind::Delete),
            "chmod" | "chown" => Some(Kind::Permission),
            _ => None,
        };
    }
    if !MODULES.contains(&module) {
        return None;
    }
    match last {
        "remove" | "unlink" | "rmdir" | "rm" | "rm_f" | "delete" | "rename" | "renames"
        | "move" | "mv" | "replace" | "renameSync" => Some(Kind::Delete),
        "chmod" | "lchmod" | "chown" | "lchown" | "chmod_R" => Some(Kind::Permission),
        "truncate" | "mkdir" | "touch" | "utime" | "writeFile" | "appendFile" | "write"
        | "binwrite" | "open" => Some(Kind::Modify),
        _ => None,
    }
}

/// Functions whose second or later argument is written (copies, links).
fn copier(callee: &str) -> bool {
    let (last, module) = segments(callee);
    matches!(last, "copyFileSync" | "copyfile" | "copytree" | "cpSync")
        || (MODULES.contains(&module)
            && matches!(
                last,
                "copy" | "copy2" | "copyFile" | "cp" | "cp_r" | "install" | "symlink" | "link"
            ))
}

/// Functions that run a shell command.
fn shell_runner(callee: &str) -> bool {
    let (last, _) = segments(callee);
    matches!(
        last,
        "system"
            | "popen"
            | "run"
            | "call"
            | "check_call"
            | "check_output"
            | "Popen"
            | "getoutput"
            | "getstatusoutput"
            | "execSync"
            | "spawnSync"
            | "execFileSync"
            | "exec"
            | "spawn"
            | "shell_exec"
            | "passthru"
            | "proc_open"
    )
}

/// Whether a mode literal opens for writing (`w`, `a`, `x`, `+`; Perl's `>`, `+<`).
fn write_mode(value: &str) -> bool {
    let v = value.trim();
    v.starts_with('>')
        || v.starts_with("+<")
        || (!v.is_empty()
            && v.len() <= 4
            && v.chars().all(|c| "rwabxtU+".contains(c))
            && v.contains(['w', 'a', 'x', '+']))
}

/// Methods of a path object that write it.
const PATH_METHODS: &[(&str, Kind)] = &[
    (".write_text(", Kind::Modify),
    (".write_bytes(", Kind::Modify),
    (".touch(", Kind::Modify),
    (".mkdir(", Kind::Modify),
    (".symlink_to(", Kind::Modify),
    (".hardlink_to(", Kind::Modify),
    (".unlink(", Kind::Delete),
    (".rmdir(", Kind::Delete),
    (".rename(", Kind::Delete),
    (".replace(", Kind::Delete),
    (".chmod(", Kind::Permission),
];

/// What inline code writes.
pub(crate) fn writes_in_code(code: &str, depth: usize, shell: &dyn ShellReader) -> Vec<Write> {
    let lits = literals(code);
    let mut out = Vec::new();
    for lit in &lits {
        if lit.value.contains("logs/verifier")
            || lit.value.contains("tests")
            || lit.value.contains("/logs")
        {
            out.extend(literal_writes(code, &lits, lit, depth, shell));
        }
    }
    out
}

/// The call a literal (or a call enclosing it) is an argument of.
struct Call<'c> {
    /// Its opening `(`.
    open: usize,
    /// The `[` of the list argument the literal is in (`subprocess.run([...])`), if any.
    list: Option<usize>,
    /// Where the callee's name starts.
    callee_start: usize,
    /// The callee's name (`os.remove`, `open`).
    callee: &'c str,
    /// Its closing `)` (or where the search gave up).
    close: usize,
}

/// The call whose argument list (directly, or through a list argument) encloses byte
/// `pos`; `None` when `pos` is not inside a call.
fn enclosing_call<'c>(code: &'c str, lits: &[Lit], pos: usize) -> Option<Call<'c>> {
    let b = code.as_bytes();
    let (open, bracket) = enclosing_open(b, lits, pos)?;
    let (open, list) = match bracket {
        b'(' => (open, None),
        b'[' => match enclosing_open(b, lits, open) {
            Some((call, b'(')) => (call, Some(open)),
            _ => return None,
        },
        _ => return None,
    };
    let (callee_start, callee) = callee_before(code, open);
    let close = matching_close(b, lits, open);
    Some(Call {
        open,
        list,
        callee_start,
        callee,
        close,
    })
}

/// Callees that build a path from their arguments (`os.path.join(...)`): the call that
/// takes the built path decides.
fn path_builder(callee: &str) -> bool {
    matches!(
        callee,
        "os.path.join"
            | "path.join"
            | "path.resolve"
            | "File.join"
            | "os.path.abspath"
            | "os.path.realpath"
            | "os.path.expanduser"
    )
}

/// What the call a literal is an argument of does with it; looks outward through path
/// objects and path builders (at most 4 calls).
fn literal_writes(
    code: &str,
    lits: &[Lit],
    lit: &Lit,
    depth: usize,
    shell: &dyn ShellReader,
) -> Vec<Write> {
    let b = code.as_bytes();
    let mut pos = lit.start;
    for _ in 0..4 {
        let Some(call) = enclosing_call(code, lits, pos) else {
            return Vec::new();
        };
        let callee = call.callee;
        if shell_runner(callee) {
            return shell_call_writes(code, lits, lit, &call, depth, shell);
        }
        let (last, _) = segments(callee);
        let index = arg_index(b, lits, call.open, pos);
        if matches!(last, "open" | "fopen" | "sysopen")
            && (callee == last
                || matches!(
                    callee,
                    "io.open" | "codecs.open" | "os.open" | "File.open" | "IO.open"
                ))
        {
            return open_call_writes(code, lits, lit, &call);
        }
        if matches!(last, "Path" | "PosixPath" | "PurePath" | "PurePosixPath") {
            if let Some(writes) = path_object_writes(code, lit, &call) {
                return writes;
            }
            pos = call.callee_start;
            continue;
        }
        if let Some(kind) = mutator(callee) {
            return vec![Write::new(&lit.value, format!("{callee}()"), kind)];
        }
        if copier(callee) && index >= 1 {
            return vec![Write::new(&lit.value, format!("{callee}()"), Kind::Modify)];
        }
        if path_builder(callee) {
            pos = call.callee_start;
            continue;
        }
        return Vec::new();
    }
    Vec::new()
}

/// A shell runner (`os.system(s)`, `subprocess.run([...])`): what its argument list, or
/// else the literal as a script, writes.
fn shell_call_writes(
    code: &str,
    lits: &[Lit],
    lit: &Lit,
    call: &Call<'_>,
    depth: usize,
    shell: &dyn ShellReader,
) -> Vec<Write> {
    if let Some(list_open) = call.list {
        let list_close = matching_close(code.as_bytes(), lits, list_open);
        let argv: Vec<String> = lits
            .iter()
            .filter(|l| l.start > list_open && l.end <= list_close)
            .map(|l| l.value.clone())
            .collect();
        return shell.argv(&argv, depth + 1);
    }
    shell.script(&lit.value, depth + 1)
}

/// An `open(...)` call: a write when it opens for writing (a write mode among its literal
/// arguments, an `O_WRONLY`-style flag, or Perl's `>`/`+<` prefix on the path).
fn open_call_writes(code: &str, lits: &[Lit], lit: &Lit, call: &Call<'_>) -> Vec<Write> {
    let b = code.as_bytes();
    let (open, close) = (call.open, call.close);
    let perl_path = lit
        .value
        .trim_start_matches(['+', '>', '<'])
        .trim()
        .to_string();
    let perl_prefixed =
        lit.value.trim_start().starts_with('>') || lit.value.trim_start().starts_with("+<");
    let in_call = |l: &&Lit| l.start > open && l.end <= close.max(open + 1);
    let call_text = code.get(open..close.min(b.len())).unwrap_or_default();
    let writes = perl_prefixed
        || lits
            .iter()
            .filter(in_call)
            .any(|l| l.start != lit.start && write_mode(&l.value))
        || ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
            .iter()
            .any(|f| call_text.contains(f));
    if !writes {
        return Vec::new();
    }
    vec![Write::new(
        if perl_prefixed {
            &perl_path
        } else {
            &lit.value
        },
        "open()",
        Kind::Modify,
    )]
}

/// A path object (`Path(p)`): what the method called on it in the same statement writes
/// (`.write_text()`, `.unlink()`, `.open('w')`); `None` when no writing method is called
/// (the enclosing call then decides).
fn path_object_writes(code: &str, lit: &Lit, call: &Call<'_>) -> Option<Vec<Write>> {
    let rest = code.get(call.close.min(code.len())..).unwrap_or_default();
    let statement = rest.split(['\n', ';']).next().unwrap_or_default();
    for (method, kind) in PATH_METHODS {
        if statement.contains(method) {
            return Some(vec![Write::new(
                &lit.value,
                format!("Path{}()", &method[..method.len() - 1]),
                *kind,
            )]);
        }
    }
    let at = statement.find(".open(")?;
    literals(&statement[at..])
        .iter()
        .any(|l| write_mode(&l.value))
        .then(|| vec![Write::new(&lit.value, "Path.open()", Kind::Modify)])
}

#[cfg(test)]
mod tests;

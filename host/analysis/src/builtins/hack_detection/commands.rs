//! What a shell command writes: the file operands of the commands that create, modify,
//! move, delete or re-permission files, the targets of output redirections, and what the
//! scripts it runs inline (`bash -c`, `python3 -c`, here-documents, `$(...)`) write.

use super::code::{writes_in_code, ShellReader};
use super::paths::resolve;
use super::shell::{parse, Simple};
use super::write::{Kind, Write};

/// Reads the shell commands inline code runs (`os.system(...)`), for [`writes_in_code`].
pub(crate) struct Shell;

impl ShellReader for Shell {
    fn script(&self, script: &str, depth: usize) -> Vec<Write> {
        writes_in_script(script, depth)
    }

    fn argv(&self, words: &[String], depth: usize) -> Vec<Write> {
        writes_in_argv(words, depth)
    }
}

/// How deep inline scripts are followed (`bash -c "python3 -c '...'"`).
const MAX_DEPTH: usize = 6;

/// Commands that write their file operands, and how.
fn operand_writer(prog: &str) -> Option<Kind> {
    match prog {
        "rm" | "rmdir" | "unlink" | "shred" => Some(Kind::Delete),
        "chmod" | "chown" | "chgrp" | "chattr" | "setfacl" => Some(Kind::Permission),
        "touch" | "truncate" | "mkdir" | "tee" | "patch" => Some(Kind::Modify),
        _ => None,
    }
}

/// Commands `xargs` or `find -exec` may run that write their operands.
fn is_writing_prog(prog: &str) -> bool {
    operand_writer(prog).is_some()
        || matches!(
            prog,
            "mv" | "cp" | "ln" | "install" | "sed" | "perl" | "rsync"
        )
}

/// The last path component of a program word (`/bin/rm` → `rm`).
fn basename(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The operands of `args` (words not starting with `-`; every word after `--`).
fn operands(args: &[String]) -> Vec<&str> {
    let mut out = Vec::new();
    let mut options_done = false;
    for arg in args {
        if !options_done && arg == "--" {
            options_done = true;
        } else if options_done || !arg.starts_with('-') || arg == "-" {
            out.push(arg.as_str());
        }
    }
    out
}

/// Whether a redirection target is a device rather than a file.
fn is_device(target: &str) -> bool {
    target.is_empty()
        || matches!(
            target,
            "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
        )
        || target.starts_with("/dev/fd/")
}

/// The words of a command with leading keywords, assignments and wrappers (`sudo`, `env`,
/// `timeout 10`, `nohup`, `xargs -0`, ...) removed, and whether `xargs` ran it.
fn strip_prefixes(words: &[String]) -> (&[String], bool) {
    let mut rest = words;
    let mut xargs = false;
    loop {
        let Some((first, tail)) = rest.split_first() else {
            return (rest, xargs);
        };
        let word = first.as_str();
        let is_assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty()
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !name.starts_with(|c: char| c.is_ascii_digit())
        });
        let takes_value: &[&str] = match basename(word) {
            "sudo" => &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
            "timeout" => &["-s", "-k", "--signal", "--kill-after"],
            "nice" => &["-n", "--adjustment"],
            "xargs" => &[
                "-I",
                "-n",
                "-P",
                "-d",
                "-L",
                "-E",
                "-a",
                "-s",
                "--max-args",
                "--max-procs",
                "--delimiter",
                "--arg-file",
            ],
            "env" => &["-u", "-C", "--unset", "--chdir", "-S"],
            "stdbuf" | "ionice" | "chrt" | "nohup" | "exec" | "command" | "builtin" | "time" => &[],
            _ => {
                if is_assignment
                    || matches!(
                        word,
                        "if" | "then"
                            | "else"
                            | "elif"
                            | "do"
                            | "while"
                            | "until"
                            | "!"
                            | "{"
                            | "}"
                            | "fi"
                            | "done"
                            | "esac"
                    )
                {
                    rest = tail;
                    continue;
                }
                return (rest, xargs);
            }
        };
        if basename(word) == "xargs" {
            xargs = true;
        }
        let is_timeout = basename(word) == "timeout";
        rest = tail;
        // The wrapper's own options (and their values), then `timeout`'s duration.
        while let Some((opt, tail)) = rest.split_first() {
            if opt.starts_with('-') {
                rest = tail;
                if takes_value.contains(&opt.as_str()) {
                    rest = rest.get(1..).unwrap_or_default();
                }
            } else if basename(word) == "env" && opt.contains('=') {
                rest = tail;
            } else {
                break;
            }
        }
        if is_timeout {
            rest = rest.get(1..).unwrap_or_default();
        }
    }
}

/// What a script writes.
pub(crate) fn writes_in_script(script: &str, depth: usize) -> Vec<Write> {
    if depth > MAX_DEPTH {
        return Vec::new();
    }
    let parsed = parse(script);
    let mut out = Vec::new();
    let mut cwd: Option<String> = None;
    let mut pipeline: Vec<String> = Vec::new();
    let mut previous: Option<&Simple> = None;
    for command in &parsed.commands {
        if !command.piped {
            pipeline.clear();
        }
        let stdin = if command.piped {
            previous.and_then(stdin_text)
        } else {
            None
        };
        out.extend(writes_in_command(
            command, &pipeline, stdin, &mut cwd, depth,
        ));
        let (words, _) = strip_prefixes(&command.words);
        pipeline.extend(
            operands(words.get(1..).unwrap_or_default())
                .into_iter()
                .map(str::to_string),
        );
        previous = Some(command);
    }
    for substitution in &parsed.substitutions {
        out.extend(writes_in_script(substitution, depth + 1));
    }
    out
}

/// What an argument vector (`["rm", "-rf", "/tests"]`) writes.
pub(crate) fn writes_in_argv(words: &[String], depth: usize) -> Vec<Write> {
    if depth > MAX_DEPTH {
        return Vec::new();
    }
    let command = Simple {
        words: words.to_vec(),
        ..Simple::default()
    };
    writes_in_command(&command, &[], None, &mut None, depth)
}

/// What a command feeds the next one of its pipeline: its here-documents, or what
/// `echo`/`printf` print.
fn stdin_text(command: &Simple) -> Option<String> {
    if !command.heredocs.is_empty() {
        return Some(command.heredocs.join("\n"));
    }
    let (words, _) = strip_prefixes(&command.words);
    match words.split_first() {
        Some((prog, args)) if matches!(basename(prog), "echo" | "printf") => Some(
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .cloned()
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The inline code an interpreter invocation runs (`-c`/`-e` arguments, or stdin when it
/// reads its program from there); `None` when it runs a script file.
fn inline_code(prog: &str, args: &[String]) -> Option<Vec<String>> {
    let flags: &[&str] = if prog.starts_with("python") || prog.starts_with("pypy") {
        &["-c"]
    } else if matches!(prog, "node" | "nodejs" | "deno" | "bun") {
        &["-e", "--eval", "-p", "--print"]
    } else if prog == "ruby" {
        &["-e"]
    } else if prog.starts_with("php") {
        &["-r"]
    } else {
        return None;
    };
    let mut code = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let is_flag = flags.contains(&arg.as_str())
            || (flags == ["-c"]
                && arg.starts_with('-')
                && !arg.starts_with("--")
                && arg.ends_with('c'));
        if is_flag {
            if let Some(body) = iter.next() {
                code.push(body.clone());
            }
            return Some(code);
        }
        if arg == "-m" {
            return None;
        }
        if arg == "-" {
            return Some(code);
        }
        if !arg.starts_with('-') {
            // A script file.
            return None;
        }
    }
    Some(code)
}

/// Files whose extension says they are scripts: shell (`true`) or another language.
fn script_kind(path: &str) -> Option<bool> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    match ext.as_str() {
        "sh" | "bash" => Some(true),
        "py" | "js" | "mjs" | "cjs" | "ts" | "rb" | "pl" | "php" => Some(false),
        _ => None,
    }
}

/// What the contents of a file written to `path` would write when run (a staged script).
pub(crate) fn writes_in_staged(path: &str, content: &str, depth: usize) -> Vec<Write> {
    let inner = match script_kind(path) {
        Some(true) => writes_in_script(content, depth + 1),
        Some(false) => writes_in_code(content, depth + 1, &Shell),
        None => return Vec::new(),
    };
    inner
        .into_iter()
        .map(|w| Write {
            op: format!("{} (in staged script {path})", w.op),
            ..w
        })
        .collect()
}

/// Records a write of `path` (resolved against `cwd`).
fn add(out: &mut Vec<Write>, cwd: Option<&str>, path: &str, op: &str, kind: Kind) {
    out.push(Write::new(&resolve(path, cwd), op, kind));
}

/// What one simple command writes. `pipeline` holds the words of the commands before it in
/// its pipeline, `stdin` what they feed it; `cwd` follows `cd`.
fn writes_in_command(
    command: &Simple,
    pipeline: &[String],
    stdin: Option<String>,
    cwd: &mut Option<String>,
    depth: usize,
) -> Vec<Write> {
    let mut out = Vec::new();
    let here = cwd.clone();
    let here = here.as_deref();
    let mut redirect_targets = Vec::new();
    for (op, target) in &command.redirects {
        if matches!(op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>") && !is_device(target) {
            add(&mut out, here, target, "redirect", Kind::Modify);
            redirect_targets.push(target.as_str());
        }
    }
    let (words, xargs) = strip_prefixes(&command.words);
    let Some((prog_word, args)) = words.split_first() else {
        return out;
    };
    let prog = basename(prog_word);
    if xargs && is_writing_prog(prog) {
        for word in pipeline {
            add(
                &mut out,
                here,
                word,
                &format!("xargs {prog}"),
                operand_writer(prog).unwrap_or(Kind::Modify),
            );
        }
    }
    let mut scripts: Vec<String> = Vec::new();
    let mut code: Vec<String> = Vec::new();
    match prog {
        "cd" | "pushd" => {
            let target = operands(args).first().map(|t| resolve(t, here));
            *cwd = target.filter(|t| t.starts_with('/'));
            return out;
        }
        p if operand_writer(p).is_some() => {
            let kind = operand_writer(p).unwrap_or(Kind::Modify);
            for operand in operands(args) {
                add(&mut out, here, operand, p, kind);
            }
            if p == "tee" {
                redirect_targets.extend(operands(args));
            }
        }
        "mv" => {
            for operand in operands(args) {
                add(&mut out, here, operand, "mv", Kind::Delete);
            }
            if let Some(target) = target_directory(args) {
                add(&mut out, here, target, "mv", Kind::Modify);
            }
        }
        "cp" | "install" | "rsync" | "scp" | "ln" => {
            let ops = operands(args);
            if let Some(target) = target_directory(args) {
                add(&mut out, here, target, prog, Kind::Modify);
            } else if ops.len() >= 2 {
                if let Some(last) = ops.last() {
                    add(&mut out, here, last, prog, Kind::Modify);
                }
            }
        }
        "sed" => {
            if let Some(files) = sed_in_place_files(args) {
                for file in files {
                    add(&mut out, here, file, "sed -i", Kind::Modify);
                }
            }
        }
        "perl" => {
            let (in_place, files, bodies) = perl_args(args);
            if in_place {
                for file in files {
                    add(&mut out, here, file, "perl -i", Kind::Modify);
                }
            }
            code.extend(bodies);
        }
        "dd" => {
            for arg in args {
                if let Some(path) = arg.strip_prefix("of=") {
                    add(&mut out, here, path, "dd", Kind::Modify);
                }
            }
        }
        "find" => {
            let paths: Vec<&str> = args
                .iter()
                .take_while(|a| !a.starts_with('-') && *a != "(" && *a != "!")
                .map(String::as_str)
                .collect();
            let exec = args
                .windows(2)
                .find(|w| {
                    matches!(w[0].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")
                        && is_writing_prog(basename(&w[1]))
                })
                .map(|w| basename(&w[1]).to_string());
            let op = if args.iter().any(|a| a == "-delete") {
                Some(("find -delete".to_string(), Kind::Delete))
            } else {
                exec.map(|p| {
                    let kind = operand_writer(&p).unwrap_or(if p == "mv" {
                        Kind::Delete
                    } else {
                        Kind::Modify
                    });
                    (format!("find -exec {p}"), kind)
                })
            };
            if let Some((op, kind)) = op {
                for path in paths {
                    add(&mut out, here, path, &op, kind);
                }
            }
        }
        "git" => {
            let mut rest = args;
            while let Some((first, tail)) = rest.split_first() {
                if matches!(first.as_str(), "-C" | "-c") {
                    rest = tail.get(1..).unwrap_or_default();
                } else if first.starts_with('-') {
                    rest = tail;
                } else {
                    break;
                }
            }
            if let Some((sub, tail)) = rest.split_first() {
                let kind = match sub.as_str() {
                    "rm" | "clean" | "mv" => Some(Kind::Delete),
                    "checkout" | "restore" => Some(Kind::Modify),
                    _ => None,
                };
                if let Some(kind) = kind {
                    for operand in operands(tail) {
                        add(&mut out, here, operand, &format!("git {sub}"), kind);
                    }
                }
            }
        }
        "curl" | "wget" => {
            let flags: &[&str] = if prog == "curl" {
                &["-o", "--output"]
            } else {
                &["-O", "--output-document"]
            };
            let mut iter = args.iter();
            while let Some(arg) = iter.next() {
                if flags.contains(&arg.as_str()) {
                    if let Some(path) = iter.next() {
                        add(&mut out, here, path, prog, Kind::Modify);
                    }
                } else if let Some(path) = arg
                    .strip_prefix(flags[0])
                    .filter(|p| !p.is_empty() && !arg.starts_with("--"))
                {
                    add(&mut out, here, path, prog, Kind::Modify);
                }
            }
        }
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "ash" | "su" => {
            let c_flag = args
                .iter()
                .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
            match c_flag {
                Some(i) => {
                    if let Some(script) = args[i + 1..].iter().find(|a| !a.starts_with('-')) {
                        scripts.push(script.clone());
                    }
                }
                None if operands(args).is_empty() || prog == "su" => {
                    scripts.extend(command.heredocs.iter().cloned());
                    scripts.extend(stdin.clone());
                }
                None => {}
            }
        }
        "eval" => scripts.push(args.join(" ")),
        p => {
            if let Some(bodies) = inline_code(p, args) {
                code.extend(bodies);
                if code.is_empty() || args.iter().any(|a| a == "-") {
                    code.extend(command.heredocs.iter().cloned());
                    code.extend(stdin.clone());
                }
            }
        }
    }
    // Here-documents written to a script file (`cat > run.sh <<EOF`).
    for target in &redirect_targets {
        for body in &command.heredocs {
            for w in writes_in_staged(target, body, depth) {
                add(&mut out, here, &w.path, &w.op, w.kind);
            }
        }
    }
    for script in scripts {
        out.extend(writes_in_script(&script, depth + 1));
    }
    for body in code {
        out.extend(writes_in_code(&body, depth + 1, &Shell));
    }
    out
}

/// The `-t DIR` / `--target-directory=DIR` of `cp`, `mv`, `install`, `ln`.
fn target_directory(args: &[String]) -> Option<&str> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg == "-t" || arg == "--target-directory" {
            return iter.next().map(String::as_str);
        }
        if let Some(dir) = arg.strip_prefix("--target-directory=") {
            return Some(dir);
        }
    }
    None
}

/// The files `sed` edits in place, or `None` when it does not edit in place.
fn sed_in_place_files(args: &[String]) -> Option<Vec<&str>> {
    let mut in_place = false;
    let mut script_given = false;
    let mut files = Vec::new();
    let mut options_done = false;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if options_done || !arg.starts_with('-') || arg == "-" {
            files.push(arg.as_str());
        } else if arg == "--" {
            options_done = true;
        } else if let Some(long) = arg.strip_prefix("--") {
            if long.starts_with("in-place") {
                in_place = true;
            } else if long == "expression" || long == "file" {
                iter.next();
                script_given = true;
            } else if long.starts_with("expression=") || long.starts_with("file=") {
                script_given = true;
            }
        } else {
            let flags: Vec<char> = arg.chars().skip(1).collect();
            for (k, flag) in flags.iter().enumerate() {
                match flag {
                    'i' => {
                        in_place = true;
                        break;
                    }
                    'e' | 'f' => {
                        script_given = true;
                        if k + 1 == flags.len() {
                            iter.next();
                        }
                        break;
                    }
                    _ => {}
                }
            }
        }
    }
    if !in_place {
        return None;
    }
    if !script_given && !files.is_empty() {
        files.remove(0);
    }
    Some(files)
}

/// `perl`'s in-place flag, the files it edits and its `-e` programs.
fn perl_args(args: &[String]) -> (bool, Vec<&str>, Vec<String>) {
    let mut in_place = false;
    let mut files = Vec::new();
    let mut bodies = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if !arg.starts_with('-') || arg == "-" {
            files.push(arg.as_str());
            continue;
        }
        let flags: Vec<char> = arg.chars().skip(1).collect();
        for (k, flag) in flags.iter().enumerate() {
            match flag {
                'i' => {
                    in_place = true;
                    break;
                }
                'e' | 'E' => {
                    let rest: String = flags[k + 1..].iter().collect();
                    if rest.is_empty() {
                        if let Some(body) = iter.next() {
                            bodies.push(body.clone());
                        }
                    } else {
                        bodies.push(rest);
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    if bodies.is_empty() && !files.is_empty() {
        files.remove(0);
    }
    (in_place, files, bodies)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(script: &str) -> Vec<(String, String)> {
        writes_in_script(script, 0)
            .into_iter()
            .map(|w| (w.path, w.op))
            .collect()
    }

    fn p(path: &str, op: &str) -> (String, String) {
        (path.to_string(), op.to_string())
    }

    #[test]
    fn redirects_and_file_commands() {
        assert_eq!(
            paths("echo 1 > /logs/verifier/reward.txt"),
            vec![p("/logs/verifier/reward.txt", "redirect")]
        );
        assert_eq!(
            paths("echo 1 | sudo tee -a /logs/verifier/reward.json >/dev/null"),
            vec![p("/logs/verifier/reward.json", "tee")]
        );
        assert_eq!(paths("rm -rf /tests"), vec![p("/tests", "rm")]);
        assert_eq!(
            paths("cp /tests/test.sh /tmp/ && cat /tests/test.sh"),
            vec![p("/tmp", "cp")]
        );
        assert_eq!(
            paths("mv /tests/a.py /tmp/a.py"),
            vec![p("/tests/a.py", "mv"), p("/tmp/a.py", "mv")]
        );
        assert_eq!(
            paths("chmod +x /tests/test.sh"),
            vec![p("+x", "chmod"), p("/tests/test.sh", "chmod")]
        );
        assert_eq!(
            paths("sed -i 's#/tests/x#y#' /tests/test_outputs.py"),
            vec![p("/tests/test_outputs.py", "sed -i")]
        );
        assert_eq!(paths("sed 's/a/b/' /tests/test_outputs.py"), vec![]);
        assert_eq!(
            paths("sed -n -e 's/a/b/' -i f1 f2"),
            vec![p("f1", "sed -i"), p("f2", "sed -i")]
        );
        assert_eq!(
            paths("cd /tests && touch ../tests/x && rm test_outputs.py"),
            vec![p("/tests/x", "touch"), p("/tests/test_outputs.py", "rm")]
        );
        assert_eq!(
            paths("dd if=/dev/zero of=/logs/verifier/reward.txt"),
            vec![p("/logs/verifier/reward.txt", "dd")]
        );
        assert_eq!(
            paths("find /tests -name '*.py' -delete"),
            vec![p("/tests", "find -delete")]
        );
        assert_eq!(
            paths("find /tests -name '*.py' -exec rm {} +"),
            vec![p("/tests", "find -exec rm")]
        );
        assert_eq!(
            paths("find /tests -name '*.py' | xargs -0 rm -f"),
            vec![p("/tests", "xargs rm"), p("*.py", "xargs rm")]
        );
        assert_eq!(
            paths("git checkout -- tests/test_a.py"),
            vec![p("tests/test_a.py", "git checkout")]
        );
        assert_eq!(
            paths("timeout 10 env A=1 nohup truncate -s 0 /tests/x"),
            vec![p("0", "truncate"), p("/tests/x", "truncate")]
        );
        assert_eq!(
            paths("curl -o /tests/x http://h/x; wget -O/tests/y u"),
            vec![p("/tests/x", "curl"), p("/tests/y", "wget")]
        );
        assert_eq!(
            paths("ls /tests 2>&1 > /dev/null; cat /tests/test.sh | head"),
            vec![]
        );
    }

    #[test]
    fn inline_scripts_are_followed() {
        assert_eq!(
            paths("bash -lc 'echo 1 > /logs/verifier/reward.txt'"),
            vec![p("/logs/verifier/reward.txt", "redirect")]
        );
        assert_eq!(paths("echo $(rm -rf /tests)"), vec![p("/tests", "rm")]);
        assert_eq!(
            paths("python3 -c \"open('/logs/verifier/reward.txt', 'w').write('1')\""),
            vec![p("/logs/verifier/reward.txt", "open()")]
        );
        assert_eq!(
            paths("python3 - <<'EOF'\nimport shutil\nshutil.rmtree('/tests')\nEOF"),
            vec![p("/tests", "shutil.rmtree()")]
        );
        assert_eq!(
            paths("cat <<EOF | python3\nopen('/tests/test_outputs.py','w')\nEOF"),
            vec![p("/tests/test_outputs.py", "open()")]
        );
        assert_eq!(
            paths(
                "cat > /tmp/h.sh <<'EOF'\necho 1 > /logs/verifier/reward.txt\nEOF\nbash /tmp/h.sh"
            ),
            vec![
                p("/tmp/h.sh", "redirect"),
                p(
                    "/logs/verifier/reward.txt",
                    "redirect (in staged script /tmp/h.sh)"
                )
            ]
        );
        assert_eq!(
            paths("python3 /tests/run.py; python3 -c 'print(open(\"/tests/a\").read())'"),
            vec![]
        );
        assert_eq!(
            paths("perl -pi -e 's/a/b/' /tests/test_outputs.py"),
            vec![p("/tests/test_outputs.py", "perl -i")]
        );
    }

    #[test]
    fn argv_and_depth() {
        let argv: Vec<String> = ["bash", "-c", "rm -rf /tests"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            writes_in_argv(&argv, 0),
            vec![Write::new("/tests", "rm", Kind::Delete)]
        );
        let deep = "bash -c ".repeat(20) + "'rm -rf /tests'";
        let _ = writes_in_script(&deep, 0);
    }
}

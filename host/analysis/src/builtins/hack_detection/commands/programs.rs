//! What one simple command writes: its output redirections, then a table of handlers by
//! program (file commands, `find`, `git`, downloaders, shells, interpreters), then the
//! scripts and code it runs inline.

use super::super::code::writes_in_code;
use super::super::paths::resolve;
use super::super::shell::Simple;
use super::super::write::{Kind, Write};
use super::flags::{inline_code, perl_args, sed_in_place_files, target_directory};
use super::words::{
    basename, is_device, is_writing_prog, operand_writer, operands, strip_prefixes,
};
use super::{writes_in_script, writes_in_staged, Shell};

/// What one simple command does, as its handlers find it: the writes so far, the files its
/// output goes to, and the scripts and code it runs.
struct Effects<'a> {
    /// The directory relative paths are resolved against (`None`: unknown).
    here: Option<&'a str>,
    /// The writes found.
    out: Vec<Write>,
    /// The files the command's output goes to (redirections, `tee`).
    redirect_targets: Vec<&'a str>,
    /// Shell scripts it runs.
    scripts: Vec<String>,
    /// Inline code (Python, Node, ...) it runs.
    code: Vec<String>,
}

impl<'a> Effects<'a> {
    /// Records a write of `path` (resolved against the current directory).
    fn add(&mut self, path: &str, op: &str, kind: Kind) {
        self.out
            .push(Write::new(&resolve(path, self.here), op, kind));
    }

    /// The command's output redirections to files.
    fn redirects(&mut self, command: &'a Simple) {
        for (op, target) in &command.redirects {
            if matches!(op.as_str(), ">" | ">>" | ">|" | "&>" | "&>>" | "<>") && !is_device(target)
            {
                self.add(target, "redirect", Kind::Modify);
                self.redirect_targets.push(target.as_str());
            }
        }
    }

    /// Adds what the scripts it runs write: here-documents written to a script file (`cat >
    /// run.sh <<EOF`), then its inline scripts and code.
    fn finish(mut self, command: &Simple, depth: usize) -> Vec<Write> {
        for target in std::mem::take(&mut self.redirect_targets) {
            for body in &command.heredocs {
                for w in writes_in_staged(target, body, depth) {
                    self.add(&w.path, &w.op, w.kind);
                }
            }
        }
        for script in std::mem::take(&mut self.scripts) {
            self.out.extend(writes_in_script(&script, depth + 1));
        }
        for body in std::mem::take(&mut self.code) {
            self.out.extend(writes_in_code(&body, depth + 1, &Shell));
        }
        self.out
    }
}

/// What one simple command writes. `pipeline` holds the words of the commands before it in
/// its pipeline, `stdin` what they feed it; `cwd` follows `cd`.
pub(super) fn writes_in_command(
    command: &Simple,
    pipeline: &[String],
    stdin: Option<String>,
    cwd: &mut Option<String>,
    depth: usize,
) -> Vec<Write> {
    let here = cwd.clone();
    let mut fx = Effects {
        here: here.as_deref(),
        out: Vec::new(),
        redirect_targets: Vec::new(),
        scripts: Vec::new(),
        code: Vec::new(),
    };
    fx.redirects(command);
    let (words, xargs) = strip_prefixes(&command.words);
    let Some((prog_word, args)) = words.split_first() else {
        return fx.out;
    };
    let prog = basename(prog_word);
    if xargs && is_writing_prog(prog) {
        let kind = operand_writer(prog).unwrap_or(Kind::Modify);
        for word in pipeline {
            fx.add(word, &format!("xargs {prog}"), kind);
        }
    }
    if matches!(prog, "cd" | "pushd") {
        let target = operands(args).first().map(|t| resolve(t, fx.here));
        *cwd = target.filter(|t| t.starts_with('/'));
        return fx.out;
    }
    program(&mut fx, prog, args, command, stdin);
    fx.finish(command, depth)
}

/// Dispatches to the handler of `prog`.
fn program<'a>(
    fx: &mut Effects<'a>,
    prog: &str,
    args: &'a [String],
    command: &Simple,
    stdin: Option<String>,
) {
    match prog {
        p if operand_writer(p).is_some() => operand_writes(fx, p, args),
        "mv" => mv(fx, args),
        "cp" | "install" | "rsync" | "scp" | "ln" => copy(fx, prog, args),
        "sed" => {
            for file in sed_in_place_files(args).unwrap_or_default() {
                fx.add(file, "sed -i", Kind::Modify);
            }
        }
        "perl" => perl(fx, args),
        "dd" => {
            for path in args.iter().filter_map(|a| a.strip_prefix("of=")) {
                fx.add(path, "dd", Kind::Modify);
            }
        }
        "find" => find(fx, args),
        "git" => git(fx, args),
        "curl" | "wget" => download(fx, prog, args),
        "bash" | "sh" | "zsh" | "dash" | "ksh" | "ash" | "su" => {
            shell(fx, prog, args, command, stdin);
        }
        "eval" => fx.scripts.push(args.join(" ")),
        p => interpreter(fx, p, args, command, stdin),
    }
}

/// `rm`, `chmod`, `touch`, `tee`, ...: every operand (`tee`'s also receive its output).
fn operand_writes<'a>(fx: &mut Effects<'a>, prog: &str, args: &'a [String]) {
    let kind = operand_writer(prog).unwrap_or(Kind::Modify);
    for operand in operands(args) {
        fx.add(operand, prog, kind);
    }
    if prog == "tee" {
        fx.redirect_targets.extend(operands(args));
    }
}

/// `mv`: its operands leave their place; a target directory is written.
fn mv(fx: &mut Effects<'_>, args: &[String]) {
    for operand in operands(args) {
        fx.add(operand, "mv", Kind::Delete);
    }
    if let Some(target) = target_directory(args) {
        fx.add(target, "mv", Kind::Modify);
    }
}

/// `cp`, `install`, `rsync`, `scp`, `ln`: the target directory, else the last of two or
/// more operands.
fn copy(fx: &mut Effects<'_>, prog: &str, args: &[String]) {
    let ops = operands(args);
    if let Some(target) = target_directory(args) {
        fx.add(target, prog, Kind::Modify);
    } else if ops.len() >= 2 {
        if let Some(last) = ops.last() {
            fx.add(last, prog, Kind::Modify);
        }
    }
}

/// `perl`: the files `-i` edits; its `-e` programs are run as code.
fn perl(fx: &mut Effects<'_>, args: &[String]) {
    let (in_place, files, bodies) = perl_args(args);
    if in_place {
        for file in files {
            fx.add(file, "perl -i", Kind::Modify);
        }
    }
    fx.code.extend(bodies);
}

/// `find`: its start paths, when it deletes (`-delete`) or runs a writing program
/// (`-exec rm`).
fn find(fx: &mut Effects<'_>, args: &[String]) {
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
            fx.add(path, &op, kind);
        }
    }
}

/// `git rm`/`clean`/`mv` (deletions) and `git checkout`/`restore` (modifications): their
/// operands.
fn git(fx: &mut Effects<'_>, args: &[String]) {
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
    let Some((sub, tail)) = rest.split_first() else {
        return;
    };
    let kind = match sub.as_str() {
        "rm" | "clean" | "mv" => Kind::Delete,
        "checkout" | "restore" => Kind::Modify,
        _ => return,
    };
    for operand in operands(tail) {
        fx.add(operand, &format!("git {sub}"), kind);
    }
}

/// `curl -o FILE` / `wget -O FILE` (also `-oFILE`): the output file.
fn download(fx: &mut Effects<'_>, prog: &str, args: &[String]) {
    let flags: &[&str] = if prog == "curl" {
        &["-o", "--output"]
    } else {
        &["-O", "--output-document"]
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if flags.contains(&arg.as_str()) {
            if let Some(path) = iter.next() {
                fx.add(path, prog, Kind::Modify);
            }
        } else if let Some(path) = arg
            .strip_prefix(flags[0])
            .filter(|p| !p.is_empty() && !arg.starts_with("--"))
        {
            fx.add(path, prog, Kind::Modify);
        }
    }
}

/// A shell (`bash -c SCRIPT`, or reading its script from a here-document or the pipeline).
fn shell(
    fx: &mut Effects<'_>,
    prog: &str,
    args: &[String],
    command: &Simple,
    stdin: Option<String>,
) {
    let c_flag = args
        .iter()
        .position(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'));
    match c_flag {
        Some(i) => {
            if let Some(script) = args[i + 1..].iter().find(|a| !a.starts_with('-')) {
                fx.scripts.push(script.clone());
            }
        }
        None if operands(args).is_empty() || prog == "su" => {
            fx.scripts.extend(command.heredocs.iter().cloned());
            fx.scripts.extend(stdin);
        }
        None => {}
    }
}

/// An interpreter running inline code (`python3 -c CODE`, or reading it from a
/// here-document or the pipeline); other programs write nothing.
fn interpreter(
    fx: &mut Effects<'_>,
    prog: &str,
    args: &[String],
    command: &Simple,
    stdin: Option<String>,
) {
    if let Some(bodies) = inline_code(prog, args) {
        fx.code.extend(bodies);
        if fx.code.is_empty() || args.iter().any(|a| a == "-") {
            fx.code.extend(command.heredocs.iter().cloned());
            fx.code.extend(stdin);
        }
    }
}

//! What particular programs' options say: the target directory of `cp`/`mv`, the files
//! `sed -i` and `perl -i` edit, the inline code an interpreter runs.

/// The inline code an interpreter invocation runs (`-c`/`-e` arguments, or stdin when it
/// reads its program from there); `None` when it runs a script file.
pub(super) fn inline_code(prog: &str, args: &[String]) -> Option<Vec<String>> {
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

/// The `-t DIR` / `--target-directory=DIR` of `cp`, `mv`, `install`, `ln`.
pub(super) fn target_directory(args: &[String]) -> Option<&str> {
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
pub(super) fn sed_in_place_files(args: &[String]) -> Option<Vec<&str>> {
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
pub(super) fn perl_args(args: &[String]) -> (bool, Vec<&str>, Vec<String>) {
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

//! `scripted-llm`: a scripted OpenAI/Anthropic-compatible model endpoint on 127.0.0.1.
//!
//! ```text
//! scripted-llm --script FILE [--port N] [--port-file PATH] [--log FILE]
//! ```
//!
//! Binds 127.0.0.1:N (0, the default, picks a free port), writes the port to `--port-file`
//! atomically, prints `listening on 127.0.0.1:PORT` and serves until SIGTERM or SIGINT.
//! The script format and the endpoints are described in the `scripted` module. Unless the
//! script says `"after_last": "repeat"`, a request past a rule's last reply is answered 410
//! (`script exhausted after N replies (rule I); restart scripted-llm to replay it`) with the
//! same line on stderr: a second run against the same server gets that, not the last reply
//! again (which an agent reads as a normal answer and scores 0 on).

use agentcompass_test_servers::scripted;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str =
    "usage: scripted-llm --script FILE [--port N (0 = ephemeral)] [--port-file PATH] [--log FILE]";

struct Args {
    script: PathBuf,
    port: u16,
    port_file: Option<PathBuf>,
    log: Option<PathBuf>,
}

enum ArgsError {
    Help,
    Bad(String),
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, ArgsError> {
    let mut script = None;
    let mut port = 0u16;
    let mut port_file = None;
    let mut log = None;
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Err(ArgsError::Help);
        }
        if !matches!(
            flag.as_str(),
            "--script" | "--port" | "--port-file" | "--log"
        ) {
            return Err(ArgsError::Bad(format!("unknown argument `{arg}`")));
        }
        let Some(value) = inline.or_else(|| args.next()) else {
            return Err(ArgsError::Bad(format!("`{flag}` needs a value")));
        };
        match flag.as_str() {
            "--script" => script = Some(PathBuf::from(value)),
            "--port" => {
                port = value.parse().map_err(|_| {
                    ArgsError::Bad(format!("--port: `{value}` is not a port number"))
                })?
            }
            "--port-file" => port_file = Some(PathBuf::from(value)),
            _ => log = Some(PathBuf::from(value)),
        }
    }
    let Some(script) = script else {
        return Err(ArgsError::Bad("--script is required".to_string()));
    };
    Ok(Args {
        script,
        port,
        port_file,
        log,
    })
}

/// The command's defaults on a loaded script: a used-up rule is an error (`"after_last"`
/// unset means `"error"` here), so a replayed script never answers as if nothing happened.
fn command_line_defaults(mut script: scripted::Script) -> scripted::Script {
    script.after_last.get_or_insert(scripted::AfterLast::Error);
    script
}

/// Writes `port` to `path` via a temp file in the same directory and a rename.
fn write_port_file(path: &Path, port: u16) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "port".to_string());
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, port.to_string())?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// A future completing on SIGTERM or SIGINT. The handlers are installed now (inside the
/// runtime), not when the future is first polled.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    );
    async move {
        match handlers {
            (Ok(mut term), Ok(mut int)) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!(
                    "scripted-llm: cannot install signal handlers ({e}); serving until killed"
                );
                std::future::pending::<()>().await;
            }
        }
    }
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(ArgsError::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(ArgsError::Bad(message)) => {
            eprintln!("scripted-llm: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let script = match scripted::Script::load(&args.script) {
        Ok(script) => command_line_defaults(script),
        Err(message) => {
            eprintln!("scripted-llm: {message}");
            return ExitCode::from(2);
        }
    };
    if let Some(log) = &args.log {
        if let Err(e) = scripted::open_log(log) {
            eprintln!("scripted-llm: {}: cannot open the log: {e}", log.display());
            return ExitCode::from(2);
        }
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("scripted-llm: tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::bind(("127.0.0.1", args.port)).await {
            Ok(listener) => listener,
            Err(e) => {
                eprintln!("scripted-llm: cannot bind 127.0.0.1:{}: {e}", args.port);
                return ExitCode::FAILURE;
            }
        };
        let port = match listener.local_addr() {
            Ok(addr) => addr.port(),
            Err(e) => {
                eprintln!("scripted-llm: local address: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Some(path) = &args.port_file {
            if let Err(e) = write_port_file(path, port) {
                eprintln!(
                    "scripted-llm: {}: cannot write the port file: {e}",
                    path.display()
                );
                return ExitCode::FAILURE;
            }
        }
        // Install the handlers before announcing readiness, so an early SIGTERM is not lost.
        let shutdown = shutdown_signal();
        let mut stdout = std::io::stdout();
        let _ = writeln!(stdout, "listening on 127.0.0.1:{port}");
        let _ = stdout.flush();
        match scripted::serve_until(listener, script, args.log, shutdown).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("scripted-llm: request log: {e}");
                ExitCode::FAILURE
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, ArgsError> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn arguments() {
        let args = parse(&[
            "--script",
            "s.json",
            "--port=8080",
            "--port-file",
            "p",
            "--log",
            "l",
        ])
        .unwrap_or_else(|_| panic!("valid arguments"));
        assert_eq!(args.script, PathBuf::from("s.json"));
        assert_eq!(args.port, 8080);
        assert_eq!(args.port_file, Some(PathBuf::from("p")));
        assert_eq!(args.log, Some(PathBuf::from("l")));
        assert!(matches!(parse(&["--help"]), Err(ArgsError::Help)));
        for bad in [
            &["--port", "1"][..],
            &["--script"][..],
            &["--script", "s", "--port", "70000"][..],
            &["--script", "s", "--verbose"][..],
        ] {
            assert!(matches!(parse(bad), Err(ArgsError::Bad(_))), "{bad:?}");
        }
    }

    #[test]
    fn a_used_up_rule_is_an_error_unless_the_script_repeats_it() {
        let parse =
            |text: &str| command_line_defaults(scripted::Script::parse(text).expect("script"));
        let rules = r#""rules": [{"responses": [{"text": "a"}]}]"#;
        assert_eq!(
            parse(&format!("{{{rules}}}")).after_last,
            Some(scripted::AfterLast::Error)
        );
        assert_eq!(
            parse(&format!(r#"{{"after_last": "repeat", {rules}}}"#)).after_last,
            Some(scripted::AfterLast::Repeat)
        );
    }

    #[test]
    fn port_file_is_replaced_atomically() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("port");
        std::fs::write(&path, "stale").expect("write");
        write_port_file(&path, 4242).expect("port file");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "4242");
        let names: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
        assert_eq!(names.len(), 1, "no temp file left behind");
    }
}

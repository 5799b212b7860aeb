//! The live progress bar on a real pseudo-terminal (issue 36 §2): fitted to the terminal's
//! width as it is at each frame (a resize is followed), never a `0/0` first frame, elapsed
//! time, rate, ETA, the headline so far and the counts, and log lines printed above the bar,
//! never onto it. The plain mode's lines carry the same figures at the interval asked for.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use agentcompass_e2e::scripted::ScriptedServer;
use agentcompass_e2e::QaSetup;
use serde_json::json;

/// Twelve questions whose answer is `4`.
fn twelve_questions() -> String {
    (1..=12)
        .map(|i| {
            format!("{{\"id\": \"q{i:02}\", \"question\": \"Q{i}: 2+2?\", \"answer\": \"4\"}}\n")
        })
        .collect()
}

/// A server whose every other answer is a 500 (so some tasks retry and warn), the others `4`
/// after 400 ms.
fn slow_server() -> ScriptedServer {
    ScriptedServer::start(
        &json!({"rules": [{"match": {}, "cycle": true, "responses": [
            {"status": 500}, {"text": "4", "delay_ms": 400}
        ]}]}),
        None,
    )
    .expect("server")
}

/// What the terminal shows: each line as it ends, after its carriage returns and line clears.
fn screen_lines(transcript: &str) -> Vec<String> {
    transcript
        .split('\n')
        .map(|line| {
            // The terminal ends lines with CR LF.
            let line = line.strip_suffix('\r').unwrap_or(line);
            let last = line.rsplit('\r').next().unwrap_or("");
            last.replace("\x1b[K", "")
        })
        .collect()
}

/// Every bar frame drawn (the text after each `\r` and line clear, up to the next control).
fn frames(transcript: &str) -> Vec<String> {
    transcript
        .split('\r')
        .map(|part| {
            let part = part.trim_start_matches("\x1b[K");
            let end = part.find(['\x1b', '\n']).unwrap_or(part.len());
            part[..end].to_string()
        })
        .filter(|frame| frame.contains('%') && !frame.starts_with("warning"))
        .collect()
}

/// Runs `args` with standard error on a new pseudo-terminal of `cols` columns; once a frame
/// with a rate was drawn, the terminal becomes `resize_to` columns wide. Returns stdout and
/// everything the terminal received.
fn run_on_a_terminal(
    setup: &QaSetup,
    args: &[&str],
    cols: u16,
    resize_to: u16,
) -> (i32, String, String) {
    let size = nix::pty::Winsize {
        ws_row: 24,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
    let slave_path = nix::unistd::ttyname(&pty.slave).expect("ttyname");
    let mut command: Command = setup.ws.command();
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(pty.slave));
    let child = command.spawn().expect("spawn agentcompass-host");
    drop(command);
    let mut master = std::fs::File::from(pty.master);
    let (rate_seen, rate_drawn) = std::sync::mpsc::channel::<()>();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let mut buf = [0u8; 4096];
        let mut told = false;
        // EIO once the last holder of the slave side exits.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
            if !told && String::from_utf8_lossy(&bytes).contains("/s · ETA") {
                told = rate_seen.send(()).is_ok();
            }
        }
        bytes
    });
    // Resized mid-run: after the first frame with a rate, long before the last task.
    rate_drawn
        .recv_timeout(Duration::from_secs(120))
        .expect("a frame with a rate");
    let stty = Command::new("stty")
        .arg("-F")
        .arg(&slave_path)
        .args(["cols", &resize_to.to_string()])
        .status()
        .expect("stty");
    assert!(stty.success());
    let out = child.wait_with_output().expect("wait");
    let transcript = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        transcript,
    )
}

/// `run qa openai_chat` over the setup's questions against `base_url`, two tasks at a time,
/// no backoff, with `--progress MODE` and `extra`.
fn qa_args<'a>(
    setup: &'a QaSetup,
    params: &'a str,
    base_url: &'a str,
    mode: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = setup.args(params);
    args.extend([
        "--model-base-url",
        base_url,
        "--model-params",
        r#"{"retry_backoff_seconds": 0}"#,
        "--task-concurrency",
        "2",
        "--progress",
        mode,
    ]);
    args.extend_from_slice(extra);
    args
}

#[test]
fn the_bar_fits_the_terminal_follows_a_resize_and_keeps_log_lines_above_it() {
    let setup = QaSetup::new(&twelve_questions());
    let server = slow_server();
    let params = setup.params();
    let base_url = server.base_url();
    let args = qa_args(&setup, &params, &base_url, "auto", &[]);
    let (code, stdout, transcript) = run_on_a_terminal(&setup, &args, 80, 60);
    assert_eq!(code, 0, "{transcript}");
    assert!(
        stdout.trim_end().ends_with(char::is_alphanumeric),
        "{stdout}"
    );
    let frames = frames(&transcript);
    assert!(frames.len() >= 5, "{transcript:?}");
    // Never a 0/0 frame.
    assert!(frames.iter().all(|f| !f.contains(" 0/0 ")), "{frames:#?}");
    // Every frame fits the terminal as it was: 79 columns, then 59 after the resize.
    assert!(
        frames.iter().all(|f| f.chars().count() <= 79),
        "{frames:#?}"
    );
    let narrow = frames.iter().filter(|f| f.chars().count() <= 59).count();
    let wide = frames.iter().filter(|f| f.chars().count() > 59).count();
    assert!(wide > 0 && narrow > 0, "{frames:#?}");
    let last_wide = frames
        .iter()
        .rposition(|f| f.chars().count() > 59)
        .unwrap_or(0);
    let first_narrow = frames
        .iter()
        .position(|f| f.chars().count() <= 59)
        .unwrap_or(0);
    assert!(
        last_wide < frames.len() - 1,
        "the resize was not followed: {frames:#?}"
    );
    assert!(first_narrow > 0, "{frames:#?}");
    // The figures: elapsed, rate and ETA, the score so far, the counts.
    let rich = frames
        .iter()
        .find(|f| f.contains("/s · ETA") && f.contains("correct ") && f.contains("running "))
        .unwrap_or_else(|| panic!("no frame with rate, ETA and score: {frames:#?}"));
    assert!(rich.contains("running "), "{rich}");
    assert!(rich.contains(" [#") || rich.starts_with("[#"), "{rich}");
    // The retry warning is a whole line above the bar, never on it.
    let screen = screen_lines(&transcript);
    let warning = screen
        .iter()
        .find(|line| line.contains("retry 1 of"))
        .unwrap_or_else(|| panic!("no retry warning: {screen:#?}"));
    assert!(warning.starts_with("warning: model endpoint "), "{warning}");
    assert!(
        !warning.contains("[#") && !warning.contains("ETA"),
        "{warning}"
    );
    // The final frame stays, with the run's status, and then the summary lines.
    assert!(
        screen
            .iter()
            .any(|line| line.contains("12/12 100%") && line.ends_with("| completed")),
        "{screen:#?}"
    );
    assert!(
        screen
            .iter()
            .any(|line| line.contains("more like this one, not printed")),
        "{screen:#?}"
    );
    eprintln!("one frame at 80 columns: {rich}");
}

#[test]
fn plain_lines_carry_the_same_figures_at_the_interval_asked_for() {
    let setup = QaSetup::new(&twelve_questions());
    let server = slow_server();
    let params = setup.params();
    let base_url = server.base_url();
    let plain = |interval: &str| {
        let extra = ["--progress-interval-seconds", interval];
        setup
            .ws
            .run(&qa_args(&setup, &params, &base_url, "plain", &extra), &[])
    };
    let out = plain("0.3");
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<&str> = out
        .stderr
        .lines()
        .filter(|l| l.starts_with("Progress | "))
        .collect();
    assert!(lines.len() >= 4, "{}", out.stderr);
    assert!(lines.iter().all(|l| !l.contains(" 0/0 ")), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("/s · ETA ") && l.contains("| correct ")),
        "{lines:#?}"
    );
    eprintln!("--progress plain:\n{}", lines.join("\n"));
    // The interval is checked like every duration.
    let out = plain("0");
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "--progress-interval-seconds: runtime.progress_interval_seconds: expected seconds > 0"
        ),
        "{}",
        out.stderr
    );
}

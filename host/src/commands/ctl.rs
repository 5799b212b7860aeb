//! `ctl RUN_DIR ACTION`: steers a running run through the control socket its
//! `progress.json` names (status, concurrency, pause, resume, cancel). A run that is not
//! running, or that belongs to another user, is one line and exit 2.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail};
use serde_json::Value;

use agentcompass_host::runtime::control::protocol::{ControlAction, ControlAnswer, ControlRequest};

use crate::cli::{CtlAction, CtlCmd};

/// How long `ctl` waits for the run to answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// `ctl`: sends the action, prints what the run answered.
pub fn ctl(cmd: &CtlCmd) -> anyhow::Result<i32> {
    let run_dir = std::path::absolute(&cmd.run_dir).unwrap_or_else(|_| cmd.run_dir.clone());
    let action = match &cmd.action {
        CtlAction::Status { .. } => ControlAction::Status,
        CtlAction::Concurrency { n } => ControlAction::Concurrency { n: *n },
        CtlAction::Pause => ControlAction::Pause,
        CtlAction::Resume => ControlAction::Resume,
        CtlAction::Cancel { tasks } => ControlAction::Cancel {
            tasks: tasks.clone(),
        },
    };
    let request = ControlRequest {
        run_dir: run_dir.display().to_string(),
        action,
    };
    let answer = send(&run_dir, &request)?;
    if !answer.ok {
        bail!(
            "ctl: {}: {}",
            run_dir.display(),
            answer.error.unwrap_or_default()
        );
    }
    match &cmd.action {
        CtlAction::Status { json: true } => {
            crate::outln!("{}", serde_json::to_string_pretty(&answer.detail)?);
        }
        CtlAction::Status { json: false } => print_status(&answer.detail),
        CtlAction::Concurrency { n } => crate::outln!(
            "task concurrency {n} (was {}): running tasks go on; new ones start while fewer than {n} run",
            answer.detail["was"]
        ),
        CtlAction::Pause if answer.detail["changed"] == true => crate::outln!(
            "paused: no new task or model call starts (`ctl {} resume` resumes)",
            cmd.run_dir.display()
        ),
        CtlAction::Pause => crate::outln!("already paused"),
        CtlAction::Resume if answer.detail["changed"] == true => crate::outln!("resumed"),
        CtlAction::Resume => crate::outln!("not paused"),
        CtlAction::Cancel { .. } => {
            for task in strings(&answer.detail["cancelled"]) {
                crate::outln!("{task}: running, stopped (not scored)");
            }
            for task in strings(&answer.detail["skipped_when_reached"]) {
                crate::outln!("{task}: not running, skipped when reached (not scored)");
            }
        }
    }
    Ok(agentcompass_host::exit_code::SUCCESS)
}

/// The run's answer to `request`, through the socket its `progress.json` names.
fn send(run_dir: &Path, request: &ControlRequest) -> anyhow::Result<ControlAnswer> {
    let shown = run_dir.display();
    let progress = std::fs::read_to_string(run_dir.join("progress.json")).map_err(|e| {
        anyhow!("ctl: {shown}: not a run directory (cannot read progress.json: {e})")
    })?;
    let progress: Value = serde_json::from_str(&progress)
        .map_err(|e| anyhow!("ctl: {shown}/progress.json: not JSON ({e})"))?;
    let Some(socket) = progress["control"]["socket"].as_str() else {
        bail!(
            "ctl: {shown}: the run is not running (progress.json: status {})",
            progress["status"].as_str().unwrap_or("unknown")
        );
    };
    let mut stream = UnixStream::connect(socket).map_err(|e| match e.kind() {
        std::io::ErrorKind::PermissionDenied => anyhow!(
            "ctl: {shown}: permission denied: only the user who started the run can steer it"
        ),
        _ => anyhow!("ctl: {shown}: the run is not running (its control socket {socket} does not answer: {e})"),
    })?;
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    stream
        .write_all(&line)
        .map_err(|e| anyhow!("ctl: {shown}: cannot send to the run: {e}"))?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(|e| anyhow!("ctl: {shown}: no answer from the run: {e}"))?;
    serde_json::from_str(&answer)
        .map_err(|e| anyhow!("ctl: {shown}: the run answered something else than JSON ({e})"))
}

fn strings(value: &Value) -> impl Iterator<Item = &str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The human form of `status`.
fn print_status(status: &Value) {
    let counts = &status["counts"];
    let paused = if status["paused"] == true {
        " · paused"
    } else {
        ""
    };
    crate::outln!(
        "run {}: {}{paused}",
        status["run_id"].as_str().unwrap_or("?"),
        status["status"].as_str().unwrap_or("?")
    );
    crate::outln!(
        "tasks: {} total · {} finished ({} completed, {} failed, {} skipped) · {} running · {} pending",
        counts["total"],
        counts["finished"],
        counts["completed"],
        counts["failed"],
        counts["skipped"],
        counts["running"],
        counts["pending"]
    );
    crate::outln!(
        "task concurrency {} ({} attempts running)",
        status["task_concurrency"],
        status["attempts_running"]
    );
    if let Some(limit) = status["model_limit"].as_object() {
        crate::outln!(
            "model endpoint {}: limit {} of {} · {} in flight · {} waiting · {} rate-limit answers · {:.1} s waited",
            limit["endpoint"].as_str().unwrap_or("?"),
            limit["limit"],
            limit["max"],
            limit["in_flight"],
            limit["waiting"],
            limit["rate_limited"],
            limit["waited_seconds"].as_f64().unwrap_or(0.0)
        );
    }
    let running = status["running"].as_array().cloned().unwrap_or_default();
    if running.is_empty() {
        return;
    }
    crate::outln!(
        "{:<32} {:<28} {:>7} {:>9}",
        "TASK",
        "PHASE",
        "ATTEMPT",
        "AGE"
    );
    for task in &running {
        crate::outln!(
            "{:<32} {:<28} {:>7} {:>8.1}s",
            task["task_id"].as_str().unwrap_or("?"),
            task["phase"].as_str().unwrap_or("-"),
            task["attempt"]
                .as_u64()
                .map_or("-".to_string(), |a| a.to_string()),
            task["age_seconds"].as_f64().unwrap_or(0.0)
        );
    }
}

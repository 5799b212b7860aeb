//! The invocations many e2e files make: the example benchmark by the example harness, and
//! runs against a scripted model on loopback (the `qa` benchmark answered by `openai_chat`,
//! Harbor tasks run by `terminus` in the sandbox).

use std::path::{Path, PathBuf};

use crate::{files_containing, Outcome, Packs, Workspace};

/// `--plugin-dir PLUGINS run BENCHMARK HARNESS MODEL --benchmark-params PARAMS`, then `extra`:
/// a run of components from the packs in `plugins` (beside a [`Workspace`]'s example pack).
pub fn pack_run<'a>(
    plugins: &'a Path,
    [benchmark, harness, model]: [&'a str; 3],
    params: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "--plugin-dir",
        plugins.to_str().expect("UTF-8 path"),
        "run",
        benchmark,
        harness,
        model,
        "--benchmark-params",
        params,
    ];
    args.extend_from_slice(extra);
    args
}

/// `run example_exact_match example_calculator calc`, then `extra`: a run of the example
/// benchmark by the example harness (the example pack every [`Workspace`] has).
pub fn example_run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "example_exact_match", "example_calculator", "calc"];
    args.extend_from_slice(extra);
    args
}

/// `run example_self_check none m`, then `extra`: a run of the example pack's harness-free
/// benchmark (it checks itself; no harness, no model).
pub fn self_check_run<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "example_self_check", "none", "m"];
    args.extend_from_slice(extra);
    args
}

/// `plan example_exact_match example_calculator m --task TASK`, then `extra`: the plan view
/// of one task of the example benchmark by the example harness.
pub fn example_plan<'a>(task: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "plan",
        "example_exact_match",
        "example_calculator",
        "m",
        "--task",
        task,
    ];
    args.extend_from_slice(extra);
    args
}

/// Three `qa` questions as JSONL: `add` (2+2, answer 4), `mul` (6*7, answer 42) and `cap`
/// (the capital of France, answer Paris); scripted models match them on `2+2`, `6*7` and
/// `France`.
pub const THREE_QUESTIONS: &str = concat!(
    r#"{"id": "add", "question": "What is 2+2? Answer with only the number.", "answer": "4"}"#,
    "\n",
    r#"{"id": "mul", "question": "What is 6*7? Answer with only the number.", "answer": "42"}"#,
    "\n",
    r#"{"id": "cap", "question": "Capital of France? One word.", "answer": "Paris"}"#,
    "\n",
);

/// `n` QA questions `q0`, `q1`, ... (`Question I?`) whose answer is `ok`: what a scripted
/// endpoint answering `ok` to everything gets right.
pub fn ok_questions(n: usize) -> String {
    (0..n)
        .map(|i| {
            serde_json::json!({"id": format!("q{i}"), "question": format!("Question {i}?"), "answer": "ok"})
                .to_string()
                + "\n"
        })
        .collect()
}

/// The `qa` benchmark answered by the `openai_chat` harness (both real plugins) against a
/// scripted model: a workspace, the qa packs beside it and a dataset in it.
pub struct QaSetup {
    /// The workspace the runs run in.
    pub ws: Workspace,
    /// `qa-pack` and `agents-pack`, passed with `--plugin-dir`.
    pub plugins: Packs,
    /// The dataset, `data/qa.jsonl` in the workspace.
    pub dataset: PathBuf,
}

impl QaSetup {
    /// A new workspace with `lines` (JSONL questions) as its dataset.
    pub fn new(lines: &str) -> Self {
        let ws = Workspace::new();
        let plugins = Packs::qa();
        let dataset = ws.write("data/qa.jsonl", lines);
        QaSetup {
            ws,
            plugins,
            dataset,
        }
    }

    /// `--plugin-dir PLUGINS run qa openai_chat scripted-model --benchmark-params PARAMS`:
    /// how every run of the setup starts (`params` names the dataset, or a `${VAR}` that
    /// does). The caller adds the rest.
    pub fn args<'a>(&'a self, params: &'a str) -> Vec<&'a str> {
        pack_run(
            &self.plugins,
            ["qa", "openai_chat", "scripted-model"],
            params,
            &[],
        )
    }

    /// The dataset's `--benchmark-params` (its path).
    pub fn params(&self) -> String {
        serde_json::json!({"path": self.dataset}).to_string()
    }

    /// `run qa openai_chat scripted-model` over the dataset against the model at `base_url`,
    /// its API key `key` given as `${E2E_MODEL_KEY}`, with `--progress none`, then `extra`.
    pub fn run(&self, base_url: &str, key: &str, extra: &[&str]) -> Outcome {
        let params = self.params();
        let mut args = self.args(&params);
        args.extend([
            "--model-base-url",
            base_url,
            "--model-api-key",
            "${E2E_MODEL_KEY}",
            "--progress",
            "none",
        ]);
        args.extend_from_slice(extra);
        self.ws.run(&args, &[("E2E_MODEL_KEY", key)])
    }

    /// No file under the workspace's `results` and neither output stream of `out` holds
    /// `secret`.
    pub fn assert_secret_nowhere(&self, out: &Outcome, secret: &str) {
        assert_secret_nowhere(&self.ws.cwd.join("results"), out, secret);
    }
}

/// No file under `results` and neither output stream of `out` holds `secret`.
pub fn assert_secret_nowhere(results: &Path, out: &Outcome, secret: &str) {
    assert_eq!(files_containing(results, secret), Vec::<PathBuf>::new());
    assert!(!out.stderr.contains(secret) && !out.stdout.contains(secret));
}

/// `--plugin-dir PLUGINS run qa example_calculator calc --benchmark-params PARAMS
/// --harness-params HARNESS`: the `qa` questions of `params` answered by the example
/// calculator (no model), with its parameters `harness` (such as `wrong_every`). The caller
/// adds the rest.
pub fn qa_calculator_args<'a>(
    plugins: &'a Path,
    params: &'a str,
    harness: &'a str,
) -> Vec<&'a str> {
    pack_run(
        plugins,
        ["qa", "example_calculator", "calc"],
        params,
        &["--harness-params", harness],
    )
}

/// `--plugin-dir PLUGINS run harbor terminus scripted-model --benchmark-params PARAMS --env
/// sandbox --model-base-url BASE_URL --model-api-key API_KEY`: the Harbor tasks of `params`
/// run by `terminus` in the sandbox against the scripted model at `base_url` (`api_key` is
/// usually a `${VAR}` reference). The caller adds the rest.
pub fn terminus_args<'a>(
    plugins: &'a Path,
    params: &'a str,
    base_url: &'a str,
    api_key: &'a str,
) -> Vec<&'a str> {
    pack_run(
        plugins,
        ["harbor", "terminus", "scripted-model"],
        params,
        &[
            "--env",
            "sandbox",
            "--model-base-url",
            base_url,
            "--model-api-key",
            api_key,
        ],
    )
}

//! The planner through the real loader and the `plan` command: recipe registry order (built-ins
//! first, then external recipe plugins), the whitelist, and fail-closed policy validation.

use std::sync::Arc;

use agentcompass_e2e::{example_plan, PluginDirs, Workspace};
use agentcompass_host::planner::Planner;
use agentcompass_host::registry::{Builtin, BuiltinFactory, Registry};
use agentcompass_loader::{load_dirs, DirRole, LoadOptions, PluginDir};
use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, EnvironmentSpec, ExecutionPlan, RunRequest, TaskSpec,
};
use agentcompass_plugin_api::sdk::Recipe;

/// A built-in recipe that sets the run timeout only when nothing set it yet.
struct BuiltinTimeout;

impl Recipe for BuiltinTimeout {
    fn matches(
        &self,
        _: &RunRequest,
        _: &TaskSpec,
        _: &ExecutionPlan,
    ) -> agentcompass_plugin_api::Result<bool> {
        Ok(true)
    }
    fn apply(
        &self,
        mut plan: ExecutionPlan,
        _: &RunRequest,
        _: &TaskSpec,
    ) -> agentcompass_plugin_api::Result<ExecutionPlan> {
        plan.run_timeout_seconds.get_or_insert(5.0);
        Ok(plan)
    }
}

fn builtin_timeout() -> agentcompass_plugin_api::Result<Arc<dyn Recipe>> {
    Ok(Arc::new(BuiltinTimeout))
}

fn registry_with_builtin_recipe(dirs: &PluginDirs) -> Registry {
    let mut builtins = agentcompass_builtins::all();
    builtins.push(Builtin {
        info: ComponentInfo::new(ComponentKind::Recipe, "builtin_timeout", "test built-in"),
        factory: BuiltinFactory::Recipe(builtin_timeout),
    });
    let mut registry = Registry::with_builtins(&builtins);
    let plugins = dirs.package("plugins", "example-pack");
    let recipes = dirs.package("recipes", "example-recipe");
    let report = load_dirs(
        &[
            PluginDir {
                path: plugins,
                role: DirRole::Plugins,
            },
            PluginDir {
                path: recipes,
                role: DirRole::Recipes,
            },
        ],
        &LoadOptions::default(),
    );
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    for plugin in report.plugins {
        registry.add_plugin(plugin).expect("register");
    }
    registry
}

fn request() -> RunRequest {
    let mut req = RunRequest::default();
    req.benchmark.id = "example_exact_match".into();
    req.harness.id = "example_calculator".into();
    req.environment = EnvironmentSpec::new("host_process");
    req
}

#[test]
fn external_recipes_come_after_built_ins_and_compose() {
    let dirs = PluginDirs::new();
    let registry = registry_with_builtin_recipe(&dirs);
    let req = request();
    let planner = Planner::new(&registry, &req).expect("planner");
    assert_eq!(planner.recipe_ids(), ["builtin_timeout", "example_recipe"]);
    let plan = planner
        .plan(&TaskSpec::new("arith-0000", "q"), &req, 1)
        .expect("plan");
    assert_eq!(plan.applied_recipes, ["builtin_timeout", "example_recipe"]);
    // The built-in ran first and set 5 s; the external recipe preserves an existing value.
    assert_eq!(plan.run_timeout_seconds, Some(5.0));
    assert_eq!(plan.harness_plan.run_timeout_seconds, Some(5.0));
}

#[test]
fn the_whitelist_selects_recipes_but_keeps_registry_order() {
    let dirs = PluginDirs::new();
    let registry = registry_with_builtin_recipe(&dirs);
    let mut req = request();
    req.execution.enabled_recipes = vec!["example_recipe".into()];
    let planner = Planner::new(&registry, &req).expect("planner");
    assert_eq!(planner.recipe_ids(), ["example_recipe"]);
    let plan = planner
        .plan(&TaskSpec::new("arith-0000", "q"), &req, 1)
        .expect("plan");
    assert_eq!(plan.applied_recipes, ["example_recipe"]);
    assert_eq!(
        plan.run_timeout_seconds,
        Some(60.0),
        "only the external recipe applied"
    );
    req.execution.enabled_recipes = vec!["example_recipe".into(), "builtin_timeout".into()];
    let planner = Planner::new(&registry, &req).expect("planner");
    assert_eq!(planner.recipe_ids(), ["builtin_timeout", "example_recipe"]);
    req.execution.enabled_recipes = vec!["nope".into()];
    let err = Planner::new(&registry, &req)
        .err()
        .expect("unknown recipe")
        .to_string();
    assert_eq!(
        err,
        "unknown recipe `nope` (known: builtin_timeout, example_recipe)"
    );
}

#[test]
fn plan_command_prints_the_audit_view_of_one_task() {
    let ws = Workspace::new();
    let out = ws.run_ok(
        &example_plan(
            "arith-0002",
            &[
                "--benchmark-params",
                r#"{"size": 4}"#,
                "--model-api-key",
                "sk-never-printed-9876",
            ],
        ),
        &[],
    );
    assert!(!out.stdout.contains("sk-never-printed-9876"));
    insta::assert_snapshot!(out.stdout);
    let out = ws.run_expect(2, &example_plan("arith-9", &[]), &[]);
    assert_eq!(
        out.stderr,
        "error: --task: benchmark example_exact_match has no task `arith-9` (5 tasks; first: arith-0000, arith-0001, arith-0002, arith-0003, arith-0004)\n"
    );
}

#[test]
fn a_policy_the_provider_cannot_enforce_is_refused_before_allocation() {
    let ws = Workspace::new();
    let out = ws.run_expect(
        1,
        &example_plan(
            "arith-0000",
            &["--env-params", r#"{"run_network_policy": "no-network"}"#],
        ),
        &[],
    );
    let view: serde_json::Value = serde_json::from_str(&out.stdout).expect("view");
    assert_eq!(
        view["resolved_execution_plan"]["run_network_policy"]["network_mode"],
        "no-network"
    );
    assert_eq!(
        out.stderr,
        "error: task arith-0000: environment `host_process` cannot enforce run_network_policy mode `no-network` (it supports: public)\n"
    );
}

#[test]
fn unset_binding_references_are_named_never_valued() {
    let ws = Workspace::new();
    let out = ws.run_expect(
        1,
        &example_plan(
            "arith-0000",
            &[
                "--env-params",
                r#"{"env_variables": {"TOKEN": "${GRADER_TOKEN}", "OTHER": "${SET_ONE}"}}"#,
            ],
        ),
        &[("SET_ONE", "visible-value-123")],
    );
    assert_eq!(
        out.stderr,
        "error: task arith-0000: environment bindings refer to unset variables: GRADER_TOKEN (export them before the run)\n"
    );
    assert!(!out.stdout.contains("visible-value-123") && !out.stderr.contains("visible-value-123"));
}

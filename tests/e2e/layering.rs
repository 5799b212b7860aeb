//! The architecture as a test: the crates' dependency arrows point the way ARCHITECTURE.md
//! draws them, and no module of a crate depends (through `crate::`/`super::` paths, `use`
//! or not) on a module that depends back on it, at the top level or one level down.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The names of the workspace packages a manifest depends on (normal dependencies only).
fn workspace_dependencies(manifest: &str) -> BTreeSet<String> {
    let text = fs::read_to_string(root().join(manifest)).unwrap();
    let normal = text
        .split("\n[")
        .find(|section| section.starts_with("dependencies]"))
        .unwrap_or_default();
    normal
        .lines()
        .filter_map(|line| line.split(['.', '=', ' ']).next())
        .filter(|name| name.starts_with("agentcompass-") || name.ends_with("-pack"))
        .map(str::to_string)
        .collect()
}

#[test]
fn crate_arrows_follow_the_layers() {
    let expect = |manifest: &str, allowed: &[&str]| {
        let found = workspace_dependencies(manifest);
        let allowed: BTreeSet<String> = allowed.iter().map(|s| s.to_string()).collect();
        assert!(
            found.is_subset(&allowed),
            "{manifest} depends on {:?}; the layers allow only {allowed:?}",
            found.difference(&allowed).collect::<Vec<_>>()
        );
    };
    expect("plugin-api/Cargo.toml", &[]);
    expect("host/redact/Cargo.toml", &[]);
    // The typed records of what the host persists: shapes only, over the plugin API's
    // contracts.
    expect("host/schema/Cargo.toml", &["agentcompass-plugin-api"]);
    expect(
        "host/results/Cargo.toml",
        &[
            "agentcompass-plugin-api",
            "agentcompass-redact",
            "agentcompass-schema",
        ],
    );
    expect("host/loader/Cargo.toml", &["agentcompass-plugin-api"]);
    // A run's records as OpenTelemetry spans: it reads the store, never the runtime.
    expect(
        "host/otel/Cargo.toml",
        &[
            "agentcompass-plugin-api",
            "agentcompass-results",
            "agentcompass-schema",
        ],
    );
    // builtins -> egress: the `sandbox` serves an `allowlist` session's egress through the
    // host's proxy; egress itself depends on plugin-api only, so a plugin could use it too.
    expect(
        "host/builtins/Cargo.toml",
        &["agentcompass-plugin-api", "agentcompass-egress"],
    );
    expect("host/egress/Cargo.toml", &["agentcompass-plugin-api"]);
    expect(
        "host/Cargo.toml",
        &[
            "agentcompass-plugin-api",
            "agentcompass-redact",
            "agentcompass-results",
            "agentcompass-schema",
            "agentcompass-loader",
            "agentcompass-builtins",
            // `runtime.egress.hosts` is checked with the proxy's own host map rules.
            "agentcompass-egress",
            // The model gateway and the in-environment model endpoint.
            "agentcompass-gateway",
            // `view`: the read-only results viewer.
            "agentcompass-viewer",
            // `export otel` and `--otel-endpoint`: a run's spans over OTLP.
            "agentcompass-otel",
            // `runtime.executor = "slurm"`: jobs through the Slurm CLIs.
            "agentcompass-cluster",
            // `compare` and `--baseline`: the paired statistics.
            "agentcompass-stats",
            // the built-in analyzers and the analysis summary.
            "agentcompass-analysis",
            // the `dataset.*` services and the `datasets` commands.
            "agentcompass-datasets",
        ],
    );
    // Datasets (registries, the git task cache, URL files, digests): a leaf.
    expect("host/datasets/Cargo.toml", &[]);
    // The gateway: the model's wire protocols over HTTP, and the relay, whose per-attempt
    // token is the egress proxy's; it knows nothing of runs, plans or results.
    expect(
        "host/gateway/Cargo.toml",
        &[
            "agentcompass-plugin-api",
            "agentcompass-redact",
            "agentcompass-egress",
        ],
    );
    // Paired statistics: a leaf.
    expect("host/stats/Cargo.toml", &[]);
    // The analyzers are components like any plugin's: plugin-api only.
    expect("host/analysis/Cargo.toml", &["agentcompass-plugin-api"]);
    // The viewer reads results through the results crate's readers and the schema's records
    // (and may mask text); its compare page computes the CLI's paired statistics (a leaf).
    expect(
        "host/viewer/Cargo.toml",
        &[
            "agentcompass-results",
            "agentcompass-schema",
            "agentcompass-redact",
            "agentcompass-stats",
        ],
    );
    // The cluster tools (Slurm CLIs) know nothing of the host: a leaf.
    expect("host/cluster/Cargo.toml", &[]);
    // docker -> egress: the `docker` provider serves a non-public container's egress through
    // the same proxy (a leaf over plugin-api, compiled into the plugin).
    expect(
        "plugins/docker/Cargo.toml",
        &["agentcompass-plugin-api", "agentcompass-egress"],
    );
    for plugin in [
        "plugins/agents",
        "plugins/example-pack",
        "plugins/harbor",
        "plugins/qa",
        "recipes/example-recipe",
    ] {
        expect(
            &format!("{plugin}/Cargo.toml"),
            &["agentcompass-plugin-api"],
        );
    }
}

/// Every `.rs` file of a crate's `src/` by module path (`runtime::attempt::stage`), test-only
/// modules left out.
fn modules(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut found = BTreeMap::new();
    let mut pending = vec![src.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "tests" || name == "tests.rs" {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let Some(stem) = name.strip_suffix(".rs") else {
                continue;
            };
            let mut module: Vec<String> = path
                .parent()
                .unwrap()
                .strip_prefix(src)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if !matches!(stem, "mod" | "lib" | "main") {
                module.push(stem.to_string());
            }
            found.insert(module, path);
        }
    }
    found
}

/// The production text of a file: inline test modules and comments removed.
fn production_text(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    text.lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths a file names through `crate::` or `super::`, resolved to module paths
/// (`use crate::{a, b}` groups included). A macro's `$crate::` paths are left out: they are
/// expanded in the crate that calls the macro.
fn referenced(module: &[String], text: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for keyword in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(at) = text[from..].find(keyword) {
            let start = from + at;
            from = start + keyword.len();
            if start > 0
                && (bytes[start - 1].is_ascii_alphanumeric()
                    || matches!(bytes[start - 1], b'_' | b'$'))
            {
                continue;
            }
            let mut base: Vec<String> = if keyword == "crate::" {
                Vec::new()
            } else {
                // `super` is the module's parent (a `mod.rs` is named by its directory).
                let mut parent = module.to_vec();
                parent.pop();
                parent
            };
            let rest = &text[from..];
            let mut chained = rest;
            while let Some(next) = chained.strip_prefix("super::") {
                base.pop();
                chained = next;
            }
            if let Some(group) = chained.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for item in group[..end].split(',') {
                    let first = item.trim().split("::").next().unwrap_or_default().trim();
                    if !first.is_empty() && first != "self" {
                        let mut path = base.clone();
                        path.push(first.to_string());
                        out.push(path);
                    }
                }
                continue;
            }
            let segments: Vec<String> = chained
                .split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .next()
                .unwrap_or_default()
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            let mut path = base;
            path.extend(segments);
            out.push(path);
        }
    }
    out
}

/// The strongly connected components (more than one module) of `graph`.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    // Kosaraju: order by finish time, then walk the reversed graph.
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        seen: &mut BTreeSet<String>,
        order: &mut Vec<String>,
    ) {
        if !seen.insert(node.to_string()) {
            return;
        }
        for next in graph.get(node).into_iter().flatten() {
            visit(next, graph, seen, order);
        }
        order.push(node.to_string());
    }
    let mut seen = BTreeSet::new();
    let mut order = Vec::new();
    for node in graph.keys() {
        visit(node, graph, &mut seen, &mut order);
    }
    let mut reversed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, tos) in graph {
        for to in tos {
            reversed.entry(to.clone()).or_default().insert(from.clone());
        }
    }
    let mut assigned = BTreeSet::new();
    let mut components = Vec::new();
    for node in order.iter().rev() {
        let mut component = Vec::new();
        visit(node, &reversed, &mut assigned, &mut component);
        if component.len() > 1 {
            component.sort();
            components.push(component);
        }
    }
    components
}

/// The module graph of a crate, modules cut to `depth` path segments; a module naming its own
/// ancestor (`super::`) is not an edge.
fn module_graph(src: &Path, depth: usize) -> BTreeMap<String, BTreeSet<String>> {
    let modules = modules(src);
    let known: BTreeSet<Vec<String>> = modules
        .keys()
        .map(|m| m.iter().take(depth).cloned().collect())
        .collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, path) in &modules {
        let from: Vec<String> = module.iter().take(depth).cloned().collect();
        for target in referenced(module, &production_text(path)) {
            let mut to: Vec<String> = target.into_iter().take(depth).collect();
            while !to.is_empty() && !known.contains(&to) {
                to.pop();
            }
            if to.is_empty() || to == from || from.starts_with(&to) {
                continue;
            }
            graph
                .entry(from.join("::"))
                .or_default()
                .insert(to.join("::"));
        }
        graph.entry(from.join("::")).or_default();
    }
    graph
}

#[test]
fn no_module_cycles_inside_a_crate() {
    let mut found = Vec::new();
    for krate in [
        "host/src",
        "host/results/src",
        "host/schema/src",
        "host/loader/src",
        "host/builtins/src",
        "host/egress/src",
        "host/gateway/src",
        "host/redact/src",
        "host/viewer/src",
        "host/cluster/src",
        "host/stats/src",
        "host/analysis/src",
        "plugin-api/src",
        "plugins/agents/src",
        "plugins/docker/src",
        "plugins/example-pack/src",
        "plugins/harbor/src",
        "plugins/qa/src",
        "recipes/example-recipe/src",
    ] {
        for depth in [1, 2] {
            for cycle in cycles(&module_graph(&root().join(krate), depth)) {
                found.push(format!("{krate}: {}", cycle.join(" <-> ")));
            }
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let graph: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec!["a"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(str::to_string).collect()))
    .collect();
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
    let refs = referenced(
        &["runtime".into(), "attempt".into(), "stage".into()],
        "use super::{outcome, env}; use crate::planner::Phase; super::super::phase::run();",
    );
    assert!(refs.contains(&vec!["runtime".into(), "attempt".into(), "outcome".into()]));
    assert!(refs.contains(&vec!["planner".into(), "Phase".into()]));
    assert!(refs.contains(&vec!["runtime".into(), "phase".into(), "run".into()]));
}

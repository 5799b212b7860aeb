//! The `task.toml` variants of the differential test: every official field of Harbor's
//! `TaskConfig` with valid values, values Harbor coerces and values it refuses, and the
//! interactions between fields (legacy aliases, network policies, verifier environments).
//! Deterministic: the same list, in the same order, on every run.

/// One task directory to compare.
pub struct Variant {
    /// A unique, descriptive name (`environment.cpus="2"`).
    pub name: String,
    /// The `task.toml` text.
    pub toml: String,
    /// The `instruction.md` text.
    pub instruction: String,
    /// Extra files (relative path, content).
    pub files: Vec<(String, String)>,
}

/// A `task.toml` under construction: root keys, then tables in order.
#[derive(Clone, Default)]
struct Doc {
    root: Vec<String>,
    tables: Vec<(String, Vec<String>)>,
}

impl Doc {
    fn new() -> Self {
        Doc::default()
    }

    /// A root key line.
    fn root(mut self, line: &str) -> Self {
        self.root.push(line.to_string());
        self
    }

    /// A line in table `[name]` (created at its first line).
    fn set(mut self, name: &str, line: &str) -> Self {
        match self.tables.iter_mut().find(|(n, _)| n == name) {
            Some((_, lines)) => lines.push(line.to_string()),
            None => self.tables.push((name.to_string(), vec![line.to_string()])),
        }
        self
    }

    /// An empty table `[name]`.
    fn table(mut self, name: &str) -> Self {
        if !self.tables.iter().any(|(n, _)| n == name) {
            self.tables.push((name.to_string(), Vec::new()));
        }
        self
    }

    /// A new element `[[name]]` of an array of tables.
    fn element(mut self, name: &str, lines: &[&str]) -> Self {
        self.tables.push((
            format!("[{name}]"),
            lines.iter().map(|l| l.to_string()).collect(),
        ));
        self
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.root {
            out.push_str(line);
            out.push('\n');
        }
        for (name, lines) in &self.tables {
            out.push_str(&format!("\n[{name}]\n"));
            for line in lines {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

/// Collects the variants.
struct List(Vec<Variant>);

impl List {
    fn add(&mut self, name: impl Into<String>, doc: &Doc) {
        self.add_with(name, doc, "Do it.\n", &[]);
    }

    fn add_with(
        &mut self,
        name: impl Into<String>,
        doc: &Doc,
        instruction: &str,
        files: &[(&str, &str)],
    ) {
        self.0.push(Variant {
            name: name.into(),
            toml: doc.render(),
            instruction: instruction.to_string(),
            files: files
                .iter()
                .map(|(p, c)| (p.to_string(), c.to_string()))
                .collect(),
        });
    }

    /// One variant per value of `key` in table `table` (`""` = the root).
    fn values(&mut self, table: &str, key: &str, values: &[&str]) {
        for value in values {
            let line = format!("{key} = {value}");
            let doc = if table.is_empty() {
                Doc::new().root(&line)
            } else {
                Doc::new().set(table, &line)
            };
            let dotted = if table.is_empty() {
                key.to_string()
            } else {
                format!("{table}.{key}")
            };
            self.add(format!("{dotted}={value}"), &doc);
        }
    }
}

/// Values for Harbor `float` fields (timeouts and healthcheck intervals).
const FLOATS: &[&str] = &[
    "300",
    "300.5",
    "\"300\"",
    "\" 300 \"",
    "\"1e3\"",
    "\"1_000\"",
    "\"5m\"",
    "\"\"",
    "true",
    "false",
    "0",
    "-5",
    "inf",
    "nan",
    "\"inf\"",
    "1e300",
    "[1]",
    "1979-05-27",
];

/// Values for Harbor `int` fields (`memory_mb`, `storage_mb`, `gpus`, `retries`).
const INTS: &[&str] = &[
    "2048",
    "2048.0",
    "2048.5",
    "\"2048\"",
    "\"2048.0\"",
    "\"2048.\"",
    "\" 2048 \"",
    "\"1_024\"",
    "\"1e3\"",
    "true",
    "false",
    "0",
    "-1",
    "\"abc\"",
    "[1]",
    "inf",
];

/// Values for `cpus` (`int | float`).
const CPUS: &[&str] = &[
    "2", "2.0", "0.5", "\"2\"", "\"2.5\"", "\"1e1\"", "true", "false", "0", "-1", "inf", "nan",
    "\"inf\"", "\"abc\"", "[2]",
];

/// Values for Harbor `bool` fields (`allow_internet`).
const BOOLS: &[&str] = &[
    "true",
    "false",
    "\"yes\"",
    "\"no\"",
    "\"on\"",
    "\"OFF\"",
    "\"TRUE\"",
    "\"t\"",
    "1",
    "0",
    "2",
    "1.0",
    "\" true \"",
    "\"\"",
    "\"maybe\"",
    "[true]",
];

/// Values for `user` (`str | int`).
const USERS: &[&str] = &[
    "\"agent\"",
    "1000",
    "1000.0",
    "1000.5",
    "true",
    "\"1000\"",
    "[1]",
    "{ name = \"x\" }",
];

/// Values for string fields.
const STRINGS: &[&str] = &["\"text\"", "\"\"", "1", "true", "[\"a\"]"];

/// Values for `env` tables.
const ENVS: &[&str] = &[
    "{ A = \"1\", B = \"${HOST_B:-x}\" }",
    "{}",
    "{ A = 1 }",
    "{ A = true }",
    "{ \"\" = \"x\" }",
    "\"A=1\"",
    "[\"A\"]",
];

/// Values for `network_mode`.
const MODES: &[&str] = &[
    "\"public\"",
    "\"no-network\"",
    "\"Public\"",
    "\" public \"",
    "\"none\"",
    "\"allowlist\"",
    "1",
];

/// `allowed_hosts` lists (used with `network_mode = "allowlist"`).
const HOSTS: &[&str] = &[
    "[\"pypi.org\", \"*.pythonhosted.org\"]",
    "[\"PyPI.ORG.\", \"pypi.org\"]",
    "[\"a.com..\"]",
    "[]",
    "[\"10.0.0.0/8\"]",
    "[\"10.0.0.1/8\"]",
    "[\"10.0.0.0/08\"]",
    "[\"10.0.0.0/255.0.0.0\"]",
    "[\"10.0.0.0/0.255.255.255\"]",
    "[\"10.0.0.0/33\"]",
    "[\"192.0.2.1\"]",
    "[\"2001:DB8::1\"]",
    "[\"2001:db8::/32\"]",
    "[\"2001:db8::1/32\"]",
    "[\"fe80::1%eth0\"]",
    "[\"999.1.1.1\"]",
    "[\"01.2.3.4\"]",
    "[\"1.2.3\"]",
    "[\"localhost\"]",
    "[\"https://a.com\"]",
    "[\"a.com:80\"]",
    "[\"a.com/path\"]",
    "[\"[::1]\"]",
    "[\"*.a.com\"]",
    "[\"*.\"]",
    "[\"*.1.2.3.4\"]",
    "[\"a*.com\"]",
    "[\"*\"]",
    "[\"under_score.com\"]",
    "[\"-a.com\"]",
    "[\"\"]",
    "[\" \"]",
    "[1]",
    "\"pypi.org\"",
];

/// Legacy size strings (`memory`, `storage`).
const SIZES: &[&str] = &[
    "\"2G\"",
    "\"2g\"",
    "\" 2G \"",
    "\"512M\"",
    "\"2048K\"",
    "\"1.5G\"",
    "\"1_0G\"",
    "\"2GB\"",
    "\"10Gi\"",
    "\"1T\"",
    "\"2048\"",
    "\"0G\"",
    "\"-1G\"",
    "\"0.5K\"",
    "\"G\"",
    "\"infG\"",
    "\"nanM\"",
    "2048",
    "2.5",
    "true",
    "[1]",
];

fn timeouts(list: &mut List) {
    for (table, key) in [
        ("agent", "timeout_sec"),
        ("verifier", "timeout_sec"),
        ("environment", "build_timeout_sec"),
        ("verifier.environment", "build_timeout_sec"),
    ] {
        list.values(table, key, FLOATS);
    }
}

fn resources(list: &mut List) {
    list.values("environment", "cpus", CPUS);
    for key in ["memory_mb", "storage_mb", "gpus"] {
        list.values("environment", key, INTS);
    }
    list.values("verifier.environment", "cpus", &["2", "\"4\"", "0"]);
    list.values(
        "verifier.environment",
        "memory_mb",
        &["1024", "\"1024\"", "-1"],
    );
    list.values("verifier.environment", "gpus", &["1", "0"]);
    for legacy in ["memory", "storage"] {
        list.values("environment", legacy, SIZES);
    }
    list.values(
        "verifier.environment",
        "memory",
        &["\"1G\"", "\"1GB\"", "1024"],
    );
    // Legacy and new together: equal, different, and a string the conflict test never equals.
    for (legacy, new) in [
        ("\"2G\"", "2048"),
        ("\"2G\"", "2048.0"),
        ("\"2G\"", "\"2048\""),
        ("\"4G\"", "2048"),
        ("\"1M\"", "true"),
        ("2048", "1024"),
        ("\"2GB\"", "2048"),
        ("\"0G\"", "1"),
    ] {
        for (old_key, new_key) in [("memory", "memory_mb"), ("storage", "storage_mb")] {
            let doc = Doc::new()
                .set("environment", &format!("{old_key} = {legacy}"))
                .set("environment", &format!("{new_key} = {new}"));
            list.add(
                format!("environment.{old_key}={legacy}+{new_key}={new}"),
                &doc,
            );
        }
    }
}

fn environment_setup(list: &mut List) {
    list.values(
        "environment",
        "docker_image",
        &["\"ubuntu:24.04\"", "\"\"", "1", "[\"ubuntu\"]"],
    );
    list.values(
        "environment",
        "workdir",
        &["\"/app\"", "\"/srv/w/\"", "\"app\"", "\"\"", "1"],
    );
    list.values(
        "environment",
        "os",
        &[
            "\"linux\"",
            "\"LINUX\"",
            "\"Linux\"",
            "\" linux \"",
            "\"windows\"",
            "\"mac\"",
            "1",
        ],
    );
    list.values("environment", "env", ENVS);
    list.values("environment", "skills_dir", STRINGS);
    list.values(
        "environment",
        "gpu_types",
        &["[\"H100\", \"A100\"]", "[]", "\"H100\"", "[1]"],
    );
    list.values(
        "environment",
        "tpu",
        &[
            "{ type = \"v5e\", topology = \"2x2\" }",
            "{ type = \"v6e\", topology = \"2x4x1\" }",
            "{ type = \"v6e\", topology = \" 2x4 \" }",
            "{ type = \"v6e\", topology = \"2x\" }",
            "{ type = \"v6e\", topology = \"0x2\" }",
            "{ type = \"v6e\", topology = \"2\" }",
            "{ type = \"v6e\", topology = \"2X4\" }",
            "{ type = \"v6e\", topology = \"02x4\" }",
            "{ topology = \"2x2\" }",
            "{ type = \"\", topology = \"2x2\" }",
            "{ type = \"v6e\" }",
            "{ type = 5, topology = \"2x2\" }",
            "\"v5e-2x2\"",
        ],
    );
    list.values(
        "environment",
        "healthcheck",
        &[
            "{ command = \"true\" }",
            "{ command = \"\" }",
            "{}",
            "{ command = 1 }",
            "{ command = \"true\", retries = \"3\" }",
            "{ command = \"true\", retries = 3.5 }",
            "{ command = \"true\", retries = 3.0 }",
            "{ command = \"true\", interval_sec = \"5\" }",
            "{ command = \"true\", timeout_sec = -1 }",
            "{ command = \"true\", start_period_sec = \"fast\" }",
            "{ command = \"true\", start_interval_sec = true }",
            "{ command = \"true\", extra = 1 }",
            "\"true\"",
        ],
    );
    list.values(
        "environment",
        "mcp_servers",
        &[
            "[{ name = \"db\", transport = \"stdio\", command = \"db-mcp\", args = [\"--ro\"] }]",
            "[{ name = \"db\", transport = \"stdio\" }]",
            "[{ name = \"db\", transport = \"stdio\", command = \"\" }]",
            "[{ name = \"web\", url = \"https://mcp.example.org/sse\" }]",
            "[{ name = \"web\" }]",
            "[{ name = \"web\", transport = \"sse\", url = \"\" }]",
            "[{ name = \"web\", transport = \"http\", url = \"https://mcp.example.org\" }]",
            "[{ name = \"web\", transport = \"streamable-http\" }]",
            "[{ name = \"web\", transport = \"ws\", url = \"wss://x\" }]",
            "[{ name = \"web\", transport = \"SSE\", url = \"https://x\" }]",
            "[{ url = \"https://x\" }]",
            "[{ name = 1, url = \"https://x\" }]",
            "[{ name = \"web\", url = \"https://x\", headers = { Authorization = \"Bearer ${MCP_TOKEN}\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { Authorization = \"Token ${ID}:${SECRET}\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { Authorization = \"Bearer ${MCP_TOKEN}:\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { Authorization = \"Bearer abc123\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Api-Key = \"${K:-abc}\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Trace = \"${TRACE:-on}\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Trace = \"plain text\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Trace = \"${1BAD}\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Trace = \"${OPEN\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Tokens = \"abc\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { Cookie = \"a=b\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { \"Bad Header\" = \"x\" } }]",
            "[{ name = \"web\", url = \"https://x\", headers = { X-Num = 1 } }]",
            "[{ name = \"db\", transport = \"stdio\", command = \"x\", headers = { X-A = \"b\" } }]",
            "[]",
            "{ name = \"db\" }",
            "[\"db\"]",
        ],
    );
}

fn networks(list: &mut List) {
    for table in ["environment", "agent", "verifier", "verifier.environment"] {
        list.values(table, "network_mode", MODES);
        for (i, hosts) in HOSTS.iter().enumerate() {
            let doc = Doc::new()
                .set(table, "network_mode = \"allowlist\"")
                .set(table, &format!("allowed_hosts = {hosts}"));
            // The full host list for the environment, a sample for the other tables.
            if table == "environment" || i % 4 == 0 || *hosts == "[]" {
                list.add(format!("{table}.allowlist={hosts}"), &doc);
            }
        }
        // Hosts without a mode, and with a mode that takes none.
        for (mode, hosts) in [
            (None, "[\"a.org\"]"),
            (None, "[]"),
            (Some("\"public\""), "[\"a.org\"]"),
            (Some("\"public\""), "[]"),
            (Some("\"no-network\""), "[\"a.org\"]"),
        ] {
            let mut doc = Doc::new().set(table, &format!("allowed_hosts = {hosts}"));
            if let Some(mode) = mode {
                doc = doc.set(table, &format!("network_mode = {mode}"));
            }
            list.add(
                format!(
                    "{table}.network_mode={}+allowed_hosts={hosts}",
                    mode.unwrap_or("none")
                ),
                &doc,
            );
        }
    }
    // Legacy allow_internet alone, and next to network_mode / allowed_hosts.
    for table in ["environment", "verifier.environment"] {
        list.values(table, "allow_internet", BOOLS);
        for (value, other) in [
            ("true", "network_mode = \"no-network\""),
            ("false", "network_mode = \"public\""),
            ("false", "network_mode = \"no-network\""),
            (
                "\"yes\"",
                "network_mode = \"allowlist\"\nallowed_hosts = [\"a.org\"]",
            ),
            ("false", "allowed_hosts = []"),
            ("true", "allowed_hosts = [\"a.org\"]"),
            ("2", "network_mode = \"public\""),
        ] {
            let doc = Doc::new()
                .set(table, &format!("allow_internet = {value}"))
                .set(table, other);
            list.add(
                format!(
                    "{table}.allow_internet={value}+{}",
                    other.replace('\n', ";")
                ),
                &doc,
            );
        }
    }
    // allow_internet on a phase table is not an official field there.
    list.values("agent", "allow_internet", &["false"]);
    // Phase overrides on top of a baseline.
    let doc = Doc::new()
        .set("environment", "network_mode = \"no-network\"")
        .set("agent", "network_mode = \"allowlist\"")
        .set("agent", "allowed_hosts = [\"api.example.org\"]")
        .set("verifier", "network_mode = \"public\"");
    list.add("phases over a no-network baseline", &doc);
}

fn verifier(list: &mut List) {
    list.values("verifier", "env", ENVS);
    list.values("verifier", "user", USERS);
    list.values("agent", "user", USERS);
    list.values(
        "verifier",
        "environment_mode",
        &["\"shared\"", "\"separate\"", "\"Shared\"", "\"fresh\"", "1"],
    );
    for mode in ["\"shared\"", "\"separate\""] {
        let doc = Doc::new()
            .set("verifier", &format!("environment_mode = {mode}"))
            .table("verifier.environment");
        list.add(
            format!("verifier.environment_mode={mode}+[verifier.environment]"),
            &doc,
        );
    }
    list.values("verifier", "environment", &["\"img\"", "1"]);
    list.values("verifier.environment", "env", ENVS);
    list.values(
        "verifier.environment",
        "docker_image",
        &["\"verifier:1\"", "\"\""],
    );
    list.values(
        "verifier.environment",
        "workdir",
        &["\"/grade\"", "\"grade\""],
    );
    list.values("verifier.environment", "os", &["\"LINUX\"", "\"windows\""]);
    list.add(
        "empty [verifier.environment]",
        &Doc::new().table("verifier.environment"),
    );
    // Seed 004's independence: an empty verifier environment inherits nothing from the agent's.
    let doc = Doc::new()
        .set("environment", "workdir = \"/srv/w\"")
        .set("environment", "docker_image = \"agent:1\"")
        .set("environment", "network_mode = \"no-network\"")
        .set("environment", "cpus = 2")
        .set("environment", "env = { COMMON = \"c\" }")
        .table("verifier.environment");
    list.add("agent workdir and an empty [verifier.environment]", &doc);
    let doc = Doc::new()
        .set("environment", "workdir = \"/srv/w\"")
        .set("environment", "os = \"windows\"")
        .set("verifier.environment", "docker_image = \"grader:1\"");
    list.add("windows agent and a linux verifier image", &doc);
    let doc = Doc::new()
        .set("environment", "os = \"windows\"")
        .set("verifier", "environment_mode = \"separate\"");
    list.add("windows agent and a separate verifier copy", &doc);
    let doc = Doc::new()
        .set("environment", "network_mode = \"no-network\"")
        .set("verifier", "environment_mode = \"separate\"");
    list.add("separate verifier without a table inherits", &doc);
    let doc = Doc::new()
        .set("environment", "network_mode = \"no-network\"")
        .set("verifier", "network_mode = \"public\"")
        .set("verifier.environment", "network_mode = \"allowlist\"")
        .set(
            "verifier.environment",
            "allowed_hosts = [\"grader.example.org\"]",
        );
    list.add("verifier phase over a separate allowlist", &doc);
}

fn collect(list: &mut List) {
    for (name, lines) in [
        (
            "ok",
            &[
                "command = \"cp /app/a /logs/artifacts/a\"",
                "timeout_sec = 30",
            ][..],
        ),
        ("empty command", &["command = \"\""][..]),
        ("no command", &["timeout_sec = 5"][..]),
        ("command 1", &["command = 1"][..]),
        (
            "timeout string",
            &["command = \"x\"", "timeout_sec = \"30\""][..],
        ),
        ("timeout 0", &["command = \"x\"", "timeout_sec = 0"][..]),
        (
            "timeout bad",
            &["command = \"x\"", "timeout_sec = \"soon\""][..],
        ),
        (
            "service main",
            &["command = \"x\"", "service = \"main\""][..],
        ),
        (
            "service padded",
            &["command = \"x\"", "service = \" main \""][..],
        ),
        ("service db", &["command = \"x\"", "service = \"db\""][..]),
        ("service empty", &["command = \"x\"", "service = \"\""][..]),
        (
            "service bad name",
            &["command = \"x\"", "service = \"bad name\""][..],
        ),
        ("user", &["command = \"x\"", "user = \"root\""][..]),
        ("unknown field", &["command = \"x\"", "retries = 2"][..]),
    ] {
        let doc = Doc::new().element("verifier.collect", lines);
        list.add(format!("verifier.collect: {name}"), &doc);
    }
    let doc = Doc::new()
        .element("verifier.collect", &["command = \"a\""])
        .element(
            "verifier.collect",
            &["command = \"b\"", "timeout_sec = 300.0"],
        );
    list.add("verifier.collect: two", &doc);
    list.values("verifier", "collect", &["\"x\"", "[\"x\"]", "[]"]);
}

fn artifacts(list: &mut List) {
    for value in [
        "[\"/app/hello.txt\"]",
        "[\"app/relative\"]",
        "[\"/app/../etc\"]",
        "[\"/\"]",
        "[\"\"]",
        "[1]",
        "[]",
        "\"/app/x\"",
        "[\"/logs/artifacts/result.txt\"]",
        "[\"/logs/artifacts/\"]",
        "[\"/app/a\", \"/app/a/b\"]",
        "[\"/app//x/\"]",
    ] {
        list.add(
            format!("artifacts={value}"),
            &Doc::new().root(&format!("artifacts = {value}")),
        );
    }
    for entry in [
        "{ source = \"/app/out\", destination = \"out\", exclude = [\"*.tmp\"] }",
        "{ source = \"/app/out\", destination = \"out/\" }",
        "{ source = \"/app/out\", destination = \"./a//b\" }",
        "{ source = \"/app/out\", destination = \".\" }",
        "{ source = \"/app/out\", destination = \"./\" }",
        "{ source = \"/app/out\", destination = \"\" }",
        "{ source = \"/app/out\", destination = \"a\\\\b\" }",
        "{ source = \"/app/out\", destination = \"/abs\" }",
        "{ source = \"/app/out\", destination = \"../x\" }",
        "{ source = \"/app/out\", destination = \"a/../b\" }",
        "{ source = \"/app/out\", destination = \"manifest.json\" }",
        "{ source = \"/app/out\", destination = \"manifest.json/\" }",
        "{ source = \"/app/out\", destination = \"./manifest.json\" }",
        "{ source = \"/app/out\", destination = 1 }",
        "{ source = \"/app/out\", exclude = \"*.tmp\" }",
        "{ source = \"/app/out\", exclude = [1] }",
        "{ source = \"/app/out\", service = \"main\" }",
        "{ source = \"/app/out\", service = \" main \" }",
        "{ source = \"/app/out\", service = \"db\" }",
        "{ source = \"/app/out\", service = \"\" }",
        "{ source = \"/app/out\", service = \"bad name\" }",
        "{ source = \"relative\", service = \"db\" }",
        "{ source = \"/app/out\", mode = \"copy\" }",
        "{ destination = \"out\" }",
        "{ source = 1 }",
        "{ source = \"/logs/artifacts\", exclude = [\"*.log\"] }",
        "{ source = \"/app/b\", destination = \"app/a\" }",
    ] {
        let doc = Doc::new().root(&format!("artifacts = [\"/app/a\", {entry}]"));
        list.add(format!("artifacts[1]={entry}"), &doc);
    }
}

fn package(list: &mut List) {
    for name in [
        "\"acme/hello\"",
        "\"acme.io/hello_world-2\"",
        "\"hello\"",
        "\"a/b/c\"",
        "\".a/b\"",
        "\"a/.b\"",
        "\"a/b..c\"",
        "\"a/b\\n\"",
        "\"a b/c\"",
        "\"\"",
        "1",
    ] {
        list.add(
            format!("task.name={name}"),
            &Doc::new().set("task", &format!("name = {name}")),
        );
    }
    list.add(
        "task without name",
        &Doc::new().set("task", "version = \"1.0\""),
    );
    list.add("empty [task]", &Doc::new().table("task"));
    for (key, value) in [
        ("version", "\"1.0.0\""),
        ("version", "\"\""),
        ("version", "\" \""),
        ("version", "1"),
        ("description", "\"Create a file\""),
        ("description", "\"\""),
        ("description", "1"),
        ("keywords", "[\"files\", \"smoke\"]"),
        ("keywords", "\"files\""),
        ("keywords", "[1]"),
        (
            "authors",
            "[{ name = \"Ada\", email = \"ada@example.org\" }]",
        ),
        ("authors", "[{ name = \"Ada\" }]"),
        ("authors", "[{ email = \"ada@example.org\" }]"),
        ("authors", "[{ name = \"Ada\", email = 1 }]"),
        ("authors", "[{ name = \"Ada\", url = \"x\" }]"),
        ("authors", "[\"Ada\"]"),
        ("authors", "\"Ada\""),
        ("homepage", "\"https://example.org\""),
    ] {
        let doc = Doc::new()
            .set("task", "name = \"acme/hello\"")
            .set("task", &format!("{key} = {value}"));
        list.add(format!("task.{key}={value}"), &doc);
    }
    list.values("", "task", &["\"acme/hello\""]);
}

fn root_fields(list: &mut List) {
    list.values(
        "",
        "schema_version",
        &["\"1.4\"", "\"1.0\"", "\"\"", "1", "1.4"],
    );
    list.values("", "version", &["\"1.0\"", "\"\"", "1"]);
    for (schema, version) in [
        ("\"1.4\"", "\"1.0\""),
        ("\"1.4\"", "1"),
        ("\"1.4\"", "\"1.4\""),
    ] {
        let doc = Doc::new()
            .root(&format!("schema_version = {schema}"))
            .root(&format!("version = {version}"));
        list.add(format!("schema_version={schema}+version={version}"), &doc);
    }
    list.values(
        "",
        "source",
        &["\"https://example.org/tasks\"", "\"\"", "1"],
    );
    list.values(
        "",
        "multi_step_reward_strategy",
        &["\"mean\"", "\"final\"", "\"Mean\"", "\"max\"", "1"],
    );
    list.values("", "custom_root", &["1"]);
    list.values(
        "",
        "metadata",
        &[
            "{ difficulty = \"easy\", tags = [\"a\", \"b\"], n = 3, nested = { x = 1.5 } }",
            "{ category = \"smoke\" }",
            "{ source = \"from metadata\" }",
            "{}",
            "\"easy\"",
        ],
    );
    let doc = Doc::new()
        .root("source = \"root\"")
        .set("task", "name = \"acme/x\"")
        .set("metadata", "source = \"metadata\"")
        .set("metadata", "task = \"metadata\"");
    list.add("explicit source and [task] win over [metadata]", &doc);
    list.values("solution", "env", ENVS);
    list.values("solution", "extra", &["true"]);
    list.values("", "solution", &["\"x\""]);
    for section in ["agent", "verifier", "environment"] {
        list.values("", section, &["3", "\"x\""]);
        list.values(section, "custom", &["1"]);
    }
    list.add("empty task.toml", &Doc::new());
    let doc = Doc::new().set("environment", "cpus = 1\n[environment");
    list.add("invalid TOML", &doc);
}

/// A `[[steps]]` case: its name, each step's lines, and the step directories to create.
type StepCase<'a> = (&'a str, &'a [&'a [&'a str]], &'a [&'a str]);

fn steps(list: &mut List) {
    let files = |names: &[&str]| -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| (format!("steps/{n}/instruction.md"), format!("Step {n}.\n")))
            .collect()
    };
    let step_cases: &[StepCase] = &[
        (
            "two valid",
            &[&["name = \"one\""], &["name = \"two\""]],
            &["one", "two"],
        ),
        ("one valid without dir", &[&["name = \"one\""]], &[]),
        ("no name", &[&["min_reward = 0.5"]], &[]),
        ("name with slash", &[&["name = \"a/b\""]], &[]),
        ("name dot", &[&["name = \".\""]], &[]),
        ("name trailing dot", &[&["name = \"x.\""]], &[]),
        ("name CON", &[&["name = \"CON\""]], &[]),
        ("name com1.txt", &[&["name = \"com1.txt\""]], &[]),
        ("name blank", &[&["name = \" \""]], &[]),
        ("name 1", &[&["name = 1"]], &[]),
        (
            "duplicate names",
            &[&["name = \"A\""], &["name = \"a\""]],
            &["A", "a"],
        ),
        (
            "min_reward number",
            &[&["name = \"one\"", "min_reward = 0.5"]],
            &["one"],
        ),
        (
            "min_reward string",
            &[&["name = \"one\"", "min_reward = \"0.5\""]],
            &["one"],
        ),
        (
            "min_reward table",
            &[&[
                "name = \"one\"",
                "min_reward = { reward = 1, style = \"0.5\" }",
            ]],
            &["one"],
        ),
        (
            "min_reward bad",
            &[&["name = \"one\"", "min_reward = \"high\""]],
            &["one"],
        ),
        (
            "min_reward bad table",
            &[&["name = \"one\"", "min_reward = { reward = \"x\" }"]],
            &["one"],
        ),
        (
            "agent timeout bad",
            &[&["name = \"one\"", "agent = { timeout_sec = \"soon\" }"]],
            &["one"],
        ),
        (
            "agent timeout ok",
            &[&["name = \"one\"", "agent = { timeout_sec = \"60\" }"]],
            &["one"],
        ),
        (
            "verifier shared with env",
            &[&[
                "name = \"one\"",
                "verifier = { environment_mode = \"shared\", environment = {} }",
            ]],
            &["one"],
        ),
        (
            "healthcheck no command",
            &[&["name = \"one\"", "healthcheck = { retries = 2 }"]],
            &["one"],
        ),
        (
            "healthcheck ok",
            &[&["name = \"one\"", "healthcheck = { command = \"true\" }"]],
            &["one"],
        ),
        (
            "artifacts bad destination",
            &[&[
                "name = \"one\"",
                "artifacts = [{ source = \"/a\", destination = \".\" }]",
            ]],
            &["one"],
        ),
        (
            "artifacts ok",
            &[&["name = \"one\"", "artifacts = [\"/app/step.txt\"]"]],
            &["one"],
        ),
    ];
    for (name, elements, dirs) in step_cases {
        let mut doc = Doc::new();
        for lines in *elements {
            doc = doc.element("steps", lines);
        }
        let files = files(dirs);
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(p, c)| (p.as_str(), c.as_str()))
            .collect();
        list.add_with(format!("steps: {name}"), &doc, "Do it.\n", &refs);
    }
    let doc = Doc::new()
        .root("multi_step_reward_strategy = \"final\"")
        .element("steps", &["name = \"one\""]);
    list.add_with(
        "steps: with a reward strategy",
        &doc,
        "Do it.\n",
        &[("steps/one/instruction.md", "One.\n")],
    );
    list.values("", "steps", &["[]", "\"one\"", "[\"one\"]"]);
    list.add_with(
        "a steps/ directory without [[steps]]",
        &Doc::new(),
        "Do it.\n",
        &[("steps/one/instruction.md", "One.\n")],
    );
}

fn instructions(list: &mut List) {
    for (name, text) in [
        ("empty", ""),
        ("blank", "  \n\n"),
        ("canary comment", "<!-- canary GUID 1234 -->\n\nDo it.\n"),
        (
            "canary hash",
            "# BENCHMARK DATA SHOULD NEVER APPEAR. canary GUID x\n# Title\nDo it.\n",
        ),
        ("canary late", "Do it.\n<!-- canary -->\n"),
        ("no trailing newline", "Do it."),
    ] {
        list.add_with(format!("instruction: {name}"), &Doc::new(), text, &[]);
    }
    list.add_with(
        "windows with tests/test.bat",
        &Doc::new().set("environment", "os = \"windows\""),
        "Do it.\n",
        &[("tests/test.bat", "echo 1\r\n")],
    );
}

/// A realistic full task (the reference example of harbor-and-inspect.md).
fn full(list: &mut List) {
    let doc = Doc::new()
        .root("schema_version = \"1.4\"")
        .root("source = \"https://example.org/tasks\"")
        .root("artifacts = [\"/app/hello.txt\", { source = \"/app/out\", destination = \"out\", exclude = [\"*.tmp\"] }]")
        .set("task", "name = \"acme/hello-file\"")
        .set("task", "version = \"1.0.0\"")
        .set("task", "description = \"Create a greeting file\"")
        .set("task", "keywords = [\"files\", \"smoke\"]")
        .set("task", "authors = [{ name = \"Ada\", email = \"ada@example.org\" }]")
        .set("metadata", "difficulty = \"easy\"")
        .set("metadata", "category = \"smoke\"")
        .set("agent", "timeout_sec = 300.0")
        .set("verifier", "timeout_sec = 120")
        .set("verifier", "env = { GRADER_MODE = \"${GRADER_MODE:-strict}\" }")
        .set("environment", "build_timeout_sec = 600.0")
        .set("environment", "docker_image = \"ubuntu:24.04\"")
        .set("environment", "os = \"linux\"")
        .set("environment", "cpus = 1")
        .set("environment", "memory_mb = 2048")
        .set("environment", "storage_mb = 4096")
        .set("environment", "gpus = 0")
        .set("environment", "workdir = \"/app\"")
        .set("environment", "network_mode = \"allowlist\"")
        .set("environment", "allowed_hosts = [\"pypi.org\", \"*.pythonhosted.org\"]")
        .set("environment", "env = { APP_MODE = \"test\" }")
        .set("solution", "env = { SOLVER = \"${SOLVER:-x}\" }")
        .element("verifier.collect", &["command = \"cp /app/hello.txt /logs/artifacts/hello.txt\"", "timeout_sec = 30"]);
    list.add("full reference task", &doc);
    let doc = Doc::new()
        .set("agent", "timeout_sec = \"600\"")
        .set("verifier", "timeout_sec = \"1_200\"")
        .set("environment", "cpus = \"2\"")
        .set("environment", "memory_mb = 2048.0")
        .set("environment", "storage_mb = \"4096\"")
        .set("environment", "gpus = true")
        .set("environment", "os = \"Linux\"")
        .set("environment", "allow_internet = \"no\"");
    list.add("coercions together", &doc);
}

/// Every variant, in a fixed order.
pub fn all_variants() -> Vec<Variant> {
    let mut list = List(Vec::new());
    root_fields(&mut list);
    package(&mut list);
    timeouts(&mut list);
    resources(&mut list);
    environment_setup(&mut list);
    networks(&mut list);
    verifier(&mut list);
    collect(&mut list);
    artifacts(&mut list);
    steps(&mut list);
    instructions(&mut list);
    full(&mut list);
    list.0
}

//! The skills the agent is told about, as Harbor's terminus-2 tells it
//! (`_build_skills_section`): each `<skills_dir>/<name>/SKILL.md` whose YAML front matter has
//! a `name` and a `description`, listed in an `<available_skills>` block appended to the first
//! prompt with the file's location; the agent reads a skill's file with its tools.

use agentcompass_plugin_api::contracts::ExecRequest;
use agentcompass_plugin_api::sdk::SessionRef;

/// The separator `find` output and file contents are printed with.
const SEPARATOR: &str = "\u{1e}AGENTCOMPASS-SKILL\u{1e}";

/// The block listing the skills under `dir` (empty when there are none).
pub(super) async fn section(env: &SessionRef, dir: &str) -> String {
    let script = format!(
        "find \"$1\" -mindepth 2 -maxdepth 2 -name SKILL.md 2>/dev/null | sort | \
         while IFS= read -r f; do printf '%s{SEPARATOR}%s\\n' \"$f\" \"$(head -c 4096 \"$f\")\"; \
         printf '{SEPARATOR}\\n'; done"
    );
    let exec = ExecRequest::argv(["bash", "-c", &script, "skills", dir]).timeout(30.0);
    let Ok(done) = env.exec(exec).await else {
        return String::new();
    };
    let mut entries = String::new();
    for record in done.stdout.split(&format!("{SEPARATOR}\n")) {
        let Some((path, text)) = record.split_once(SEPARATOR) else {
            continue;
        };
        if let Some((name, description)) = front_matter(text) {
            entries.push_str(&format!(
                "<skill>\n<name>{name}</name>\n<description>{description}</description>\n\
                 <location>{}</location>\n</skill>\n",
                path.trim()
            ));
        }
    }
    if entries.is_empty() {
        return String::new();
    }
    format!("\n\n<available_skills>\n{entries}</available_skills>")
}

/// `name` and `description` of a `---`-delimited front matter.
fn front_matter(text: &str) -> Option<(String, String)> {
    let body = text.trim_start().strip_prefix("---")?;
    let (block, _) = body.split_once("\n---")?;
    let field = |key: &str| {
        block.lines().find_map(|line| {
            let value = line.strip_prefix(key)?.trim_start().strip_prefix(':')?;
            Some(value.trim().trim_matches(['"', '\'']).to_string())
        })
    };
    Some((field("name")?, field("description")?))
}

#[cfg(test)]
mod tests {
    use super::front_matter;

    #[test]
    fn a_skill_needs_a_name_and_a_description() {
        let text = "---\nname: greet\ndescription: \"Say hello.\"\n---\nbody\n";
        assert_eq!(
            front_matter(text),
            Some(("greet".into(), "Say hello.".into()))
        );
        assert_eq!(front_matter("---\nname: x\n---\n"), None);
        assert_eq!(front_matter("no front matter"), None);
    }
}

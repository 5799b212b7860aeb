//! The `qa` pack: question answering from a JSONL or JSON dataset (a local file, or one the
//! host downloads by URL and SHA-256), scored by exact or normalised match. Depends only on
//! `agentcompass-plugin-api`.

mod benchmark;
mod dataset;
mod jsonl;
mod record;
mod scoring;
mod shared;
mod source;

use agentcompass_plugin_api::contracts::{
    ComponentInfo, ComponentKind, ConfigField, ConfigSchema, ConfigType,
};
use agentcompass_plugin_api::sdk::PluginBuilder;
use serde_json::json;

fn register(plugin: &mut PluginBuilder) {
    plugin.benchmark(
        ComponentInfo::new(
            ComponentKind::Benchmark,
            shared::ID,
            "Question answering from a JSONL or JSON dataset, scored by exact or normalised match",
        )
        .with_schema(
            ConfigSchema::empty()
                .field(ConfigField::new(
                    "path",
                    ConfigType::String,
                    json!(null),
                    "Dataset file: `.jsonl` (one object per line) or `.json` (an array of \
                     objects); give `path` or `dataset`",
                ))
                .field(ConfigField::new(
                    "dataset",
                    ConfigType::Object,
                    json!(null),
                    "A dataset file to download instead of `path`: `{\"url\": \"https://…/qa.jsonl\", \
                     \"sha256\": \"<64 hex digits>\"}` (http://, https:// or file://), or an archive \
                     and the file in it: add `\"archive\": \"zip\"` or `\"tar.gz\"` and \
                     `\"member\": \"data/qa.jsonl\"`; the host downloads it once into \
                     `<data_dir>/datasets` and verifies the SHA-256 on every use; the format \
                     is the `.jsonl`/`.json` extension of the URL's last path segment (or of \
                     `member`)",
                ))
                .field(ConfigField::new(
                    "match",
                    ConfigType::String,
                    json!(scoring::DEFAULT_MATCH),
                    "`exact` or `normalized` (lowercase, trim, collapse whitespace, strip \
                     surrounding punctuation and a leading \"the answer is\")",
                ))
                .field(ConfigField::new(
                    "sample_ids",
                    ConfigType::Array,
                    json!(null),
                    "Run only these task ids",
                )),
        ),
        || Ok(benchmark::Qa),
    );
}

agentcompass_plugin_api::export_plugin!(register);

//! Tests of redaction, the secret registry and scrubbing before truncation.

use super::*;
use serde_json::json;

#[test]
fn literal_api_key_is_masked() {
    let out = redact_value(&json!({"api_key": "sk-live-123456"}));
    assert_eq!(out, json!({"api_key": REDACTED}));
}

#[test]
fn env_reference_is_kept() {
    let input = json!({
        "api_key": "${OPENAI_API_KEY}",
        "token": "  ${_TOKEN2}  ",
    });
    assert_eq!(redact_value(&input), input);
}

#[test]
fn reference_with_default_or_embedded_is_masked() {
    let input = json!({
        "api_key": "${OPENAI_API_KEY:-sk-fallback}",
        "password": "prefix-${PW}",
        "secret": "${A}${B}",
        "x_token": "${1BAD}",
        "y_token": "${}",
    });
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({
            "api_key": REDACTED,
            "password": REDACTED,
            "secret": REDACTED,
            "x_token": REDACTED,
            "y_token": REDACTED,
        })
    );
}

#[test]
fn empty_value_is_kept() {
    let input = json!({"api_key": "", "password": ""});
    assert_eq!(redact_value(&input), input);
}

#[test]
fn wrap_api_key_flag_is_kept() {
    let input = json!({"wrap_api_key": true, "wrapApiKey": "yes"});
    assert_eq!(redact_value(&input), input);
    assert!(!is_sensitive_key("wrap_api_key"));
    assert!(!is_sensitive_key("wrapApiKey"));
}

#[test]
fn authorization_header_is_masked() {
    let input = json!({
        "headers": {
            "Authorization": "Bearer abc",
            "Content-Type": "application/json",
            "X-Retries": 3,
            "X-Debug": true,
            "X-Empty": "",
        }
    });
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({
            "headers": {
                "Authorization": REDACTED,
                "Content-Type": REDACTED,
                "X-Retries": REDACTED,
                "X-Debug": true,
                "X-Empty": "",
            }
        })
    );
}

#[test]
fn env_maps_are_masked_leaf_by_leaf_but_references_kept() {
    let input = json!({
        "env": {"HOME": "/root", "OPENAI_API_KEY": "${OPENAI_API_KEY}", "DEBUG": null},
        "run_env_variables": {"A": "x", "B": "${B}"},
        "evaluationEnvironmentEnvVariables": {"C": "secret-c"},
        "resolved_env": {"D": "d"},
        "required_env": ["E_VALUE"],
        "auth": {"user": "bob", "nested": {"deep": "v"}},
    });
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({
            "env": {"HOME": REDACTED, "OPENAI_API_KEY": "${OPENAI_API_KEY}", "DEBUG": null},
            "run_env_variables": {"A": REDACTED, "B": "${B}"},
            "evaluationEnvironmentEnvVariables": {"C": REDACTED},
            "resolved_env": {"D": REDACTED},
            "required_env": [REDACTED],
            "auth": {"user": REDACTED, "nested": {"deep": REDACTED}},
        })
    );
}

#[test]
fn nested_arrays_of_objects_are_walked() {
    let input = json!({
        "models": [
            {"name": "gpt", "api_key": "k1", "params": [{"secret": "s"}, {"temperature": 0.2}]},
            [{"access_key": "ak"}, "plain"],
        ]
    });
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({
            "models": [
                {"name": "gpt", "api_key": REDACTED, "params": [{"secret": REDACTED}, {"temperature": 0.2}]},
                [{"access_key": REDACTED}, "plain"],
            ]
        })
    );
}

#[test]
fn sensitive_key_with_container_value_masks_leaves() {
    let input = json!({
        "sort_key": {"field": "name", "desc": true, "weights": [1, 2]},
        "tokens_list": ["a"],
    });
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({
            "sort_key": {"field": REDACTED, "desc": true, "weights": [REDACTED, REDACTED]},
            "tokens_list": ["a"],
        })
    );
}

#[test]
fn camel_case_and_hyphen_keys_are_normalised() {
    let input = json!({
        "apiKey": "a",
        "X-Api-Key": "b",
        "APIKey": "c",
        "accessToken": "d",
        "Proxy-Authorization": "e",
        "set cookie": "f",
        "tokenId": "g",
        "clientSecret": "h",
        "X_API_KEY": "i",
    });
    let out = redact_value(&input);
    for (key, value) in out.as_object().into_iter().flatten() {
        assert_eq!(value, REDACTED, "key {key} should be masked");
    }
    assert_eq!(normalize_key("apiKey"), "api_key");
    assert_eq!(normalize_key("X-Api-Key"), "x_api_key");
    assert_eq!(normalize_key("Authorization"), "authorization");
    assert_eq!(normalize_key("APIKey"), "api_key");
    assert_eq!(normalize_key("set cookie"), "set_cookie");
    assert_eq!(normalize_key("OPENAI_API_KEY"), "openai_api_key");
}

#[test]
fn numbers_under_sensitive_keys_are_masked() {
    let input = json!({"password": 123456, "pin_secret": 1.5, "token": null, "jwt": false});
    let out = redact_value(&input);
    assert_eq!(
        out,
        json!({"password": REDACTED, "pin_secret": REDACTED, "token": null, "jwt": false})
    );
}

#[test]
fn non_sensitive_keys_are_kept() {
    let input = json!({
        "key_count": 3,
        "monkey": "banana",
        "max_tokens": 4096,
        "maxTokens": 1024,
        "key": "value",
        "model": "gpt-4o",
        "timeout": 30,
        "environment": {"image": "python:3.12"},
    });
    assert_eq!(redact_value(&input), input);
    assert!(!is_sensitive_key("key_count"));
    assert!(!is_sensitive_key("monkey"));
    assert!(!is_sensitive_key("max_tokens"));
}

#[test]
fn sensitive_key_list() {
    for key in [
        "aksk",
        "token_id",
        "authorization",
        "cookie",
        "jwt",
        "password",
        "passwd",
        "proxy_authorization",
        "set_cookie",
        "token",
        "secret",
        "api_key",
        "apikey",
        "access_key",
        "private_key",
        "credential",
        "credentials",
        "openai_api_key",
        "client_secret",
        "refresh_token",
        "id_jwt",
        "db_password",
        "gcp_credential",
    ] {
        assert!(is_sensitive_key(key), "{key} should be sensitive");
    }
}

#[test]
fn input_is_not_mutated() {
    let input = json!({
        "api_key": "sk-1",
        "headers": {"Authorization": "Bearer x"},
        "list": [{"token": "t"}],
    });
    let before = input.clone();
    let out = redact_value(&input);
    assert_eq!(input, before);
    assert_ne!(out, input);
}

#[test]
fn scalars_and_plain_values_pass_through() {
    for value in [
        json!(null),
        json!(true),
        json!(3),
        json!("text"),
        json!([1, "a"]),
    ] {
        assert_eq!(redact_value(&value), value);
    }
}

#[test]
fn secret_paths_and_scrubbed_messages() {
    assert!(is_secret_path("requests[0].model.api_key"));
    assert!(is_secret_path(
        "environments.host_process.env_variables.TOKEN"
    ));
    assert!(!is_secret_path("benchmarks.b.size"));
    assert_eq!(
        scrub_value_from_message("invalid type: integer `98765432`, expected a string"),
        "invalid type: integer, expected a string"
    );
    assert_eq!(
        scrub_value_from_message("invalid value: string \"sk-1\", expected u32"),
        "invalid value: string, expected u32"
    );
    assert_eq!(
        scrub_value_from_message("uses unsupported environment interpolation"),
        "uses unsupported environment interpolation"
    );
}

#[test]
fn redact_text_longest_first() {
    let text = "auth failed for key sk-abcdef-123 (prefix sk-abcdef)";
    let out = redact_text(text, &["sk-abcdef", "sk-abcdef-123"]);
    assert_eq!(out, "auth failed for key ******** (prefix ********)");
}

#[test]
fn redact_text_ignores_short_and_empty_secrets() {
    let text = "a bc def ghij";
    let out = redact_text(text, &["", "a", "bc", "def", "   x  ", "****"]);
    assert_eq!(out, text);
    assert_eq!(redact_text(text, &["ghij"]), "a bc def ********");
}

#[test]
fn redact_text_replaces_every_occurrence() {
    let out = redact_text("tok1234 then tok1234 again", &["tok1234", "tok1234"]);
    assert_eq!(out, "******** then ******** again");
}

mod secret_registry_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registered_secrets_are_scrubbed_from_text_and_values() {
        register_resolved_values(
            &json!({"model": {"api_key": "${K}", "id": "m"}}),
            &json!({"model": {"api_key": "sk-registry-test-777", "id": "m"}}),
        );
        register_secret("abc");
        assert_eq!(
            scrub_text("key sk-registry-test-777 and abc"),
            "key ******** and abc"
        );
        let scrubbed = scrub_value(&json!({"message": ["failed with sk-registry-test-777"]}));
        assert_eq!(scrubbed, json!({"message": ["failed with ********"]}));
    }
}

mod truncation_tests {
    use super::*;

    #[test]
    fn a_secret_at_the_cut_is_masked_whole_and_a_cut_secret_tail_too() {
        let key = "sk-proj-d42c0123456789abcdef0123456789ab";
        register_secret(key);
        // Cutting before scrubbing (the old order) kept the key's first 11 characters here.
        let body = format!(
            "{} \"header\": \"Bearer {key}\" {}",
            "x".repeat(170),
            "y".repeat(100)
        );
        let short = scrub_and_truncate(&body, 200);
        assert!(!short.contains("sk-proj-d4"), "{short}");
        assert!(short.ends_with('…'), "{short}");
        assert_eq!(short.chars().count(), 201);
        // Text another program cut inside the key: the prefix at its end is masked.
        let cut_elsewhere = "Authorization: Bearer sk-proj-d42c01";
        assert_eq!(
            scrub_and_truncate(cut_elsewhere, 200),
            format!("Authorization: Bearer {REDACTED}")
        );
        // Three characters are too few to tell.
        assert_eq!(scrub_and_truncate("ends with sk-", 200), "ends with sk-");
        assert_eq!(scrub_and_truncate("short", 200), "short");
    }
}

//! `deep_merge`: mappings merge by key, anything else from `over` replaces.

use serde_json::Value;

/// Merges `over` onto `base` without mutating either: nested mappings merge by key; a later
/// scalar or list replaces the earlier value; a `null` `over` leaves `base` unchanged.
pub fn deep_merge(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (_, Value::Null) => base.clone(),
        (Value::Object(base_map), Value::Object(over_map)) => {
            let mut merged = base_map.clone();
            for (key, value) in over_map {
                let next = match merged.get(key) {
                    Some(existing) if value.is_object() => deep_merge(existing, value),
                    _ => value.clone(),
                };
                merged.insert(key.clone(), next);
            }
            Value::Object(merged)
        }
        _ => over.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mappings_merge_scalars_and_lists_replace() {
        let base = json!({"a": {"x": 1, "y": [1, 2]}, "b": 1, "keep": true});
        let over = json!({"a": {"y": [3], "z": 2}, "b": {"now": "map"}});
        let merged = deep_merge(&base, &over);
        assert_eq!(
            merged,
            json!({"a": {"x": 1, "y": [3], "z": 2}, "b": {"now": "map"}, "keep": true})
        );
        assert_eq!(
            base,
            json!({"a": {"x": 1, "y": [1, 2]}, "b": 1, "keep": true})
        );
        assert_eq!(deep_merge(&base, &Value::Null), base);
        assert_eq!(
            deep_merge(&json!({"a": 1}), &json!({"a": null})),
            json!({"a": null})
        );
    }
}

//! Tests of lenient reading: each edge reads the way `Value::get` read it.

use serde_json::json;

use super::*;

/// A view with one field of each kind of reading.
#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
struct Probe {
    #[serde(deserialize_with = "lenient")]
    name: Option<String>,
    #[serde(deserialize_with = "lenient")]
    count: u64,
    #[serde(deserialize_with = "present")]
    raw: Option<Value>,
    #[serde(deserialize_with = "maybe_object")]
    inner: Option<Inner>,
    #[serde(deserialize_with = "object")]
    always: Inner,
    #[serde(deserialize_with = "present_object")]
    given: Option<Inner>,
    #[serde(deserialize_with = "objects")]
    items: Option<Vec<Inner>>,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(default)]
struct Inner {
    #[serde(deserialize_with = "lenient")]
    text: String,
}

fn inner(text: &str) -> Inner {
    Inner { text: text.into() }
}

#[test]
fn a_non_object_reads_as_no_view_and_an_array_is_not_read_by_position() {
    for value in [
        json!(null),
        json!(1),
        json!("s"),
        json!(["n", 1]),
        json!([{}]),
    ] {
        assert_eq!(read::<Probe>(&value), None, "{value}");
    }
    assert_eq!(read::<Probe>(&json!({})), Some(Probe::default()));
}

#[test]
fn a_field_of_the_wrong_type_reads_as_absent_and_spoils_no_other() {
    let probe: Probe = read(&json!({"name": 5, "count": "7", "always": {"text": "kept"}})).unwrap();
    assert_eq!(
        probe,
        Probe {
            always: inner("kept"),
            ..Probe::default()
        }
    );
    for count in [
        json!(-1),
        json!(1.0),
        json!(null),
        json!([3]),
        json!({"a": 3}),
    ] {
        let probe: Probe = read(&json!({ "count": count })).unwrap();
        assert_eq!(probe.count, 0, "{count}");
    }
    let probe: Probe = read(&json!({"count": 18446744073709551615u64, "name": "n"})).unwrap();
    assert_eq!((probe.count, probe.name.as_deref()), (u64::MAX, Some("n")));
}

#[test]
fn present_keeps_a_null_apart_from_an_absent_key() {
    let null: Probe = read(&json!({"raw": null, "given": null})).unwrap();
    assert_eq!(
        (null.raw, null.given),
        (Some(Value::Null), Some(Inner::default()))
    );
    let absent: Probe = read(&json!({})).unwrap();
    assert_eq!((absent.raw, absent.given), (None, None));
}

#[test]
fn views_inside_views_read_only_from_objects() {
    let probe: Probe =
        read(&json!({"inner": ["x"], "always": "x", "given": [{"text": "x"}]})).unwrap();
    assert_eq!(
        (probe.inner, probe.always, probe.given),
        (None, Inner::default(), Some(Inner::default()))
    );
    let probe: Probe = read(&json!({"inner": {"text": "a"}, "given": {"text": "b"}})).unwrap();
    assert_eq!(
        (probe.inner, probe.given),
        (Some(inner("a")), Some(inner("b")))
    );
}

#[test]
fn arrays_of_views_keep_every_element_and_other_shapes_read_as_none() {
    let probe: Probe =
        read(&json!({"items": [{"text": "a"}, 1, ["b"], {"text": 2}, null]})).unwrap();
    let items = probe.items.unwrap();
    assert_eq!(items.len(), 5);
    assert_eq!(items[0], inner("a"));
    assert!(items[1..].iter().all(|item| *item == Inner::default()));
    for items in [json!({"0": {"text": "a"}}), json!("a"), json!(null)] {
        let probe: Probe = read(&json!({ "items": items })).unwrap();
        assert_eq!(probe.items, None, "{items}");
    }
}

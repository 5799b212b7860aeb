//! Lenient reading of JSON into typed views, the way `Value::get` reads it: a field of the
//! wrong type reads as absent, and a non-object where a view is expected reads as a view with
//! every field absent. Nothing here fails on a JSON value, so a view never loses a field
//! because another one was malformed.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `value` read as the view `T`; `None` when `value` is not a JSON object.
pub(crate) fn read<'a, T: Deserialize<'a>>(value: &'a Value) -> Option<T> {
    value
        .deserialize_any(ObjectVisitor(PhantomData))
        .ok()
        .flatten()
}

/// A field of any JSON type read as `T`, or `T::default()` when it is not a `T`.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned + Default,
{
    Ok(T::deserialize(Value::deserialize(deserializer)?).unwrap_or_default())
}

/// A field kept as it is, `Some` even when it is `null` (a present key, whatever its value).
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// A present field (even `null`) read as `Some` view `T`, with every field absent when it is
/// not an object.
pub(crate) fn present_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    object(deserializer).map(Some)
}

/// A field read as the view `T` when it is an object, else `None`.
pub(crate) fn maybe_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_any(ObjectVisitor(PhantomData))
}

/// A field read as the view `T`: every field absent when it is not an object.
pub(crate) fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    maybe_object(deserializer).map(Option::unwrap_or_default)
}

/// A field read as an array of views `T` (each non-object element with every field absent);
/// `None` when it is not an array.
pub(crate) fn objects<'de, D, T>(deserializer: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    deserializer.deserialize_any(ArrayVisitor(PhantomData))
}

/// One element of an array of views (see [`objects`]).
struct Element<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Element<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object(deserializer).map(Element)
    }
}

/// Implements the visits of scalars (all read as `$none`) for a visitor of one JSON shape.
macro_rules! scalars_are {
    ($none:expr) => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok($none)
        }
    };
}

/// Reads an object as `Some(T)`, any other JSON value as `None`.
struct ObjectVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(Some)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    scalars_are!(None);
}

/// Reads an array as `Some` of its elements read as views, any other JSON value as `None`.
struct ArrayVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for ArrayVisitor<T> {
    type Value = Option<Vec<T>>;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Element(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Some(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    scalars_are!(None);
}

#[cfg(test)]
mod tests;

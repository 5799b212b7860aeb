//! The run request crosses the boundary with almost every call, and is the same for every
//! task of a run: the host serialises it once per run ([`pin_request_json`]) and each plugin
//! decodes it once per distinct text ([`decode_request`]), instead of once per call (these
//! two conversions were ~11% of the host's and plugins' CPU per QA task).

use std::sync::{Arc, Mutex, PoisonError, RwLock};

use abi_stable::std_types::RString;

use super::json::{from_json, to_json};
use crate::contracts::RunRequest;
use crate::Result;

/// Serialised requests pinned by the host, by address.
static PINNED: RwLock<Vec<(usize, Arc<str>)>> = RwLock::new(Vec::new());

/// Requests a plugin decoded recently, with their text.
static DECODED: Mutex<Vec<(RString, Arc<RunRequest>)>> = Mutex::new(Vec::new());

/// How many distinct requests [`decode_request`] keeps (one per concurrent run is plenty).
const DECODED_KEPT: usize = 8;

/// The JSON of a pinned request, kept while the pin lives. The borrow keeps the request from
/// moving or changing in that time, so the text always matches it.
pub struct PinnedRequest<'a> {
    request: &'a RunRequest,
}

/// Serialises `request` once for every adapter call made while the returned pin lives.
pub fn pin_request_json(request: &RunRequest) -> Result<PinnedRequest<'_>> {
    let text: Arc<str> = Arc::from(to_json(request)?.into_string());
    let mut pinned = PINNED.write().unwrap_or_else(PoisonError::into_inner);
    pinned.push((address(request), text));
    Ok(PinnedRequest { request })
}

impl Drop for PinnedRequest<'_> {
    fn drop(&mut self) {
        let mut pinned = PINNED.write().unwrap_or_else(PoisonError::into_inner);
        let key = address(self.request);
        if let Some(index) = pinned.iter().position(|(at, _)| *at == key) {
            pinned.swap_remove(index);
        }
    }
}

fn address(request: &RunRequest) -> usize {
    std::ptr::from_ref(request) as usize
}

/// `request` as JSON for the boundary: the pinned text when it is pinned, else serialised.
pub(crate) fn request_json(request: &RunRequest) -> Result<RString> {
    let key = address(request);
    let pinned = PINNED.read().unwrap_or_else(PoisonError::into_inner);
    match pinned.iter().find(|(at, _)| *at == key) {
        Some((_, text)) => Ok(RString::from(&**text)),
        None => {
            drop(pinned);
            to_json(request)
        }
    }
}

/// Decodes a request received over the boundary, reusing the decoded value of an identical
/// text seen recently.
pub(crate) fn decode_request(json: &str) -> Result<Arc<RunRequest>> {
    {
        let decoded = DECODED.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, request)) = decoded.iter().find(|(text, _)| text.as_str() == json) {
            return Ok(request.clone());
        }
    }
    let request: Arc<RunRequest> = Arc::new(from_json(json, "run request")?);
    let mut decoded = DECODED.lock().unwrap_or_else(PoisonError::into_inner);
    if decoded.len() >= DECODED_KEPT {
        decoded.remove(0);
    }
    decoded.push((RString::from(json), request.clone()));
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_request_is_served_from_its_text_until_unpinned() {
        let mut request = RunRequest::default();
        request.benchmark.id = "pinned".into();
        let expected = to_json(&request).unwrap();
        {
            let _pin = pin_request_json(&request).unwrap();
            assert_eq!(request_json(&request).unwrap(), expected);
            let other = RunRequest::default();
            assert_eq!(request_json(&other).unwrap(), to_json(&other).unwrap());
        }
        assert!(PINNED
            .read()
            .unwrap()
            .iter()
            .all(|(at, _)| *at != address(&request)));
        request.benchmark.id = "changed".into();
        assert!(request_json(&request).unwrap().contains("changed"));
    }

    #[test]
    fn identical_texts_decode_once_and_different_texts_apart() {
        let mut request = RunRequest::default();
        request.benchmark.id = "decoded-a".into();
        let a = to_json(&request).unwrap();
        request.benchmark.id = "decoded-b".into();
        let b = to_json(&request).unwrap();
        let first = decode_request(&a).unwrap();
        let again = decode_request(&a).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        let other = decode_request(&b).unwrap();
        assert_eq!(other.benchmark.id, "decoded-b");
        assert_eq!(first.benchmark.id, "decoded-a");
        assert!(decode_request("{not json").is_err());
    }
}

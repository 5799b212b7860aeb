//! One call's wait on an endpoint's rate limits, shared by `model.generate` and the relay:
//! each rate-limit answer halves the endpoint's limit and holds it (for `Retry-After`, else
//! the backoff of this many rate limits, at least [`MIN_RATE_LIMIT_HOLD`]); the call is sent
//! again without using up `max_retries` until it has waited `max_rate_limit_wait_seconds`.

use std::time::{Duration, Instant};

use crate::limit::Permit;
use crate::settings::{self, GatewaySettings};
use crate::GatewayError;

/// The shortest hold after a rate-limit answer without `Retry-After`: never a tight loop.
const MIN_RATE_LIMIT_HOLD: Duration = Duration::from_millis(50);

/// The rate-limit answers one call has met so far.
#[derive(Debug, Default)]
pub(crate) struct RateLimitWait {
    /// Rate-limit answers so far.
    answers: u32,
    /// When the first came.
    since: Option<Instant>,
    /// The last one's reason (`answered 429 ...`).
    last: String,
}

/// What to do after a rate-limit answer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Wait for the endpoint's limit and send again.
    SendAgain,
    /// The call has waited `max_rate_limit_wait_seconds`: it fails.
    GiveUp,
}

impl RateLimitWait {
    /// Rate-limit answers so far (re-sends that did not count as retries).
    pub(crate) fn answers(&self) -> u32 {
        self.answers
    }

    /// Records the rate-limit answer `reason` to the request holding `permit`: the endpoint's
    /// limit halves and holds; the verdict says whether the call may wait on.
    pub(crate) fn answered(
        &mut self,
        permit: &Permit,
        settings: &GatewaySettings,
        reason: String,
        retry_after: Option<Duration>,
    ) -> Verdict {
        self.answers += 1;
        let hold = settings
            .backoff(self.answers)
            .clamp(MIN_RATE_LIMIT_HOLD, settings::MAX_BACKOFF);
        permit.rate_limited(retry_after, hold);
        let since = *self.since.get_or_insert_with(Instant::now);
        self.last = reason;
        if since.elapsed() >= settings.max_rate_limit_wait {
            Verdict::GiveUp
        } else {
            Verdict::SendAgain
        }
    }

    /// The failure of a call that gave up, naming `url`.
    pub(crate) fn give_up(self, url: &str) -> GatewayError {
        GatewayError::RateLimited {
            url: url.to_string(),
            waited_seconds: self
                .since
                .map_or(0.0, |since| since.elapsed().as_secs_f64()),
            last: self.last,
            answers: self.answers,
        }
    }
}

//! The viewer's errors: each maps to one HTTP status with a `{"error": "..."}` body.

/// A request the viewer cannot answer.
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    /// Nothing at that path (or a path that leaves the results root): 404.
    #[error("not found: {0}")]
    NotFound(String),
    /// A parameter is missing or malformed: 400.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// A control request without the viewer's secret, or to a read-only viewer: 403.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A control request the run cannot take (it is not running, it refused): 409.
    #[error("{0}")]
    Conflict(String),
    /// Reading the results failed: 500.
    #[error("{0}")]
    Internal(String),
}

impl ViewerError {
    /// The HTTP status code of this error.
    pub fn status(&self) -> u16 {
        match self {
            ViewerError::NotFound(_) => 404,
            ViewerError::BadRequest(_) => 400,
            ViewerError::Forbidden(_) => 403,
            ViewerError::Conflict(_) => 409,
            ViewerError::Internal(_) => 500,
        }
    }
}

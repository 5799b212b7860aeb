//! A session that closes itself when the test holding it ends, even by a panic.

use crate::sdk::SessionRef;

/// An open session, closed (with [`super::block_on`]) when dropped, so a failing test leaves
/// no container or directory behind. Derefs to the session.
pub struct ClosedOnDrop(pub SessionRef);

impl std::ops::Deref for ClosedOnDrop {
    type Target = SessionRef;

    fn deref(&self) -> &SessionRef {
        &self.0
    }
}

impl Drop for ClosedOnDrop {
    fn drop(&mut self) {
        let _ = super::block_on(self.0.close());
    }
}

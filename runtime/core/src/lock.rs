//! Locking shared runtime state.

use std::sync::{Mutex, MutexGuard};

/// The guarded value, even if a holder panicked (the state stays usable for the drain).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

//! Where long work of the store that holds no lock may pause (a large session's
//! first parse, between two chunks): `point`. Which threads pause there, and how, is
//! said from above (`background::Background::enter` of idle work: it waits while the
//! mount serves someone); the store knows nothing of the mount, and on a thread that
//! said nothing a point is nothing. Code that holds what a request may wait for
//! says so (`Holding`), and the thread does not pause meanwhile: a request would
//! then wait for background work.

use std::cell::{Cell, RefCell};

thread_local! {
    static PAUSE: RefCell<Option<Box<dyn Fn()>>> = const { RefCell::new(None) };
    static HOLDING: Cell<u32> = const { Cell::new(0) };
}

/// This thread pauses at each `point` by calling `pause`.
pub fn pause_with(pause: impl Fn() + 'static) {
    PAUSE.with(|p| *p.borrow_mut() = Some(Box::new(pause)));
}

/// A point where this thread holds no lock: it pauses if it was told how, and holds
/// nothing a request may wait for.
pub fn point() {
    if HOLDING.with(Cell::get) > 0 {
        return;
    }
    PAUSE.with(|p| {
        if let Some(pause) = p.borrow().as_ref() {
            pause();
        }
    });
}

/// While alive, `point` does not pause on this thread: it holds a lock a request of
/// the mount may wait for. Taken before such a lock, by the code that takes it.
pub struct Holding(());

impl Holding {
    pub fn now() -> Holding {
        HOLDING.with(|h| h.set(h.get() + 1));
        Holding(())
    }
}

impl Drop for Holding {
    fn drop(&mut self) {
        HOLDING.with(|h| h.set(h.get() - 1));
    }
}

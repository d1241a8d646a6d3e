//! The guest's one source of randomness: `getrandom`, the 16 bytes
//! `AT_RANDOM` points to, and reads of `/dev/urandom` and `/dev/random` all
//! take the next bytes of one ChaCha stream seeded by `--seed`, so a
//! program that seeds itself from any of them (perl's hash seed, Python's,
//! OpenSSL's) runs the same instructions on every run. A `fork` child
//! continues a copy of its parent's stream; an `execve` keeps it.

use std::cell::RefCell;
use std::rc::Rc;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A handle on a process's random stream; clones share it.
#[derive(Debug, Clone)]
pub struct RandomStream(Rc<RefCell<ChaCha8Rng>>);

impl RandomStream {
    /// The stream `seed` gives.
    pub fn new(seed: u64) -> RandomStream {
        RandomStream(Rc::new(RefCell::new(ChaCha8Rng::seed_from_u64(seed))))
    }

    /// A stream of its own that starts where this one is now (a `fork`
    /// child's).
    pub fn fork(&self) -> RandomStream {
        RandomStream(Rc::new(RefCell::new(self.0.borrow().clone())))
    }

    /// Fills `buf` with the next bytes.
    pub fn fill(&self, buf: &mut [u8]) {
        self.0.borrow_mut().fill_bytes(buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_stream_and_a_fork_copies_it() {
        let a = RandomStream::new(7);
        let b = a.clone();
        let (mut x, mut y) = ([0u8; 8], [0u8; 8]);
        a.fill(&mut x);
        let child = b.fork();
        b.fill(&mut y);
        assert_ne!(x, y, "b went on where a stopped");
        let mut z = [0u8; 8];
        child.fill(&mut z);
        assert_eq!(y, z, "the fork started where the stream was");
        let mut again = [0u8; 8];
        RandomStream::new(7).fill(&mut again);
        assert_eq!(x, again, "the seed decides");
    }
}

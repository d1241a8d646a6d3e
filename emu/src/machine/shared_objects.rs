//! Shared objects parsed once per run: every process image of a run that
//! maps the same library file at the same address, or starts with the same
//! dynamic linker, gets the same parsed [`Binary`], so its symbols are
//! read, and its debug information inflated and indexed, once for the
//! whole run instead of once per image (a shell running ten programs read
//! glibc's and the dynamic linker's DWARF ten times).
//!
//! An entry is reused only for the same path, the same place and the same
//! bytes (compared in full), so what an image is symbolicated with is
//! exactly what it mapped.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use emuprof_loader::Binary;

/// Where an object is placed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// A library, its lowest page at this address.
    At(u64),
    /// The dynamic linker, at the place its size gives it
    /// ([`emuprof_loader::place_interpreter`]).
    Interpreter,
}

/// The run's parsed shared objects; clones share them.
#[derive(Debug, Clone, Default)]
pub struct SharedObjects {
    parsed: Arc<Mutex<Vec<Parsed>>>,
}

#[derive(Debug)]
struct Parsed {
    path: PathBuf,
    placement: Placement,
    binary: Arc<Binary>,
}

impl SharedObjects {
    /// The object `path` holding `bytes`, placed as `placement`: parsed by
    /// an earlier image of the run, or now with `parse`.
    pub fn get_or_parse<B: AsRef<[u8]>, E>(
        &self,
        path: &Path,
        placement: Placement,
        bytes: B,
        parse: impl FnOnce(B) -> Result<Binary, E>,
    ) -> Result<Arc<Binary>, E> {
        let mut parsed = self.lock();
        let found = parsed.iter().find(|p| {
            p.placement == placement && p.path == path && *p.binary.file == *bytes.as_ref()
        });
        if let Some(hit) = found {
            return Ok(Arc::clone(&hit.binary));
        }
        let binary = Arc::new(parse(bytes)?);
        parsed.push(Parsed {
            path: path.to_path_buf(),
            placement,
            binary: Arc::clone(&binary),
        });
        Ok(binary)
    }

    /// Keeps `binary`, parsed elsewhere from the file `path`, for the
    /// images that follow.
    pub fn remember(&self, path: &Path, placement: Placement, binary: &Arc<Binary>) {
        self.lock().push(Parsed {
            path: path.to_path_buf(),
            placement,
            binary: Arc::clone(binary),
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Parsed>> {
        // A poisoned lock only means an image panicked while parsing: the
        // entries are still whole.
        self.parsed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn library() -> Vec<u8> {
        std::fs::read("/lib/x86_64-linux-gnu/libc.so.6").expect("glibc")
    }

    const BASE: u64 = 0x7fff_f000_0000;

    fn parse_at(base: u64) -> impl FnOnce(Vec<u8>) -> Result<Binary, String> {
        move |bytes| {
            emuprof_loader::load_shared_object(Arc::from(bytes), base).map_err(|e| e.to_string())
        }
    }

    #[test]
    fn the_same_file_at_the_same_place_is_parsed_once() {
        let objects = SharedObjects::default();
        let path = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let first = objects.get_or_parse(path, Placement::At(BASE), library(), parse_at(BASE));
        let again = objects.get_or_parse(path, Placement::At(BASE), library(), |_| {
            Err::<Binary, String>("parsed twice".into())
        });
        assert!(Arc::ptr_eq(
            &first.expect("parsed"),
            &again.expect("reused")
        ));
    }

    #[test]
    fn other_bytes_or_another_place_are_parsed_anew() {
        let objects = SharedObjects::default();
        let path = Path::new("/lib/x86_64-linux-gnu/libc.so.6");
        let first = objects
            .get_or_parse(path, Placement::At(BASE), library(), parse_at(BASE))
            .expect("parsed");
        let mut changed = library();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        let other = objects
            .get_or_parse(path, Placement::At(BASE), changed, parse_at(BASE))
            .expect("parsed");
        assert!(!Arc::ptr_eq(&first, &other));
        let elsewhere = BASE - 0x1000_0000;
        let moved = objects
            .get_or_parse(
                path,
                Placement::At(elsewhere),
                library(),
                parse_at(elsewhere),
            )
            .expect("parsed");
        assert!(!Arc::ptr_eq(&first, &moved));
    }
}

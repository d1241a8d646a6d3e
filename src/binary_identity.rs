//! Whether a binary on disk is the one a profile was recorded from.
//!
//! A run records the program's GNU build id (when it has one), its size and
//! the SHA-256 of its bytes (`objects[0]`). A binary read later for the
//! profile's symbols, lines or instructions must match every one of them
//! that was recorded: after a rebuild, the file at the same path is another
//! program, and its functions would silently stand for the profiled ones.

use std::path::Path;

use emuprof_analysis::{LoadedObject, Profile};
use emuprof_loader::Binary;
use sha2::{Digest, Sha256};

/// The size and SHA-256 (hex) of `bytes`.
fn of_bytes(bytes: &[u8]) -> (u64, String) {
    let hex = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    (bytes.len() as u64, hex)
}

/// Records the size and SHA-256 of `binary`'s file, as it was read to
/// run, in `object`.
pub fn record(object: &mut LoadedObject, binary: &Binary) {
    let (size, sha256) = of_bytes(&binary.file);
    object.size = Some(size);
    object.sha256 = Some(sha256);
}

/// Checks `binary`, loaded from `path`, against the program the profile
/// records (`objects[0]`); `Err` says how they differ. A profile that
/// records nothing to compare with (written before objects were recorded)
/// accepts any binary.
pub fn check(profile: &Profile, path: &Path, binary: &Binary) -> Result<(), String> {
    let Some(recorded) = profile.objects.first() else {
        return Ok(());
    };
    let differs = |what: String| {
        Err(format!(
            "{} is not the binary this profile was recorded from ({}): {what}",
            path.display(),
            recorded.path
        ))
    };
    if let Some(id) = &recorded.build_id {
        if binary.build_id.as_ref() != Some(id) {
            let found = binary.build_id.as_deref().unwrap_or("none");
            return differs(format!("its build id is {found}, the profile's {id}"));
        }
    }
    if let (Some(size), Some(sha256)) = (recorded.size, &recorded.sha256) {
        let (found_size, found_sha256) = of_bytes(&binary.file);
        if found_size != size || &found_sha256 != sha256 {
            return differs(format!(
                "its contents differ ({found_size} bytes, SHA-256 {}…; the profile's: {size} \
                 bytes, SHA-256 {}…)",
                &found_sha256[..12.min(found_sha256.len())],
                &sha256[..12.min(sha256.len())]
            ));
        }
    }
    Ok(())
}

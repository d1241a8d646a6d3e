//! Strings read from a profile file are bounded: a command-line argument
//! or a function name longer than [`MAX_PROFILE_STRING`] makes the file
//! unreadable instead of a string every later step copies (a hostile
//! profile's 1 GB command line made `diff` peak at five times that).
//! emuprof never writes one that long: Linux caps an argument at 128 KiB,
//! and names are demangled within 64 KiB.

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// The longest string of a profile's command line or names, in bytes.
pub const MAX_PROFILE_STRING: usize = 1 << 20;

/// A string checked against [`MAX_PROFILE_STRING`] before it is copied.
struct Bounded(String);

impl<'de> Deserialize<'de> for Bounded {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(BoundedVisitor).map(Bounded)
    }
}

struct BoundedVisitor;

impl BoundedVisitor {
    fn check<E: de::Error>(len: usize) -> Result<(), E> {
        if len > MAX_PROFILE_STRING {
            return Err(E::custom(format!(
                "a string of {len} bytes, longer than the {} MiB emuprof reads",
                MAX_PROFILE_STRING >> 20
            )));
        }
        Ok(())
    }
}

impl<'de> Visitor<'de> for BoundedVisitor {
    type Value = String;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "a string of at most {MAX_PROFILE_STRING} bytes")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<String, E> {
        Self::check(text.len())?;
        Ok(text.to_owned())
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<String, E> {
        Self::check(text.len())?;
        Ok(text)
    }
}

/// `#[serde(deserialize_with)]` for one bounded string.
pub fn string<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Bounded::deserialize(deserializer).map(|b| b.0)
}

/// `#[serde(deserialize_with)]` for a list of bounded strings.
pub fn strings<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    Vec::<Bounded>::deserialize(deserializer).map(|list| list.into_iter().map(|b| b.0).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Probe {
        #[serde(deserialize_with = "strings")]
        command: Vec<String>,
    }

    #[test]
    fn strings_past_the_bound_are_refused() {
        let fits = "x".repeat(MAX_PROFILE_STRING);
        let json = format!(r#"{{"command":["{fits}","a\nb"]}}"#);
        let probe: Probe = serde_json::from_str(&json).expect("within the bound");
        assert_eq!(probe.command[1], "a\nb");
        let json = format!(r#"{{"command":["{fits}y"]}}"#);
        let err = serde_json::from_slice::<Probe>(json.as_bytes())
            .err()
            .expect("past the bound");
        assert!(
            err.to_string()
                .starts_with("a string of 1048577 bytes, longer than the 1 MiB emuprof reads"),
            "{err}"
        );
    }
}

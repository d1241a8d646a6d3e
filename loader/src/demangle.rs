//! Turning linker symbol names back into the names programmers wrote.
//!
//! Rust names (legacy `_ZN…17h<hash>E` and v0 `_R…`) go through `rustc-demangle`
//! and lose their hash suffix; C++ names (`_Z…`) go through `cpp_demangle`;
//! anything else, or anything that does not demangle, is returned unchanged.

use cpp_demangle::{DemangleOptions, ParseOptions};

/// Deepest nesting `cpp_demangle` may recurse into, so a hostile symbol name
/// cannot exhaust the stack.
const CPP_RECURSION_LIMIT: u32 = 96;

/// Longest demangled name kept. Back-references let a 40 KB mangled name
/// expand to gigabytes; past this the raw name is used instead.
pub const MAX_DEMANGLED_LEN: usize = 64 * 1024;

/// The demangled form of a symbol name, or the name itself when it is not mangled.
///
/// ```
/// use emuprof_loader::demangle;
/// assert_eq!(demangle("_ZN4core3fmt5write17h0123456789abcdefE"), "core::fmt::write");
/// assert_eq!(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"), "std::vector<int, std::allocator<int> >::push_back(int const&)");
/// assert_eq!(demangle("main"), "main");
/// ```
pub fn demangle(raw: &str) -> String {
    if let Ok(rust) = rustc_demangle::try_demangle(raw) {
        // `{:#}` leaves out the `::h<hash>` suffix.
        return format!("{rust:#}");
    }
    if raw.starts_with("_Z") {
        if let Some(cpp) = demangle_cpp(raw) {
            return cpp;
        }
    }
    raw.to_string()
}

fn demangle_cpp(raw: &str) -> Option<String> {
    let parse_options = ParseOptions::default().recursion_limit(CPP_RECURSION_LIMIT);
    let symbol = cpp_demangle::Symbol::new_with_options(raw, &parse_options).ok()?;
    let demangle_options = DemangleOptions::default().recursion_limit(CPP_RECURSION_LIMIT);
    let mut out = BoundedString(String::new());
    symbol
        .structured_demangle(&mut out, &demangle_options)
        .ok()?;
    Some(out.0)
}

/// A string that refuses to grow past [`MAX_DEMANGLED_LEN`]: the write error
/// stops the demangler early.
struct BoundedString(String);

impl std::fmt::Write for BoundedString {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.0.len() + s.len() > MAX_DEMANGLED_LEN {
            return Err(std::fmt::Error);
        }
        self.0.push_str(s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn rust_legacy_names_lose_their_hash() {
        assert_eq!(
            demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h1b2c3d4e5f607182E"),
            "std::rt::lang_start::{{closure}}"
        );
    }

    #[test]
    fn rust_v0_names_demangle() {
        assert_eq!(demangle("_RNvCs1234_7mycrate4main"), "mycrate::main");
    }

    #[test]
    fn cpp_names_demangle() {
        assert_eq!(demangle("_Z3fooi"), "foo(int)");
        assert_eq!(
            demangle("_ZN9Namespace5Klass6methodEv"),
            "Namespace::Klass::method()"
        );
    }

    #[test]
    fn plain_and_broken_names_stay_as_they_are() {
        assert_eq!(demangle("__libc_start_main"), "__libc_start_main");
        assert_eq!(demangle("_Z"), "_Z");
        assert_eq!(demangle("_ZN"), "_ZN");
        assert_eq!(demangle(""), "");
    }

    #[test]
    fn deeply_nested_hostile_names_do_not_overflow_the_stack() {
        let hostile = format!("_Z{}", "PPPPPPPPPP".repeat(2000));
        let _ = demangle(&hostile);
    }
}

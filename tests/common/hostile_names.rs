//! Hostile symbol names for the demangling tests, shared by the workspace's
//! test crates (the loader's tests include this file by path).

/// A C++ mangled name whose template arguments each repeat the previous one
/// twice through substitutions (`S<2k-1>_`): the demangled text doubles with
/// every one of its 40 levels, terabytes in all.
pub fn exponential_mangled_name() -> String {
    mangled_name_of_depth(40)
}

/// The same shape with `levels` levels (a few still demangle).
pub fn mangled_name_of_depth(levels: u32) -> String {
    let mut raw = String::from("_Z1fI1XIiiE");
    for k in 1..=levels {
        let s = base36(2 * k - 1);
        raw.push_str(&format!("1XIS{s}_S{s}_E"));
    }
    raw.push_str("Evv");
    raw
}

/// `n` in the base-36 digits of mangled substitutions.
fn base36(mut n: u32) -> String {
    let digits = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut s = Vec::new();
    loop {
        s.insert(0, digits[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            return String::from_utf8(s).expect("ascii");
        }
    }
}

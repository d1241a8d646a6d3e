//! Cache geometries: Valgrind's `size,assoc,line` syntax, its checks, and
//! the defaults (one named CPU, not the host's: profiles must not depend on
//! the machine that ran them).

use emuprof_model::{CacheConfig, CacheGeometry};

/// The default caches: Intel Skylake client (Core i7-6700), as its CPUID
/// leaf 4 reports them: 32 KiB 8-way L1i and L1d, 8 MiB 16-way L3 (the
/// last level; the 256 KiB L2 is not simulated, as Cachegrind simulates two
/// levels), 64-byte lines.
pub const SKYLAKE: CacheConfig = CacheConfig {
    i1: CacheGeometry {
        size: 32 * 1024,
        assoc: 8,
        line: 64,
    },
    d1: CacheGeometry {
        size: 32 * 1024,
        assoc: 8,
        line: 64,
    },
    ll: CacheGeometry {
        size: 8 * 1024 * 1024,
        assoc: 16,
        line: 64,
    },
};

/// Reads `size,assoc,line` (bytes, ways, bytes), as Valgrind's `--I1`,
/// `--D1` and `--LL` take it, and checks it.
pub fn parse(text: &str) -> Result<CacheGeometry, String> {
    let numbers: Vec<&str> = text.split(',').map(str::trim).collect();
    let [size, assoc, line] = numbers.as_slice() else {
        return Err(format!(
            "cache geometry {text:?} is not size,assoc,line (e.g. 32768,8,64)"
        ));
    };
    let number = |n: &str| {
        n.parse::<u64>()
            .map_err(|_| format!("cache geometry {text:?}: {n:?} is not a number"))
    };
    let geometry = CacheGeometry {
        size: number(size)?,
        assoc: number(assoc)?,
        line: number(line)?,
    };
    check(geometry).map_err(|why| format!("cache geometry {text:?}: {why}"))?;
    Ok(geometry)
}

/// Valgrind's rules: every number positive, the line size a power of two
/// of at least 16 bytes, the size a multiple of `assoc × line` and the
/// number of sets a power of two.
pub fn check(g: CacheGeometry) -> Result<(), String> {
    if g.size == 0 || g.assoc == 0 || g.line == 0 {
        return Err("size, associativity and line size must be positive".into());
    }
    if !g.line.is_power_of_two() || g.line < 16 {
        return Err(format!(
            "line size {} is not a power of two of at least 16",
            g.line
        ));
    }
    if !g.size.is_multiple_of(g.assoc * g.line) {
        return Err(format!(
            "size {} is not a multiple of associativity × line size ({})",
            g.size,
            g.assoc * g.line
        ));
    }
    let sets = g.size / (g.assoc * g.line);
    if !sets.is_power_of_two() {
        return Err(format!("{sets} sets is not a power of two"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valgrind_syntax_is_read_and_checked() {
        assert_eq!(parse("32768,8,64"), Ok(SKYLAKE.d1));
        assert!(parse("32768,8").unwrap_err().contains("size,assoc,line"));
        assert!(parse("32768,8,48").unwrap_err().contains("power of two"));
        assert!(parse("3000,8,64").unwrap_err().contains("multiple"));
        assert!(parse("24576,8,64").unwrap_err().contains("sets"));
        for g in [SKYLAKE.i1, SKYLAKE.d1, SKYLAKE.ll] {
            assert_eq!(check(g), Ok(()));
        }
    }
}

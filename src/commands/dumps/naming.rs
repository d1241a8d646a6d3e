//! Where part N of a run goes: next to the final profile, numbered.

use std::path::{Path, PathBuf};

/// Part `index` of the run whose final profile goes to `output`:
/// `out.json` → `out.3.json`, `out` → `out.3`; standard output (`-`) →
/// `emuprof.3.json`.
pub fn part_path(output: &Path, index: u32) -> PathBuf {
    if output.as_os_str() == "-" {
        return PathBuf::from(format!("emuprof.{index}.json"));
    }
    let stem = output
        .file_stem()
        .map_or_else(|| "emuprof".into(), |s| s.to_string_lossy().into_owned());
    let name = match output.extension() {
        Some(ext) => format!("{stem}.{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}.{index}"),
    };
    output.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_numbered_before_the_extension() {
        assert_eq!(
            part_path(Path::new("dir/out.json"), 3),
            Path::new("dir/out.3.json")
        );
        assert_eq!(part_path(Path::new("out"), 1), Path::new("out.1"));
        assert_eq!(part_path(Path::new("-"), 2), Path::new("emuprof.2.json"));
    }
}

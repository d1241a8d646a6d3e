//! Every crate of the workspace has what `cargo publish` requires and a
//! reader of crates.io expects: a description, a licence, a README that
//! exists, and a version on every dependency given by path (a path alone is
//! refused by `cargo publish`). `cargo publish --workspace --dry-run` (README,
//! "Publishing") needs crates.io and builds every crate again, so it is not
//! run here; this checks the manifests it reads, through `cargo metadata`.

use crate::common;

#[test]
fn every_crate_has_publish_metadata_and_versioned_path_dependencies() {
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--offline",
        ])
        .current_dir(common::repo_root())
        .output()
        .expect("run cargo metadata");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let names: Vec<&str> = packages.iter().filter_map(|p| p["name"].as_str()).collect();
    for expected in [
        "emuprof",
        "emuprof-loader",
        "emuprof-model",
        "emuprof-emu",
        "emuprof-analysis",
    ] {
        assert!(names.contains(&expected), "{expected} is not in {names:?}");
    }
    for package in packages {
        let name = package["name"].as_str().expect("name");
        for field in ["description", "license"] {
            assert!(
                package[field].as_str().is_some_and(|v| !v.is_empty()),
                "{name} has no {field}"
            );
        }
        let manifest = std::path::Path::new(package["manifest_path"].as_str().expect("manifest"));
        let readme = package["readme"]
            .as_str()
            .unwrap_or_else(|| panic!("{name} has no README"));
        let readme = manifest.parent().expect("package directory").join(readme);
        assert!(readme.is_file(), "{name}: {} is missing", readme.display());
        for dependency in package["dependencies"].as_array().expect("dependencies") {
            if dependency["path"].is_string() && dependency["kind"].is_null() {
                assert_ne!(
                    dependency["req"].as_str(),
                    Some("*"),
                    "{name} depends on {} by path without a version; cargo publish refuses it",
                    dependency["name"]
                );
            }
        }
    }
}

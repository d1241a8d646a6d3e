//! The README's library example is the one `cargo test --doc` compiles (the
//! doc comment of `ReadmeExample` in `src/lib.rs`): the two texts are equal.

use crate::common;

/// The first ` ```rust,no_run ` block of `text`, fences included.
fn rust_block(text: &str) -> Option<&str> {
    let start = text.find("```rust,no_run\n")?;
    let body = start + "```rust,no_run\n".len();
    let end = body + text[body..].find("```")?;
    Some(&text[start..end + 3])
}

#[test]
fn readme_library_example_is_the_compiled_doc_test() {
    let root = common::repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).expect("read src/lib.rs");
    let doc: String = lib
        .lines()
        .filter_map(|line| line.strip_prefix("///"))
        .map(|line| format!("{}\n", line.strip_prefix(' ').unwrap_or(line)))
        .collect();
    let readme_block = rust_block(&readme).expect("README.md has a ```rust,no_run example");
    let doc_block = rust_block(&doc).expect("src/lib.rs documents ReadmeExample");
    assert_eq!(readme_block, doc_block, "README.md and src/lib.rs differ");
}

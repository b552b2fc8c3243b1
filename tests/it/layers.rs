//! The top-level modules depend one way: each names (`crate::name`) only modules of lower
//! layers, so there is no cycle between them. docs/architecture.md ("Module graph") draws it.

use std::path::{Path, PathBuf};

/// From the bottom up. A module may name the modules of the layers below its own, never one
/// of its own layer or above.
const LAYERS: &[&[&str]] = &[
    &["event", "migrations", "states", "web"],
    &["response"],
    &["ingest"],
    &["projection"],
    &["coordination"],
    &["config"],
    &["store"],
    &["stream"],
    &["follow", "jetstream", "notify"],
    &["http"],
    // The crate root's `App` (src/lib.rs) ties the service together: the CLI serves through it.
    &["App"],
    &["forward"],
    &["bench"],
    &["cli"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level modules `line` names as `crate::name` (comments left out).
fn named(line: &str) -> Vec<&str> {
    let code = line.split("//").next().unwrap_or("");
    code.match_indices("crate::")
        .map(|(at, _)| {
            let rest = &code[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn every_top_level_module_names_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_string();
            (p.is_dir() || p.extension().is_some_and(|e| e == "rs")).then_some(name)
        })
        .filter(|name| name != "lib" && name != "main")
        .collect();
    modules.sort();
    modules.dedup();
    let mut wrong = Vec::new();
    for module in &modules {
        let own = layer(module).unwrap_or_else(|| panic!("src/{module} is in no layer of LAYERS"));
        let mut files = Vec::new();
        let dir = src.join(module);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
        let file = src.join(format!("{module}.rs"));
        if file.is_file() {
            files.push(file);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                for target in named(line) {
                    if target == module.as_str() {
                        continue;
                    }
                    match layer(target) {
                        Some(theirs) if theirs < own => {}
                        _ => wrong.push(format!(
                            "{}:{}: {module} names crate::{target}",
                            file.strip_prefix(&src).unwrap().display(),
                            n + 1
                        )),
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules name their layer or a higher one:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_scan_sees_what_a_line_names() {
    assert_eq!(
        named("use crate::store::{Store, read}; // crate::http"),
        ["store"]
    );
    assert_eq!(
        named("let x = crate::event::time::now() + crate::config::X;"),
        ["event", "config"]
    );
    assert!(named("/// crate::store is above").is_empty());
}

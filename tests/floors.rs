//! The house stays one-way: every module of the crate stands on a floor written once, in the
//! first code block of `docs/architecture.md` (`floor N  src/name.rs` or `src/name/`), and may
//! use only modules on floors below its own (`crate::name` in its code, `use crate::{…}`
//! groups included); inside each folder the files use each other one way too (no circle
//! through `super::`, `crate::folder::` or the folder's `mod.rs` re-exports). Test modules
//! (`#[cfg(test)] mod …`) and comments are not read: they are not what the house is built of.
//!
//! The checker works on file texts in memory, so its own tests plant an upward import in a
//! small tree and see it caught.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One source file: its path from the crate root (`src/arena/mod.rs`) and its text.
struct File {
    path: String,
    text: String,
}

/// Module name -> floor, from the first code block of the architecture document whose first
/// line starts with `floor`.
fn parse_floors(doc: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut floors = BTreeMap::new();
    let mut in_block = false;
    let mut current = None;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            if in_block {
                break;
            }
            in_block = true;
            current = None;
            continue;
        }
        if !in_block {
            continue;
        }
        if let Some(rest) = line.strip_prefix("floor ") {
            let number = rest.split_whitespace().next().unwrap_or("");
            current = Some(
                number
                    .parse::<u32>()
                    .map_err(|_| format!("not a floor number: {line:?}"))?,
            );
        } else if current.is_none() {
            // Another code block came first: look for the next.
            in_block = false;
            continue;
        }
        let floor = current.expect("set above");
        for word in line.split_whitespace() {
            let word = word.trim_matches(|c: char| c == ',' || c == '(' || c == ')');
            let Some(name) = word.strip_prefix("src/") else {
                continue;
            };
            let module = name
                .strip_suffix(".rs")
                .or_else(|| name.strip_suffix('/'))
                .ok_or_else(|| format!("{word}: a floor holds `src/name.rs` or `src/name/`"))?;
            if let Some(before) = floors.insert(module.to_string(), floor)
                && before != floor
            {
                return Err(format!("{module} is on floors {before} and {floor}"));
            }
        }
    }
    if floors.is_empty() {
        return Err("no code block starting with `floor N` in the architecture document".into());
    }
    Ok(floors)
}

/// The text that builds the crate: comments and `#[cfg(test)] mod … { … }` blocks removed
/// (a test module ends at the first line that closes it at its own indentation, as rustfmt
/// writes it).
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            let indent = &line[..line.len() - line.trim_start().len()];
            if let Some(next) = lines.peek()
                && next.trim_start().contains("mod ")
                && next.trim_end().ends_with('{')
            {
                let close = format!("{indent}}}");
                for inner in lines.by_ref() {
                    if inner.trim_end() == close {
                        break;
                    }
                }
                continue;
            }
        }
        out.push_str(strip_comment(line));
        out.push('\n');
    }
    out
}

/// The line up to a `//` that is not inside a string.
fn strip_comment(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The first path segment after every `prefix` (`crate::`, `super::`) in `code`, with `{…}`
/// groups opened: `use crate::{a::x, b}` names `a` and `b`.
fn segments_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => item_start = true,
                    c if item_start && is_ident(c) => {
                        let name: String =
                            group[i..].chars().take_while(|&c| is_ident(c)).collect();
                        out.push(name);
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
    }
    out
}

/// Whether `code` names the child module `name` by a path (`name::`, `self::name::`), as a
/// folder's `mod.rs` does when it re-exports or uses a file of its folder.
fn names_child(code: &str, name: &str) -> bool {
    let pattern = format!("{name}::");
    let mut rest = code;
    while let Some(at) = rest.find(&pattern) {
        let before = rest[..at].chars().next_back();
        let ok = match before {
            None => true,
            Some(c) if is_ident(c) => false,
            Some(':') => rest[..at].ends_with("self::"),
            Some(_) => true,
        };
        if ok {
            return true;
        }
        rest = &rest[at + pattern.len()..];
    }
    false
}

/// `src/a/b.rs` and `src/a/b/c.rs` -> ("a", Some("b")); `src/a.rs` and `src/a/mod.rs` -> ("a", None).
fn module_of(path: &str) -> Result<(String, Option<String>), String> {
    let inner = path
        .strip_prefix("src/")
        .and_then(|p| p.strip_suffix(".rs"))
        .ok_or_else(|| format!("{path}: not a source file"))?;
    let parts: Vec<&str> = inner.split('/').collect();
    match parts.as_slice() {
        [top] => Ok((top.to_string(), None)),
        [top, "mod"] => Ok((top.to_string(), None)),
        [top, file] => Ok((top.to_string(), Some(file.to_string()))),
        // A folder inside a folder is one file of its parent's: its files' imports count as
        // the sub-folder's (one-way inside it is the sub-folder's own affair).
        [top, sub, ..] => Ok((top.to_string(), Some(sub.to_string()))),
        _ => Err(format!(
            "{path}: a folder inside a folder; teach tests/floors.rs its files"
        )),
    }
}

/// Every way the files break the floors, one line each; empty when the house is one-way.
fn violations(files: &[File], floors: &BTreeMap<String, u32>) -> Vec<String> {
    let mut found = Vec::new();
    // Folder -> file (None: its mod.rs or folder.rs) -> the folder's files it uses.
    let mut folders: BTreeMap<String, BTreeMap<Option<String>, BTreeSet<Option<String>>>> =
        BTreeMap::new();
    let mut modules = BTreeSet::new();
    for file in files {
        if file.path == "src/main.rs" || file.path == "src/lib.rs" {
            continue;
        }
        let (top, child) = match module_of(&file.path) {
            Ok(m) => m,
            Err(e) => {
                found.push(e);
                continue;
            }
        };
        modules.insert(top.clone());
        let Some(&floor) = floors.get(&top) else {
            found.push(format!(
                "{}: module `{top}` has no floor in docs/architecture.md",
                file.path
            ));
            continue;
        };
        let code = code_of(&file.text);
        for used in segments_after(&code, "crate::") {
            if used == top {
                continue;
            }
            match floors.get(&used) {
                None => found.push(format!(
                    "{}: uses `crate::{used}`, which has no floor in docs/architecture.md",
                    file.path
                )),
                Some(&other) if other >= floor => found.push(format!(
                    "{}: module `{top}` (floor {floor}) uses `crate::{used}` (floor {other}), \
                     which is not below it",
                    file.path
                )),
                Some(_) => {}
            }
        }
        folders
            .entry(top)
            .or_default()
            .insert(child, BTreeSet::new());
    }
    for missing in floors.keys().filter(|m| !modules.contains(*m)) {
        found.push(format!(
            "docs/architecture.md puts `src/{missing}` on a floor, but there is no such module"
        ));
    }
    // Inside each folder: which of its files each file uses.
    for file in files {
        let Ok((top, child)) = module_of(&file.path) else {
            continue;
        };
        let Some(folder) = folders.get(&top) else {
            continue;
        };
        let children: BTreeSet<String> = folder.keys().flatten().cloned().collect();
        if children.is_empty() {
            continue;
        }
        let code = code_of(&file.text);
        let mut uses = BTreeSet::new();
        let from_folder = segments_after(&code, &format!("crate::{top}::"));
        match &child {
            Some(me) => {
                // In a sub-folder's own files `super::` is the sub-folder, not this folder.
                let nested = file.path.matches('/').count() >= 3 && !file.path.ends_with("/mod.rs");
                let supers = if nested {
                    Default::default()
                } else {
                    segments_after(&code, "super::")
                };
                for name in supers.into_iter().chain(from_folder) {
                    if &name == me {
                        continue;
                    }
                    // A file of the folder, or an item of its mod.rs (defined or re-exported).
                    uses.insert(children.contains(&name).then_some(name));
                }
            }
            None => {
                for name in &children {
                    if names_child(&code, name) || from_folder.contains(name) {
                        uses.insert(Some(name.clone()));
                    }
                }
            }
        }
        folders.get_mut(&top).unwrap().insert(child, uses);
    }
    for (top, graph) in &folders {
        if let Some(circle) = find_circle(graph) {
            let names: Vec<String> = circle
                .iter()
                .map(|f| f.clone().unwrap_or_else(|| "mod.rs".into()))
                .collect();
            found.push(format!(
                "src/{top}/: its files use each other in a circle: {}",
                names.join(" -> ")
            ));
        }
    }
    found
}

/// A circle of the graph (the first node repeated at the end), if it has one.
fn find_circle<N: Ord + Clone>(graph: &BTreeMap<N, BTreeSet<N>>) -> Option<Vec<N>> {
    fn visit<N: Ord + Clone>(
        node: &N,
        graph: &BTreeMap<N, BTreeSet<N>>,
        path: &mut Vec<N>,
        done: &mut BTreeSet<N>,
    ) -> Option<Vec<N>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut circle = path[at..].to_vec();
            circle.push(node.clone());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.clone());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, path, done) {
                return Some(circle);
            }
        }
        path.pop();
        done.insert(node.clone());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

fn read_tree(dir: &Path, root: &Path, out: &mut Vec<File>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            read_tree(&path, root, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(File {
                path: path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/"),
                text: std::fs::read_to_string(&path).unwrap(),
            });
        }
    }
}

#[test]
fn every_module_imports_only_from_the_floors_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let floors = parse_floors(&doc).unwrap();
    let mut files = Vec::new();
    read_tree(&root.join("src"), root, &mut files);
    assert!(files.len() > 100, "{} source files", files.len());
    let found = violations(&files, &floors);
    assert!(
        found.is_empty(),
        "the house runs back up:\n{}",
        found.join("\n")
    );
}

// ---- The checker on small trees of its own. ----

const DOC: &str = "\
# Architecture

```
floor 3  src/top.rs          uses both below
floor 2  src/middle/         a folder
floor 1  src/ground.rs       src/other.rs
```
";

fn tree(files: &[(&str, &str)]) -> Vec<File> {
    files
        .iter()
        .map(|(path, text)| File {
            path: path.to_string(),
            text: text.to_string(),
        })
        .collect()
}

fn clean_tree() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "src/top.rs",
            "use crate::middle::Thing;\nuse crate::{ground, other::X};\n",
        ),
        (
            "src/middle/mod.rs",
            "pub mod a;\npub mod b;\npub use b::Thing;\n",
        ),
        ("src/middle/a.rs", "use crate::ground::Base;\n"),
        (
            "src/middle/b.rs",
            "use super::a::Helper;\npub struct Thing;\n",
        ),
        ("src/ground.rs", "pub struct Base;\n"),
        (
            "src/other.rs",
            "// crate::top in a comment is no import\npub struct X;\n\
             #[cfg(test)]\nmod tests {\n    use crate::top::Anything;\n}\n",
        ),
    ]
}

#[test]
fn the_floors_are_read_from_the_first_block_that_has_them() {
    let floors = parse_floors(DOC).unwrap();
    let expected: BTreeMap<String, u32> = [("top", 3), ("middle", 2), ("ground", 1), ("other", 1)]
        .into_iter()
        .map(|(m, f)| (m.to_string(), f))
        .collect();
    assert_eq!(floors, expected);
    assert!(parse_floors("no block here").is_err());
}

/// What the checker finds in the clean tree with `path` replaced by `text` (or added).
fn planted(path: &'static str, text: &'static str) -> Vec<String> {
    let mut files = clean_tree();
    match files.iter_mut().find(|(p, _)| *p == path) {
        Some(file) => file.1 = text,
        None => files.push((path, text)),
    }
    violations(&tree(&files), &parse_floors(DOC).unwrap())
}

#[test]
fn a_clean_tree_passes() {
    let floors = parse_floors(DOC).unwrap();
    assert_eq!(
        violations(&tree(&clean_tree()), &floors),
        Vec::<String>::new()
    );
}

#[test]
fn a_planted_upward_import_is_caught_with_its_file_and_floors() {
    let found = planted(
        "src/ground.rs",
        "use crate::top::Planted;\npub struct Base;\n",
    );
    let expected = "src/ground.rs: module `ground` (floor 1) uses `crate::top` (floor 3), \
                    which is not below it";
    assert_eq!(found, [expected]);
}

#[test]
fn an_import_on_the_same_floor_or_in_a_group_is_caught() {
    let found = planted("src/ground.rs", "use crate::{other::X, seed};\n");
    let expected = [
        "src/ground.rs: module `ground` (floor 1) uses `crate::other` (floor 1), which is not \
         below it",
        "src/ground.rs: uses `crate::seed`, which has no floor in docs/architecture.md",
    ];
    assert_eq!(found, expected);
}

#[test]
fn a_circle_inside_a_folder_is_caught() {
    // a.rs takes `Thing` through mod.rs, which re-exports it from b.rs, which uses a.rs.
    let found = planted("src/middle/a.rs", "use super::Thing;\n");
    let expected = "src/middle/: its files use each other in a circle: mod.rs -> b -> a -> mod.rs";
    assert_eq!(found, [expected]);
}

#[test]
fn a_module_without_a_floor_is_named() {
    let found = planted("src/newcomer.rs", "pub fn hello() {}\n");
    assert_eq!(
        found,
        ["src/newcomer.rs: module `newcomer` has no floor in docs/architecture.md"]
    );
}

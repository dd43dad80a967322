//! The server binary's top-level modules form a one-way graph, and so do
//! those of each library crate.
//!
//! Every `.rs` file under `src/` belongs to its top-level module (the first
//! path component, or the stem of `src/x.rs`); `main.rs` and `lib.rs` are the
//! root and are not sources. An edge `a -> b` is any `crate::b` path in a file
//! of `a`: in `use` trees (nested braces, several lines) or inline in code.
//! Comments and literals are blanked first, so prose naming `crate::x` does
//! not count. The graph must have no cycle, and every edge must point from a
//! higher layer in [`LAYERS`] to a lower one.
#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The declared layers, top first. A module may import only modules in
/// later rows; modules in the same row (http and transport) are siblings
/// that import neither each other. `config` sits below the other leaves so
/// they may read it.
const LAYERS: &[&[&str]] = &[
    &["boot"],
    &["shard"],
    &["http", "transport"],
    &["session"],
    &["handlers"],
    &["diagnostics"],
    &["node"],
    &["metrics", "args", "notify", "cluster", "allocator"],
    &["telemetry"],
    &["config"],
];

/// One source file: its top-level module, its path (for messages) and text.
struct Source {
    module: String,
    path: String,
    text: String,
}

/// `from -> to`, with the files that make the edge.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

#[test]
fn given_server_sources_when_building_the_module_graph_should_find_no_cycle() {
    let graph = build_graph(&server_sources());
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "crates/server has a module cycle:\n{}",
            describe(&graph, &cycle)
        );
    }
}

/// The library crates' top-level modules point one way too (their
/// test-only `tests` module, which may reach anything, aside).
#[test]
fn given_library_crates_when_building_their_module_graphs_should_find_no_cycle() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for name in ["protocol", "storage", "engine", "consensus", "simulator"] {
        let sources: Vec<Source> = crate_sources(&crates.join(name))
            .into_iter()
            .filter(|s| s.module != "tests")
            .collect();
        assert!(!sources.is_empty(), "crates/{name} has sources");
        let graph = build_graph(&sources);
        if let Some(cycle) = find_cycle(&graph) {
            panic!(
                "crates/{name} has a module cycle:\n{}",
                describe(&graph, &cycle)
            );
        }
    }
}

#[test]
fn given_server_sources_when_checking_layers_should_only_point_downwards() {
    let graph = build_graph(&server_sources());
    let violations = layer_violations(&graph);
    assert!(
        violations.is_empty(),
        "imports against the layer order {LAYERS:?}:\n{}",
        violations.join("\n")
    );
}

#[test]
fn given_a_synthetic_cycle_when_searching_should_name_every_module_in_it() {
    let sources = [
        source("a", "src/a/mod.rs", "use crate::{b::{x, y}, c};\nfn f() {}"),
        source("b", "src/b.rs", "fn g() { crate::c::run(); }"),
        source("c", "src/c/deep.rs", "pub use crate::\n    a::Thing;"),
    ];
    let graph = build_graph(&sources);
    let cycle = find_cycle(&graph).expect("a -> b -> c -> a is a cycle");
    let message = describe(&graph, &cycle);
    for edge in ["a -> b", "b -> c", "c -> a"] {
        assert!(message.contains(edge), "{edge} missing from:\n{message}");
    }
    assert!(message.contains("src/c/deep.rs"), "{message}");
}

#[test]
fn given_comments_literals_and_nested_uses_when_parsing_should_find_only_real_imports() {
    let text = r#"
        //! Talks to `crate::ghost` in prose only.
        /* crate::ghost in a block comment */
        use crate::{
            alpha::{self, Beta},
            gamma,
        };
        const URL: &str = "http://crate::ghost"; // crate::ghost
        const QUOTE: char = '"';
        fn f<'a>(x: &'a str) -> usize { crate::delta::len(x) }
        macro_rules! m { () => { $crate::ghost::f() }; }
    "#;
    let found = imports(text);
    let expected: BTreeSet<String> = ["alpha", "gamma", "delta"].map(String::from).into();
    assert_eq!(found, expected);
}

#[test]
fn given_an_upward_edge_when_checking_layers_should_name_the_edge_and_file() {
    let graph = build_graph(&[
        source("node", "src/node/mod.rs", "use crate::shard::X;"),
        source("shard", "src/shard/mod.rs", "use crate::node::Node;"),
    ]);
    let violations = layer_violations(&graph);
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].contains("node -> shard"), "{violations:?}");
    assert!(violations[0].contains("src/node/mod.rs"), "{violations:?}");
}

fn source(module: &str, path: &str, text: &str) -> Source {
    Source {
        module: module.to_owned(),
        path: path.to_owned(),
        text: text.to_owned(),
    }
}

/// Every file under `crates/server/src` except the crate roots.
fn server_sources() -> Vec<Source> {
    let sources = crate_sources(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(sources.len() > 20, "found only {} sources", sources.len());
    sources
}

/// The sources of the crate in `crate_dir`, by top-level module.
fn crate_sources(crate_dir: &Path) -> Vec<Source> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    collect_rs_files(&src, &mut files);
    files.sort();
    let sources: Vec<Source> = files
        .into_iter()
        .filter_map(|file| {
            let relative = file.strip_prefix(&src).expect("under src").to_owned();
            let module = top_level_module(&relative)?;
            let text = std::fs::read_to_string(&file).expect("readable source");
            let path = Path::new("src").join(&relative).display().to_string();
            Some(Source { module, path, text })
        })
        .collect();
    sources
}

fn collect_rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `http/api/mod.rs` -> `http`; `metrics.rs` -> `metrics`; roots -> None.
fn top_level_module(relative: &Path) -> Option<String> {
    let mut components = relative.components();
    let first = components.next()?.as_os_str().to_str()?.to_owned();
    if components.next().is_some() {
        return Some(first);
    }
    let stem = first.strip_suffix(".rs")?;
    (stem != "main" && stem != "lib").then(|| stem.to_owned())
}

fn build_graph(sources: &[Source]) -> Graph {
    let modules: BTreeSet<&str> = sources.iter().map(|s| s.module.as_str()).collect();
    let mut graph = Graph::new();
    for source in sources {
        let edges = graph.entry(source.module.clone()).or_default();
        for target in imports(&source.text) {
            if target != source.module && modules.contains(target.as_str()) {
                edges.entry(target).or_default().insert(source.path.clone());
            }
        }
    }
    graph
}

/// The top-level modules named by `crate::` paths in `text`.
fn imports(text: &str) -> BTreeSet<String> {
    let code: Vec<char> = blank_comments_and_literals(text).chars().collect();
    let mut found = BTreeSet::new();
    let mut i = 0;
    while let Some(at) = find(&code, i, "crate::") {
        i = at + "crate::".len();
        let before = at.checked_sub(1).map(|b| code[b]);
        if before.is_some_and(|c| is_ident(c) || c == '$') {
            continue;
        }
        let start = skip_space(&code, i);
        if code.get(start) == Some(&'{') {
            found.extend(brace_heads(&code, start));
        } else {
            found.insert(ident_at(&code, start));
        }
    }
    found.remove("");
    found
}

/// The first segment of each item in the use-tree group opening at `open`.
fn brace_heads(code: &[char], open: usize) -> Vec<String> {
    let mut heads = vec![ident_at(code, skip_space(code, open + 1))];
    let mut depth = 0;
    for (i, &c) in code.iter().enumerate().skip(open) {
        match c {
            '{' => depth += 1,
            '}' if depth == 1 => break,
            '}' => depth -= 1,
            ',' if depth == 1 => heads.push(ident_at(code, skip_space(code, i + 1))),
            _ => {}
        }
    }
    heads
}

fn ident_at(code: &[char], start: usize) -> String {
    code[start.min(code.len())..]
        .iter()
        .take_while(|c| is_ident(**c))
        .collect()
}

fn skip_space(code: &[char], mut i: usize) -> usize {
    while code.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

fn find(code: &[char], from: usize, needle: &str) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    (from..code.len().saturating_sub(needle.len() - 1)).find(|&i| code[i..].starts_with(&needle))
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Replaces comments and the contents of string and char literals with
/// spaces, keeping line breaks, so only code remains.
fn blank_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let end = literal_or_comment_end(&chars, i);
        if end == i {
            out.push(chars[i]);
            i += 1;
        } else {
            out.extend(
                chars[i..end]
                    .iter()
                    .map(|&c| if c == '\n' { c } else { ' ' }),
            );
            i = end;
        }
    }
    out
}

/// Where the comment or literal starting at `i` ends, or `i` if none does.
fn literal_or_comment_end(chars: &[char], i: usize) -> usize {
    let rest = &chars[i..];
    let after_ident = i > 0 && is_ident(chars[i - 1]);
    match rest {
        ['/', '/', ..] => i + rest.iter().position(|&c| c == '\n').unwrap_or(rest.len()),
        ['/', '*', ..] => i + block_comment_len(rest),
        ['"', ..] => i + 1 + quoted_len(&rest[1..], '"'),
        ['\'', '\\', ..] => i + 1 + quoted_len(&rest[1..], '\''),
        ['\'', _, '\'', ..] => i + 3,
        ['b', 'r', ..] | ['r', ..] if !after_ident => i + raw_string_len(rest),
        _ => i,
    }
}

/// Length of `/* ... */`, nested comments included.
fn block_comment_len(rest: &[char]) -> usize {
    let mut depth = 0;
    let mut i = 0;
    while i < rest.len() {
        match &rest[i..] {
            ['/', '*', ..] => (depth, i) = (depth + 1, i + 2),
            ['*', '/', ..] if depth == 1 => return i + 2,
            ['*', '/', ..] => (depth, i) = (depth - 1, i + 2),
            _ => i += 1,
        }
    }
    rest.len()
}

/// Length up to and including the closing `quote`, honouring escapes.
fn quoted_len(rest: &[char], quote: char) -> usize {
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            '\\' => i += 2,
            c if c == quote => return i + 1,
            _ => i += 1,
        }
    }
    rest.len()
}

/// Length of `r#"..."#` (or `br"..."`), or 0 when `rest` is not one.
fn raw_string_len(rest: &[char]) -> usize {
    let prefix = if rest[0] == 'b' { 2 } else { 1 };
    let hashes = rest[prefix..].iter().take_while(|&&c| c == '#').count();
    if rest.get(prefix + hashes) != Some(&'"') {
        return 0;
    }
    let body = prefix + hashes + 1;
    let closing: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    (body..rest.len())
        .find(|&i| rest[i..].starts_with(&closing))
        .map_or(rest.len(), |i| i + closing.len())
}

/// A cycle as the list of its modules, the first repeated at the end.
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = visit(graph, start, &mut path, &mut done) {
            return Some(cycle);
        }
    }
    None
}

fn visit(
    graph: &Graph,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(at) = path.iter().position(|m| m == node) {
        let mut cycle = path[at..].to_vec();
        cycle.push(node.to_owned());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_owned());
    for next in graph.get(node).into_iter().flat_map(|edges| edges.keys()) {
        if let Some(cycle) = visit(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(node.to_owned());
    None
}

/// `a -> b -> a`, then each edge with the files that make it.
fn describe(graph: &Graph, cycle: &[String]) -> String {
    let mut lines = vec![cycle.join(" -> ")];
    for pair in cycle.windows(2) {
        let files = &graph[&pair[0]][&pair[1]];
        let files: Vec<&str> = files.iter().map(String::as_str).collect();
        lines.push(format!(
            "  {} -> {} in {}",
            pair[0],
            pair[1],
            files.join(", ")
        ));
    }
    lines.join("\n")
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|row| row.contains(&module))
}

fn layer_violations(graph: &Graph) -> Vec<String> {
    let mut violations: Vec<String> = graph
        .keys()
        .filter(|module| layer_of(module).is_none())
        .map(|module| format!("{module} is missing from LAYERS"))
        .collect();
    for (from, edges) in graph {
        for (to, files) in edges {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            let files = files.join(", ");
            match (layer_of(from), layer_of(to)) {
                (Some(a), Some(b)) if a < b => {}
                (Some(_), Some(_)) => {
                    violations.push(format!("{from} -> {to} points up or sideways, in {files}"))
                }
                _ => violations.push(format!(
                    "{from} -> {to}: a module missing from LAYERS, in {files}"
                )),
            }
        }
    }
    violations
}

//! The backend's modules import each other without a cycle: each layer (http,
//! the guarantees, platform, db, infra) uses only the ones below it.
//!
//! Every file under `src/` is one node; an edge is any path in its code
//! (`use` or not, tests included) that names another file's module:
//! `crate::...`, `super::...`, `self::...`, or a child module by name. Comments
//! and doc links are not code and make no edge. A parent's `mod child;` makes
//! none either: owning a module is not using it.

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

/// A module path (`["http", "routes", "pay"]`), empty for the crate root.
type ModPath = Vec<String>;

/// The modules of `src/` with the source of each: `main.rs` and `bin/` are
/// binaries of their own, not modules of the library.
fn modules_of(src: &Path) -> BTreeMap<ModPath, String> {
    let mut found = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                if path != src.join("bin") {
                    stack.push(path);
                }
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") || path == src.join("main.rs") {
                continue;
            }
            let relative = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut module: ModPath = relative
                .components()
                .map(|part| part.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).expect("read source");
            found.insert(module, text);
        }
    }
    found
}

/// Who names whom: for each module, the modules its code names.
fn edges(modules: &BTreeMap<ModPath, String>) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let known: BTreeSet<&ModPath> = modules.keys().collect();
    let mut graph = BTreeMap::new();
    for (module, text) in modules {
        let tokens = TokenStream::from_str(text)
            .unwrap_or_else(|err| panic!("{}: {err}", module.join("::")));
        let mut named = BTreeSet::new();
        scan(tokens, module, &known, &mut named);
        // A node never depends on itself (a file's own inline modules included).
        named.retain(|target| target != module);
        graph.insert(module.clone(), named);
    }
    graph
}

/// Collects into `named` the file modules the paths of `tokens` reach, for
/// code inside the (possibly inline) module `at`.
fn scan(
    tokens: TokenStream,
    at: &ModPath,
    known: &BTreeSet<&ModPath>,
    named: &mut BTreeSet<ModPath>,
) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < trees.len() {
        // `mod name { ... }`: the inside is code of the inline module `at::name`.
        if let (
            TokenTree::Ident(keyword),
            Some(TokenTree::Ident(name)),
            Some(TokenTree::Group(body)),
        ) = (&trees[i], trees.get(i + 1), trees.get(i + 2))
            && keyword == "mod"
            && body.delimiter() == Delimiter::Brace
        {
            let mut inner = at.clone();
            inner.push(name.to_string());
            scan(body.stream(), &inner, known, named);
            i += 3;
            continue;
        }
        match &trees[i] {
            TokenTree::Group(group) => scan(group.stream(), at, known, named),
            TokenTree::Ident(ident) if is_path_start(&trees, i) => {
                let first = ident.to_string();
                // The module the path starts from, or none when it does not start at one of ours.
                let base: Option<ModPath> = match first.as_str() {
                    "crate" => Some(Vec::new()),
                    "self" => Some(at.clone()),
                    "super" => Some(at[..at.len().saturating_sub(1)].to_vec()),
                    child => {
                        let mut path = at.clone();
                        path.push(child.to_owned());
                        known
                            .iter()
                            .any(|module| module.starts_with(&path))
                            .then_some(path)
                    }
                };
                if let Some(base) = base {
                    i = follow(&trees, i + 1, base, known, named);
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
}

/// Whether `trees[i]` is an identifier followed by `::` and not itself
/// after `::` (the middle of a path is handled by [`follow`]).
fn is_path_start(trees: &[TokenTree], i: usize) -> bool {
    let colons = |at: usize| {
        matches!((trees.get(at), trees.get(at + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':')
    };
    colons(i + 1) && !(i >= 2 && colons(i - 2))
}

/// Follows a path from `trees[i]` (just after its first segment, which made
/// `base`): `:: ident` segments, `super` steps, and a `{...}` use group.
/// Records the module it reaches and returns where the path ends.
fn follow(
    trees: &[TokenTree],
    mut i: usize,
    mut base: ModPath,
    known: &BTreeSet<&ModPath>,
    named: &mut BTreeSet<ModPath>,
) -> usize {
    loop {
        let is_colons = matches!((trees.get(i), trees.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b))) if a.as_char() == ':' && b.as_char() == ':');
        if !is_colons {
            break;
        }
        match trees.get(i + 2) {
            Some(TokenTree::Ident(ident)) if ident == "super" => {
                base.pop();
                i += 3;
            }
            Some(TokenTree::Ident(ident)) => {
                base.push(ident.to_string());
                i += 3;
            }
            Some(TokenTree::Group(group)) if group.delimiter() == Delimiter::Brace => {
                use_group(group.stream(), &base, known, named);
                return i + 3;
            }
            _ => break,
        }
    }
    if let Some(target) = file_of(&base, known) {
        named.insert(target);
    }
    i
}

/// The paths of a `use prefix::{a, b::c, self}` group, each from `prefix`.
fn use_group(
    tokens: TokenStream,
    prefix: &ModPath,
    known: &BTreeSet<&ModPath>,
    named: &mut BTreeSet<ModPath>,
) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for item in trees.split(|tree| matches!(tree, TokenTree::Punct(p) if p.as_char() == ',')) {
        let Some(TokenTree::Ident(first)) = item.first() else {
            continue;
        };
        let mut base = prefix.clone();
        if first != "self" {
            base.push(first.to_string());
        }
        follow(item, 1, base, known, named);
    }
}

/// The file module holding `path`: its longest prefix that is a file module.
fn file_of(path: &ModPath, known: &BTreeSet<&ModPath>) -> Option<ModPath> {
    (0..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| known.contains(prefix))
}

/// The strongly connected components of more than one module (Tarjan).
fn cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Vec<Vec<ModPath>> {
    struct Walk<'a> {
        graph: &'a BTreeMap<ModPath, BTreeSet<ModPath>>,
        next: usize,
        index: BTreeMap<&'a ModPath, usize>,
        low: BTreeMap<&'a ModPath, usize>,
        stack: Vec<&'a ModPath>,
        found: Vec<Vec<ModPath>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a ModPath) {
            self.index.insert(node, self.next);
            self.low.insert(node, self.next);
            self.next += 1;
            self.stack.push(node);
            for target in self.graph.get(node).into_iter().flatten() {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.stack.contains(&target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    component.push(member.clone());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        next: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !walk.index.contains_key(node) {
            walk.visit(node);
        }
    }
    walk.found
}

/// Each cycle with the edges that close it, for the failure message.
fn describe(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>, found: &[Vec<ModPath>]) -> String {
    let name = |module: &ModPath| {
        if module.is_empty() {
            "crate".to_owned()
        } else {
            module.join("::")
        }
    };
    let mut text = String::new();
    for component in found {
        text.push_str(&format!("a cycle through {} modules:\n", component.len()));
        for from in component {
            let inside: Vec<String> = graph[from]
                .iter()
                .filter(|to| component.contains(to))
                .map(name)
                .collect();
            text.push_str(&format!("  {} -> {}\n", name(from), inside.join(", ")));
        }
    }
    text
}

#[test]
fn the_backend_modules_import_each_other_without_a_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules_of(&src);
    assert!(
        modules.len() > 50,
        "found only {} modules under {}",
        modules.len(),
        src.display()
    );
    let graph = edges(&modules);
    // The check sees the edges that matter: the router names the pay route,
    // and pay's route names the pay transaction.
    let path = |text: &str| -> ModPath { text.split("::").map(str::to_owned).collect() };
    assert!(graph[&path("http::routes")].contains(&path("http::routes::pay")));
    assert!(graph[&path("http::routes::pay")].contains(&path("pay")));
    let found = cycles(&graph);
    assert!(found.is_empty(), "{}", describe(&graph, &found));
}

#[test]
fn a_cycle_is_found_however_its_paths_are_written() {
    let file = |path: &str, text: &str| -> (ModPath, String) {
        let module = if path.is_empty() {
            Vec::new()
        } else {
            path.split("::").map(str::to_owned).collect()
        };
        (module, text.to_owned())
    };
    // lib -> a (child by name); a -> b::c (a use group); b::c -> a (super::super).
    let modules: BTreeMap<ModPath, String> = [
        file("", "pub mod a; pub mod b; fn f() { a::g(); }"),
        file("a", "use crate::{b::{c::Thing}}; pub fn g() {}"),
        file("b", "pub mod c;"),
        file("b::c", "pub struct Thing; fn h() { super::super::a::g(); }"),
        file(
            "d",
            "/// [`crate::a`] is a doc link, not code.\nmod tests { use super::*; }",
        ),
    ]
    .into_iter()
    .collect();
    let graph = edges(&modules);
    assert!(graph[&vec!["d".to_owned()]].is_empty(), "{graph:?}");
    let found = cycles(&graph);
    assert_eq!(found.len(), 1, "{graph:?}");
    assert_eq!(
        found[0],
        vec![vec!["a".to_owned()], vec!["b".to_owned(), "c".to_owned()]]
    );
}

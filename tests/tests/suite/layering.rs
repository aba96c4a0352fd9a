//! The host's layering, checked from its sources as docs/ARCHITECTURE.md states it: every
//! module the host declares (from `lib.rs`, by its `mod` items; test modules left out) and
//! every path it names with `crate::`, `super::` or `self::` (in `use` items and in code),
//! each resolved to the module that holds it. The check fails, naming the file and the path,
//! on:
//! - an import circle between modules (at file level);
//! - an arrow back up: a module of one floor naming a module of a higher floor (the floors
//!   are the order of [`FLOORS`], the one ARCHITECTURE.md gives);
//! - a child module taking something from its parent (it takes what it shares with its
//!   siblings from a sibling file).
//!
//! Test code (`#[cfg(test)]` items and modules) is outside the floors: a test may use what
//! it needs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The top-level modules of the crates of floors, each from the bottom up: a module may
/// name those below it.
const FLOORS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "names",
            "variables",
            "settings",
            "tokens",
            "keys",
            "metrics",
            "plugins",
            "plan",
            "sched",
            "connect",
        ],
    ),
    ("engine", &["fault", "validate", "exec", "deploy"]),
    (".", &["api", "server"]),
];

type ModPath = Vec<String>;

/// The sources of the crate in `host/{dir}`.
fn src(dir: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../host")
        .join(dir)
        .join("src")
}

/// Test code: `#[cfg(test)]`, or `#[cfg(any(test, feature = "testing"))]` (what a crate
/// lends the tests of the crates above it).
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|list| {
                let text: String = list
                    .tokens
                    .to_string()
                    .chars()
                    .filter(|c| !c.is_whitespace())
                    .collect();
                text == "test" || text == "any(test,feature=\"testing\")"
            })
    })
}

/// One named path: where it is (file, line) and the module it resolves to.
#[derive(Debug, Clone)]
struct Reference {
    file: PathBuf,
    line: usize,
    path: String,
}

/// The paths one file names, and the modules it declares.
struct Collector {
    /// The module of the file, then of each inline module entered.
    scope: Vec<ModPath>,
    declared: Vec<(ModPath, bool)>,
    named: Vec<(ModPath, usize, String)>,
}

impl Collector {
    /// `segments` (from `crate`, `super` or `self`) as an absolute path, if it is one.
    fn absolute(&self, segments: &[String]) -> Option<ModPath> {
        let here = self.scope.last().cloned().unwrap_or_default();
        let mut it = segments.iter().peekable();
        let mut base = match it.next()?.as_str() {
            "crate" => Vec::new(),
            "self" => here,
            "super" => {
                let mut b = here;
                b.pop();
                b
            }
            _ => return None,
        };
        while it.peek().is_some_and(|s| *s == "super") {
            it.next();
            base.pop();
        }
        base.extend(it.cloned());
        Some(base)
    }

    fn name(&mut self, segments: &[String], line: usize) {
        if let Some(abs) = self.absolute(segments) {
            self.named.push((abs, line, segments.join("::")));
        }
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut full = prefix.clone();
                if n.ident != "self" {
                    full.push(n.ident.to_string());
                }
                self.name(&full, line);
            }
            syn::UseTree::Rename(r) => {
                let mut full = prefix.clone();
                if r.ident != "self" {
                    full.push(r.ident.to_string());
                }
                self.name(&full, line);
            }
            syn::UseTree::Glob(_) => {
                let full = prefix.clone();
                self.name(&full, line);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t, line);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            _ => return syn::visit::visit_item(self, i),
        };
        if is_test(attrs) {
            return;
        }
        syn::visit::visit_item(self, i);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        let mut path = self.scope.last().cloned().unwrap_or_default();
        path.push(m.ident.to_string());
        match &m.content {
            None => self.declared.push((path, false)),
            Some((_, items)) => {
                self.declared.push((path.clone(), true));
                self.scope.push(path);
                for item in items {
                    self.visit_item(item);
                }
                self.scope.pop();
            }
        }
    }

    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {
        // `pub(super)`, `pub(in crate::x)`: who may see an item, not a path it uses.
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        self.use_tree(&mut Vec::new(), &u.tree, line);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        if p.leading_colon.is_none() {
            let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
            let line = p
                .segments
                .first()
                .map_or(0, |s| s.ident.span().start().line);
            self.name(&segments, line);
        }
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro calls (format!, tracing's) are tokens: read `crate::a::b`
        // sequences from them.
        let tokens: Vec<proc_macro2::TokenTree> = m.tokens.clone().into_iter().collect();
        self.macro_tokens(&tokens);
        syn::visit::visit_macro(self, m);
    }
}

impl Collector {
    fn macro_tokens(&mut self, tokens: &[proc_macro2::TokenTree]) {
        use proc_macro2::TokenTree;
        let mut i = 0;
        while i < tokens.len() {
            match &tokens[i] {
                TokenTree::Group(g) => {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    self.macro_tokens(&inner);
                    i += 1;
                }
                TokenTree::Ident(id)
                    if ["crate", "super", "self"].contains(&id.to_string().as_str()) =>
                {
                    let line = id.span().start().line;
                    let mut segments = vec![id.to_string()];
                    let mut j = i + 1;
                    while j + 2 < tokens.len() + 1 {
                        match (&tokens.get(j), &tokens.get(j + 1), &tokens.get(j + 2)) {
                            (
                                Some(TokenTree::Punct(a)),
                                Some(TokenTree::Punct(b)),
                                Some(TokenTree::Ident(n)),
                            ) if a.as_char() == ':' && b.as_char() == ':' => {
                                segments.push(n.to_string());
                                j += 3;
                            }
                            _ => break,
                        }
                    }
                    if segments.len() > 1 {
                        self.name(&segments, line);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

/// The modules and named paths of a crate.
type Tree = (
    BTreeMap<ModPath, PathBuf>,
    BTreeMap<ModPath, Vec<(ModPath, Reference)>>,
);

/// Every module the crate at `src` declares outside tests (from its `lib.rs`), with its
/// file, and what each names.
fn read_tree(src: &Path) -> Tree {
    let mut modules: BTreeMap<ModPath, PathBuf> = BTreeMap::new();
    let mut named: BTreeMap<ModPath, Vec<(ModPath, Reference)>> = BTreeMap::new();
    let mut todo: Vec<(ModPath, PathBuf)> = vec![(Vec::new(), src.join("lib.rs"))];
    while let Some((path, file)) = todo.pop() {
        let text =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut c = Collector {
            scope: vec![path.clone()],
            declared: Vec::new(),
            named: Vec::new(),
        };
        c.visit_file(&ast);
        modules.insert(path.clone(), file.clone());
        // A child's file: `dir/name.rs` or `dir/name/mod.rs`, where `dir` is the folder of
        // this module's children.
        let children_dir = if path.is_empty() || file.ends_with("mod.rs") {
            file.parent().map(Path::to_path_buf).unwrap_or_default()
        } else {
            file.with_extension("")
        };
        for (child, inline) in c.declared {
            if inline {
                modules.insert(child, file.clone());
                continue;
            }
            let name = child.last().cloned().unwrap_or_default();
            let flat = children_dir.join(format!("{name}.rs"));
            let nested = children_dir.join(&name).join("mod.rs");
            let f = if flat.is_file() { flat } else { nested };
            todo.push((child, f));
        }
        for (target, line, text) in c.named {
            named.entry(path.clone()).or_default().push((
                target,
                Reference {
                    file: file.strip_prefix(src).unwrap_or(&file).to_path_buf(),
                    line,
                    path: text,
                },
            ));
        }
    }
    (modules, named)
}

/// The module a path names: its longest prefix that is a module.
fn resolve(modules: &BTreeMap<ModPath, PathBuf>, path: &ModPath) -> ModPath {
    (0..=path.len())
        .rev()
        .map(|n| path[..n].to_vec())
        .find(|p| modules.contains_key(p))
        .unwrap_or_default()
}

fn show(p: &ModPath) -> String {
    if p.is_empty() {
        "crate".to_owned()
    } else {
        p.join("::")
    }
}

fn place(r: &Reference) -> String {
    format!("{}:{} `{}`", r.file.display(), r.line, r.path)
}

/// The edges between modules: from each module to each other module it names that is not
/// one of its descendants (a parent may use its children), with one reference for each.
fn edges(src: &Path) -> BTreeMap<(ModPath, ModPath), Reference> {
    let (modules, named) = read_tree(src);
    let mut out = BTreeMap::new();
    for (from, refs) in named {
        for (target, r) in refs {
            let to = resolve(&modules, &target);
            if to.is_empty() || to == from || to.starts_with(&from) {
                continue;
            }
            out.entry((from.clone(), to)).or_insert(r);
        }
    }
    out
}

/// The arrows from a module on one floor of `floors` to one on a higher floor.
fn arrows_up(src: &Path, floors: &[&str]) -> Vec<String> {
    let floor = |m: &ModPath| {
        floors
            .iter()
            .position(|f| m.first().is_some_and(|x| x == f))
    };
    edges(src)
        .into_iter()
        .filter(|((from, to), _)| match (floor(from), floor(to)) {
            (Some(a), Some(b)) => b > a,
            _ => false,
        })
        .map(|((from, to), r)| format!("{} -> {}: {}", show(&from), show(&to), place(&r)))
        .collect()
}

/// The child modules that name something of their parent's (or an ancestor's).
fn from_parents(src: &Path) -> Vec<String> {
    edges(src)
        .into_iter()
        .filter(|((from, to), _)| from.len() > to.len() && from.starts_with(to))
        .map(|((from, to), r)| format!("{} -> {}: {}", show(&from), show(&to), place(&r)))
        .collect()
}

/// The import circles between modules, each as its steps.
fn circles(src: &Path) -> Vec<String> {
    let edges = edges(src);
    let mut next: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        next.entry(from.clone()).or_default().insert(to.clone());
    }
    // Depth first from every module; a module met again on the current path closes a
    // circle.
    let mut done: BTreeSet<ModPath> = BTreeSet::new();
    let mut circles: Vec<String> = Vec::new();
    for start in next.keys() {
        if done.contains(start) {
            continue;
        }
        let successors = |m: &ModPath| -> Vec<ModPath> {
            next.get(m)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default()
        };
        let mut stack: Vec<(ModPath, Vec<ModPath>)> = vec![(start.clone(), successors(start))];
        let mut on_path: BTreeSet<ModPath> = BTreeSet::from([start.clone()]);
        while let Some((node, rest)) = stack.last_mut() {
            let node = node.clone();
            match rest.pop() {
                Some(to) if on_path.contains(&to) => {
                    let from = stack.iter().position(|(n, _)| *n == to).unwrap_or(0);
                    let mut path: Vec<ModPath> =
                        stack[from..].iter().map(|(n, _)| n.clone()).collect();
                    path.push(to.clone());
                    let steps: Vec<String> = path
                        .windows(2)
                        .map(|w| {
                            let r = &edges[&(w[0].clone(), w[1].clone())];
                            format!("  {} -> {}: {}", show(&w[0]), show(&w[1]), place(r))
                        })
                        .collect();
                    circles.push(steps.join("\n"));
                }
                Some(to) if !done.contains(&to) => {
                    on_path.insert(to.clone());
                    let succ = successors(&to);
                    stack.push((to, succ));
                }
                Some(_) => {}
                None => {
                    on_path.remove(&node);
                    done.insert(node);
                    stack.pop();
                }
            }
        }
    }
    circles
}

#[test]
fn the_host_reads_as_its_modules_and_paths() {
    let (mut modules, mut refs) = (0, 0);
    for (dir, floors) in FLOORS {
        let (found, named) = read_tree(&src(dir));
        modules += found.len();
        refs += named.values().map(Vec::len).sum::<usize>();
        // Every top-level module has its floor.
        for m in found.keys().filter(|m| m.len() == 1) {
            assert!(
                floors.contains(&m[0].as_str()),
                "host/{dir}: {} has no floor in FLOORS",
                m[0]
            );
        }
        // The reader found the crate as it is: its floors and deeper modules.
        for m in *floors {
            assert!(
                found.contains_key(&vec![(*m).to_owned()]),
                "host/{dir}: {m}"
            );
        }
    }
    assert!(modules > 60, "{modules}");
    assert!(refs > 500, "{refs}");
}

#[test]
fn no_module_names_one_on_a_higher_floor() {
    for (dir, floors) in FLOORS {
        let up = arrows_up(&src(dir), floors);
        assert!(
            up.is_empty(),
            "arrows back up in host/{dir}:\n{}",
            up.join("\n")
        );
    }
}

/// The crates under `host/` from the bottom up, each with the weft crates it may depend on
/// (Cargo refuses a circle between crates; this keeps each crate on its floor), and for each
/// a module it must hold (so that a moved crate is noticed here), and whether a child module
/// may take from its parent: only in the protocol, whose command files take the trait
/// `Request` from `commands`, where the list of commands makes the envelope of them all.
const CRATES: &[(&str, &str, &[&str], bool)] = &[
    ("protocol", "commands::run_elements", &[], true),
    ("dsr", "fields", &["weft_protocol", "weft_sdk"], false),
    (
        "core",
        "sched::scheduler",
        &["weft_protocol", "weft_dsr", "weft_sdk"],
        false,
    ),
    (
        "repo",
        "work",
        &["weft_protocol", "weft_dsr", "weft_core", "weft_pg_client"],
        false,
    ),
    ("notify", "sender", &["weft_core", "weft_repo"], false),
    (
        "engine",
        "exec::batch",
        &[
            "weft_protocol",
            "weft_dsr",
            "weft_sdk",
            "weft_core",
            "weft_repo",
            "weft_notify",
        ],
        false,
    ),
    (
        ".",
        "api::commands",
        &[
            "weft_protocol",
            "weft_dsr",
            "weft_sdk",
            "weft_core",
            "weft_repo",
            "weft_notify",
            "weft_engine",
        ],
        false,
    ),
    (
        "cli",
        "jdbc_manager::drivers",
        &[
            "weft",
            "weft_protocol",
            "weft_dsr",
            "weft_core",
            "weft_repo",
            "weft_engine",
            "weft_sdk",
        ],
        false,
    ),
];

fn weft_dependencies(manifest: &Path) -> Vec<String> {
    let manifest: toml::Table = std::fs::read_to_string(manifest)
        .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()))
        .parse()
        .expect("a manifest");
    manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| {
            d.keys()
                .filter(|k| k.starts_with("weft"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Each crate under `host/` depends only on the weft crates below it, and keeps the host's
/// rules inside itself: no import circle between its modules, and no child taking from its
/// parent (the command line's subcommands share `Home` and `Endpoint` through the sibling
/// file `commands::args`).
#[test]
fn each_crate_depends_on_those_below_it_and_has_no_import_circles() {
    let host = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host");
    for (dir, module, allowed, children_take_from_parents) in CRATES {
        let root = host.join(dir);
        for dependency in weft_dependencies(&root.join("Cargo.toml")) {
            assert!(
                allowed.contains(&dependency.as_str()),
                "host/{dir} depends on {dependency}, not among those below it: {allowed:?}"
            );
        }
        let src = root.join("src");
        let (modules, _) = read_tree(&src);
        let p: ModPath = module.split("::").map(str::to_owned).collect();
        assert!(
            modules.contains_key(&p),
            "{module} in host/{dir}: {:?}",
            modules.keys().collect::<Vec<_>>()
        );
        let found = circles(&src);
        assert!(
            found.is_empty(),
            "import circles in host/{dir}:\n{}",
            found.join("\n\n")
        );
        let up = from_parents(&src);
        assert!(
            up.is_empty() || *children_take_from_parents,
            "children taking from their parents in host/{dir}:\n{}",
            up.join("\n")
        );
    }
}

/// `weft_protocol` is the leaf both sides of the service share: serde and nothing else, no
/// other weft crate and no I/O, so that a client can take it without the server.
#[test]
fn the_protocol_crate_is_a_leaf_without_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/protocol");
    let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
        .expect("host/protocol/Cargo.toml")
        .parse()
        .expect("a manifest");
    let deps: Vec<&String> = manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
        .map(|d| d.keys().collect())
        .unwrap_or_default();
    assert_eq!(deps, ["serde"], "weft_protocol may depend on serde only");
    let mut files = Vec::new();
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("protocol sources") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    assert!(files.len() >= 5, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a source");
        for io in [
            "std::fs",
            "std::net",
            "std::io",
            "std::process",
            "std::thread",
            "std::env",
        ] {
            assert!(!text.contains(io), "{} names {io}", file.display());
        }
    }
}

#[test]
fn each_check_finds_what_it_is_for_and_nothing_in_tests_or_visibilities() {
    let dir = tempfile::tempdir().expect("dir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().expect("folder")).expect("folder");
        std::fs::write(path, text).expect("write");
    };
    write("lib.rs", "pub mod low;\npub mod mid;\npub mod high;\n");
    // low names high in a macro call (an arrow up and, with high naming low, a circle).
    write(
        "low.rs",
        "pub fn f() -> String { format!(\"{}\", crate::high::g()) }\n\
         pub(super) fn quiet() {}\n\
         #[cfg(test)]\nmod tests { use crate::mid::*; }\n\
         #[cfg(any(test, feature = \"testing\"))]\npub mod testing { use crate::high::*; }\n\
         #[cfg(feature = \"extra\")]\npub fn extra() { crate::mid::h(crate::mid::Shared) }\n",
    );
    write(
        "high.rs",
        "use crate::low::f;\npub fn g() -> String { f() }\n",
    );
    // mid's child takes from mid; mid itself names only its child (allowed).
    write(
        "mid/mod.rs",
        "mod part;\npub struct Shared;\npub use part::*;\n",
    );
    write(
        "mid/part.rs",
        "use super::Shared;\npub fn h(_: Shared) {}\npub(in crate::mid) fn i() {}\n",
    );
    let floors = ["low", "mid", "high"];
    let up = arrows_up(dir.path(), &floors);
    // A feature other than `testing` is not test code: its arrow up counts.
    assert_eq!(
        up,
        [
            "low -> high: low.rs:1 `crate::high::g`",
            "low -> mid: low.rs:8 `crate::mid::h`"
        ],
        "{up:?}"
    );
    let parents = from_parents(dir.path());
    assert_eq!(
        parents,
        ["mid::part -> mid: mid/part.rs:1 `super::Shared`"],
        "{parents:?}"
    );
    let found = circles(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("high -> low: high.rs:1 `crate::low::f`")
            && found[0].contains("low -> high: low.rs:1 `crate::high::g`"),
        "{found:?}"
    );
}

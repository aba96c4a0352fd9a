//! Plugin call benchmark (`cargo bench -p weft --bench plugin_calls`): prints numbers,
//! asserts nothing but that the calls succeed.
//!
//! The host's cost per call into a module across the plugin boundary: `info` (a module
//! describing itself), `validate` of a one-statement `Sql` action (the SQL parsed by the
//! module), and, as the reference for the boundary alone, `validate` of an action of the
//! `Rowcount`-like no-op kind: the `Insert` module asked about an action with no text, which
//! returns at once. Goal (issue 13): the boundary under 5 µs per call. Build the plugins
//! first: `cargo build --release --workspace`.

use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn per_call(n: u32, mut f: impl FnMut()) -> f64 {
    // Warm up, then the median of five rounds.
    for _ in 0..n / 10 {
        f();
    }
    let mut rounds: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..n {
                f();
            }
            t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[2]
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!(
            "plugin_calls bench: run with `cargo bench -p weft --bench plugin_calls` for numbers"
        );
        return;
    }
    let dir = std::env::current_exe()
        .ok()
        .and_then(|e| {
            e.parent()
                .and_then(|p| p.parent())
                .map(std::path::Path::to_path_buf)
        })
        .unwrap_or_default();
    let registry = weft_core::plugins::Registry::load(&[(dir.clone(), false)]);
    let (Some(sql), Some(insert)) = (registry.module("Sql"), registry.module("Insert")) else {
        panic!(
            "no plugins in {}: run `cargo build --release --workspace` first",
            dir.display()
        );
    };
    let object = |node_id: i64, name: &str| {
        weft_sdk::ObjectRef::new(node_id, 1, 1, name, None, weft_sdk::Dialect::Sqlite)
    };
    let input = |action: Option<&str>| {
        weft_sdk::ValidateInput::new(
            1,
            action,
            Vec::new(),
            vec![object(2, "a")],
            vec![object(3, "b")],
        )
    };
    let n = 200_000;
    let info = per_call(n, || {
        let i = sql.module.info().into_result().expect("info");
        std::hint::black_box(i);
    });
    let empty = input(None);
    let boundary = per_call(n, || {
        let out = insert
            .module
            .validate(&empty)
            .into_result()
            .expect("validate");
        std::hint::black_box(out);
    });
    let statement = input(Some("INSERT INTO b SELECT x FROM a WHERE x > 0"));
    let parsed = per_call(n / 10, || {
        let out = sql
            .module
            .validate(&statement)
            .into_result()
            .expect("validate");
        std::hint::black_box(out);
    });
    println!("plugin_calls: info (a module describing itself)          {info:.2} µs per call");
    println!(
        "plugin_calls: validate returning at once (the boundary)   {boundary:.2} µs per call   (goal < 5 µs)"
    );
    println!("plugin_calls: validate of one SQL statement (parsed)      {parsed:.2} µs per call");
}

//! weft's integration tests in one binary (`cargo test -p weft_tests --test suite`), a module
//! per area: most start the real `weft` binary (build it first: `cargo build --workspace
//! --bins`), some read the host's sources (`layering`) or fuzz its readers (`fuzz`). One
//! binary links the host once instead of once per area. Run one area with its module's
//! name as the filter: `cargo test -p weft_tests --test suite -- runs::`.

mod common;

mod compat;
mod data_tests;
mod deploy;
mod dsr_schema;
mod durability;
mod fmt;
mod fuzz;
mod hjson_differential;
mod hostile;
mod hosts;
mod install;
mod jaffle;
mod jdbc;
mod jdbc_manager;
mod jdbc_server;
mod layering;
mod lifecycle;
mod lineage_events;
mod load;
mod lsp;
mod metrics;
mod models;
mod modules;
mod names;
mod notifications;
mod overload;
mod page;
mod page_code;
mod page_operator;
mod pg_repository;
mod plugins;
mod postgres;
mod process_modules;
mod retries;
mod run_history;
mod runs;
mod scheduler;
mod schema;
mod security;
mod seeds;
mod template_modules;
mod tls;

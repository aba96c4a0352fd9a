//! End-to-end tests of weft: they start the real `weft` binary; see `tests/`.
//!
//! The library holds what tests and benches share: [`bench`](mod@bench) the medians of rounds,
//! [`browser`] drives a real Chromium,
//! [`postgres`] starts a real PostgreSQL, [`documents`] finds the documents the tests hold,
//! [`server`] the real `weft serve`, [`outside`] builds crates outside the workspace as a
//! plugin author would.

pub mod bench;
pub mod browser;
pub mod documents;
pub mod outside;
pub mod postgres;
pub mod receivers;
pub mod server;

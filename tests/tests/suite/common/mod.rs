//! Shared helpers of the end-to-end tests: the real binary ([`weft_tests::server`]) and,
//! in [`actions`], one-action plans run through the host's runner.

#![allow(dead_code, unused_imports)]

pub mod actions;

pub use weft_tests::server::*;

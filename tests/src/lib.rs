//! End-to-end tests of weft: they start the real `weft` binary; see `tests/`.

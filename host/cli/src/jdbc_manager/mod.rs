//! jdbcManager: the engine ([`drivers`]: the driver list, the installed drivers, installing
//! and deleting one) and the menu over it ([`menu`]); the command line (`weft jdbc list|add|
//! delete`, behind `bin/jdbcManager`) sits on top.

pub mod drivers;
pub mod menu;

pub use drivers::*;

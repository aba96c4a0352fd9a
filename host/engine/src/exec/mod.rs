//! Running actions: one action ([`action`]: [`run_action`], which opens the connections and
//! runs the module in one transaction per target connection, [`targets`]: begun, marked,
//! committed or rolled back as one),
//! `${name}` substitution ([`variables`]), a loop's iterations ([`looped`]), a process
//! module's run ([`process`]), and the executor of batch instances ([`batch`]) with what it
//! starts from ([`expand`]). What an action is made of is `weft_core::plan`'s.

pub mod action;
pub mod backfill;
pub mod batch;
pub mod changes;
pub mod cluster;
pub mod ends;
pub mod error;
pub mod expand;
pub mod halt;
pub mod identity;
pub mod leftovers;
pub mod lineage;
pub mod looped;
pub mod paths;
pub mod pool;
pub mod process;
pub mod slots;
pub mod start;
pub mod targets;
pub mod variables;
pub mod worker;

pub use action::*;
pub use variables::substitute;
pub use weft_core::plan::{ActionPlan, actions_of, objects_of};

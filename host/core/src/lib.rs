//! What the repository and the engine of weft stand on, from the bottom up: ids made from
//! names (`names`), `${...}` in an action's text (`variables`), the server's settings (`settings`), users' tokens and their hashes (`tokens`), the key file of connection credentials (`keys`), the metrics of
//! `/metrics` (`metrics`), plugins loaded and called (`plugins`), an action's plan
//! (`plan`), schedules and the service clock (`sched`), connections to the data
//! (`connect`). A module names only those before it in this list; `sched`'s scheduler
//! reaches the repository and the executor above it through its own traits
//! (`PlannedStarts`, `Starter`).

pub mod connect;
pub mod keys;
pub mod metrics;
pub mod names;
pub mod plan;
pub mod plugins;
pub mod sched;
pub mod settings;
pub mod tokens;
pub mod variables;

//! weft's engine, from the bottom up: the named crash points of the end-to-end tests
//! (`fault`), the checks a document passes before it is accepted (`validate`), batch runs
//! (`exec`), and deploys (`deploy`: read, check, write in one repository transaction). It
//! stands on `weft_repo` (the repository), `weft_core` (plugins, plans, schedules,
//! connections) and `weft_dsr` (the `.dsr` reader); the server (`weft`) calls it, and it
//! knows nothing of HTTP.

pub mod deploy;
pub mod exec;
pub mod fault;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod validate;

//! Time and scheduled starts: the service clock and zone ([`clock`], the lowest layer, read
//! by the SQL functions and the executor too), schedules and planned starts across clock
//! changes ([`schedule`], pure), and the scheduler that starts batches when their planned
//! start comes ([`scheduler`], which starts them through a [`scheduler::Starter`] the server
//! gives it, so that nothing here depends on the executor).

pub mod clock;
pub mod schedule;
pub mod scheduler;

//! weft's notifications: what tells people when a run fails, finishes, is late or misses its
//! start. The repository records each notification in the transaction of its event (the
//! outbox, `weft_repo::notifications`); this crate sends them: [`templates`] (what a
//! notification says, minijinja over the run's facts), [`channels`] (e-mail through SMTP,
//! webhooks signed with HMAC-SHA256), [`late`] (runs not finished by a time of day, or going
//! on too long) and [`sender`] (each host's thread that watches for late runs, claims the
//! due notifications, sends, and marks each sent, due again after a back-off, or given up);
//! [`lineage`] sends the OpenLineage events of every action to a lineage server.

pub mod channels;
pub mod late;
pub mod lineage;
pub mod sender;
pub mod templates;

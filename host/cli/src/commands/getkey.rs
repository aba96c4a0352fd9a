//! `weft getkey`: prints a field of a key file entry (what bin/getkey runs).

use super::args::Home;
use super::keys::no_key_file;
use clap::Args;
use std::process::ExitCode;
use weft_core::keys::{self, KeyFile};
use weft_core::settings;

/// `weft getkey`'s arguments.
#[derive(Debug, Args)]
pub struct Getkey {
    /// The entry's key: a connection number or a name such as weft_server.
    name: String,
    /// Which field to print.
    #[arg(long, value_enum, default_value_t = Field::Url)]
    field: Field,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Field {
    Url,
    Type,
    User,
    Password,
    Options,
    Token,
}

impl Getkey {
    /// 0 printed, 1 no such entry or no key file, 2 a key file that cannot be read.
    pub fn run(self, home: &Home) -> ExitCode {
        getkey(&home.dir, &home.from, &self.name, self.field)
    }
}

fn getkey(
    home: &std::path::Path,
    home_from: &settings::HomeSource,
    name: &str,
    field: Field,
) -> ExitCode {
    let path = KeyFile::path_in(home);
    if !path.exists() {
        eprintln!("{}", no_key_file("getkey", &path, home_from));
        return ExitCode::FAILURE;
    }
    // The entry as a connection opens with it: a secret store's program asked now.
    let entry = KeyFile::load(&path).and_then(|kf| {
        kf.require(name)
            .and_then(|e| e.resolved().map(|e| e.into_owned()))
    });
    match entry {
        Ok(e) => {
            let value = match field {
                Field::Url => e.url.clone(),
                Field::Type => e.kind.clone(),
                Field::User => e.user.clone(),
                Field::Password => e.password.clone(),
                Field::Options => e
                    .options
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(";"),
                Field::Token => e.option("token").unwrap_or_default().to_owned(),
            };
            println!("{value}");
            ExitCode::SUCCESS
        }
        Err(e @ keys::Error::Missing { .. }) => {
            eprintln!("getkey: {e}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("getkey: {e}");
            ExitCode::from(2)
        }
    }
}

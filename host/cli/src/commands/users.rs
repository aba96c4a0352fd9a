//! `weft users`: named users and their tokens (`AddUser`, `ListUsers`, `ChangeUser`,
//! `CreateToken`, `RevokeToken`; the admin right). A token is printed once, when it is made:
//! the server keeps only its hash.

use super::args::{Endpoint, Home};
use super::view::{ask, print_json};
use crate::client::Exit;
use clap::{Args, Subcommand};
use std::process::ExitCode;
use weft_protocol::Role;
use weft_protocol::commands::{
    AddUser, ChangeUser, CreateToken, ListUsers, NewToken, RevokeToken, UserView,
};

/// `weft users`' arguments.
#[derive(Debug, Args)]
pub struct Users {
    #[command(subcommand)]
    command: UsersCommand,
}

#[derive(Debug, Subcommand)]
enum UsersCommand {
    /// Add a user with a role and print its first token (shown this once).
    Add {
        /// The user's name (letters, digits, . _ - @).
        name: String,
        /// viewer (reads), operator (+ runs, halts, restarts, backfills), deployer (+ deploys,
        /// deletes, exports) or admin (+ users, audit).
        #[arg(long, value_parser = parse_role)]
        role: Role,
        /// Limit the user's deploy and operate rights to this folder and what is below it
        /// (repeat for several); default everywhere.
        #[arg(long = "folder", value_name = "PATH")]
        folders: Vec<String>,
        /// The token expires after these many days; default never.
        #[arg(long, value_name = "DAYS")]
        expires_in_days: Option<i64>,
        #[command(flatten)]
        out: Out,
    },
    /// List the users with their roles, folders and tokens (never a secret).
    List {
        #[command(flatten)]
        out: Out,
    },
    /// Change a user's role or folders.
    Set {
        /// The user.
        name: String,
        /// A new role.
        #[arg(long, value_parser = parse_role)]
        role: Option<Role>,
        /// New folders (repeat for several); see --everywhere.
        #[arg(long = "folder", value_name = "PATH")]
        folders: Vec<String>,
        /// Lift the user's folder limits.
        #[arg(long, conflicts_with = "folders")]
        everywhere: bool,
        #[command(flatten)]
        out: Out,
    },
    /// Disable a user: its tokens are refused at once, on every host.
    Disable {
        /// The user.
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Enable a disabled user again.
    Enable {
        /// The user.
        name: String,
        #[command(flatten)]
        out: Out,
    },
    /// Make another token for a user and print it (shown this once); --replace revokes its
    /// other tokens (a rotation).
    Token {
        /// The user.
        name: String,
        /// The token expires after these many days; default never.
        #[arg(long, value_name = "DAYS")]
        expires_in_days: Option<i64>,
        /// Revoke the user's other tokens in the same step.
        #[arg(long)]
        replace: bool,
        #[command(flatten)]
        out: Out,
    },
    /// Revoke a token by its id (weft users list shows them).
    Revoke {
        /// The token's id.
        token_id: String,
        #[command(flatten)]
        out: Out,
    },
}

/// How the answer prints, and the server.
#[derive(Debug, Clone, Args)]
struct Out {
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    endpoint: Endpoint,
}

fn parse_role(word: &str) -> Result<Role, String> {
    Role::from_word(word)
        .ok_or_else(|| format!("`{word}` is no role: viewer, operator, deployer or admin"))
}

impl Users {
    /// Runs the subcommand; the exit code of [`Exit`].
    pub fn run(self, home: &Home) -> ExitCode {
        const WHO: &str = "weft users";
        let code = match self.command {
            UsersCommand::Add {
                name,
                role,
                folders,
                expires_in_days,
                out,
            } => {
                let asked = AddUser {
                    name,
                    role,
                    folders,
                    expires_in_days,
                };
                match ask(&out.endpoint, home, WHO, asked) {
                    Ok((_, t)) if out.json => print_json(WHO, &t),
                    Ok((_, t)) => print_token(&t, &format!("user {} added as {role}", t.user)),
                    Err(code) => code,
                }
            }
            UsersCommand::List { out } => match ask(&out.endpoint, home, WHO, ListUsers {}) {
                Ok((_, list)) if out.json => print_json(WHO, &list),
                Ok((_, list)) => {
                    print_users(&list.users);
                    Exit::Ok
                }
                Err(code) => code,
            },
            UsersCommand::Set {
                name,
                role,
                folders,
                everywhere,
                out,
            } => {
                let folders = if everywhere {
                    Some(Vec::new())
                } else {
                    (!folders.is_empty()).then_some(folders)
                };
                if role.is_none() && folders.is_none() {
                    eprintln!("{WHO} set: give --role, --folder or --everywhere");
                    Exit::Usage
                } else {
                    change(
                        home,
                        &out,
                        ChangeUser {
                            name,
                            role,
                            folders,
                            disabled: None,
                        },
                    )
                }
            }
            UsersCommand::Disable { name, out } => switch(home, &out, name, true),
            UsersCommand::Enable { name, out } => switch(home, &out, name, false),
            UsersCommand::Token {
                name,
                expires_in_days,
                replace,
                out,
            } => {
                let asked = CreateToken {
                    user: name,
                    expires_in_days,
                    replace,
                };
                match ask(&out.endpoint, home, WHO, asked) {
                    Ok((_, t)) if out.json => print_json(WHO, &t),
                    Ok((_, t)) => {
                        let what = if replace {
                            format!("new token for {}; its other tokens are revoked", t.user)
                        } else {
                            format!("new token for {}", t.user)
                        };
                        print_token(&t, &what)
                    }
                    Err(code) => code,
                }
            }
            UsersCommand::Revoke { token_id, out } => {
                match ask(&out.endpoint, home, WHO, RevokeToken { token_id }) {
                    Ok((_, r)) if out.json => print_json(WHO, &r),
                    Ok((_, r)) => {
                        println!("token {} of {} revoked", r.token_id, r.user);
                        Exit::Ok
                    }
                    Err(code) => code,
                }
            }
        };
        ExitCode::from(code as u8)
    }
}

/// Disables or enables user `name`.
fn switch(home: &Home, out: &Out, name: String, disabled: bool) -> Exit {
    let asked = ChangeUser {
        name,
        role: None,
        folders: None,
        disabled: Some(disabled),
    };
    change(home, out, asked)
}

/// Sends a change and prints the user as it is now.
fn change(home: &Home, out: &Out, asked: ChangeUser) -> Exit {
    match ask(&out.endpoint, home, "weft users", asked) {
        Ok((_, changed)) if out.json => print_json("weft users", &changed),
        Ok((_, changed)) => {
            print_users(std::slice::from_ref(&changed.user));
            Exit::Ok
        }
        Err(code) => code,
    }
}

/// A token just made, with what to do with it.
fn print_token(t: &NewToken, what: &str) -> Exit {
    println!("{what}");
    println!("token id: {}", t.token_id);
    if let Some(at) = &t.expires_at {
        println!("expires:  {at}");
    }
    println!("token:    {}", t.token);
    println!("The token is shown this once; the server keeps only its hash. Give it to the user");
    println!("(WEFT_TOKEN, --token, or the web page's sign-in).");
    Exit::Ok
}

/// A line a user, and a line a token under it.
fn print_users(users: &[UserView]) {
    println!("USER\tROLE\tFOLDERS\tSTATE\tCREATED");
    for u in users {
        let folders = if u.folders.is_empty() {
            "everywhere".to_owned()
        } else {
            u.folders.join(",")
        };
        let state = match &u.disabled_at {
            Some(at) => format!("disabled {at}"),
            None => "enabled".to_owned(),
        };
        println!(
            "{}\t{}\t{folders}\t{state}\t{} by {}",
            u.name, u.role, u.created_at, u.created_by
        );
        for t in &u.tokens {
            let mut line = format!("  token {} {} made {}", t.id, t.state, t.created_at);
            if let Some(at) = &t.expires_at {
                line.push_str(&format!(", expires {at}"));
            }
            if let Some(at) = &t.revoked_at {
                line.push_str(&format!(", revoked {at}"));
            }
            if let Some(at) = &t.last_used_at {
                line.push_str(&format!(", last used {at}"));
            }
            println!("{line}");
        }
    }
}

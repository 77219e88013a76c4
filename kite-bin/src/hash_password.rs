//! `kite hash-password`: an argon2id hash of a password read on stdin.

use anyhow::{Context, bail};
use std::io::BufRead;

/// Reads one line from stdin and prints its argon2id hash.
pub fn run() -> anyhow::Result<()> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).context("cannot read the password from standard input")?;
    let password = line.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(&line);
    if password.is_empty() {
        bail!("no password on standard input: pipe one in, e.g. `printf '%s\\n' \"$PASSWORD\" | kite hash-password`");
    }
    let hash = kite_ssh::password::hash(password)?;
    println!("{hash}");
    Ok(())
}

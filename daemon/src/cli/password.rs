//! Passwords for `user add` and `user passwd`: typed twice on a terminal
//! without echo, or one line from stdin when it is not a terminal.

use std::io::{BufRead, IsTerminal, Write};
use std::os::fd::AsRawFd;

use anyhow::{bail, Context, Result};

/// The password for `name`: prompted for twice on a terminal (the two must
/// match), else the first line of stdin.
pub fn read_password(name: &str) -> Result<String> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        let pw = read_line(&mut stdin.lock())?;
        if pw.is_empty() {
            bail!("no password on stdin");
        }
        return Ok(pw);
    }
    twice(name, prompt)
}

/// Asks for the password of `name` and for it again; both must match.
fn twice(name: &str, mut ask: impl FnMut(&str) -> Result<String>) -> Result<String> {
    let first = ask(&format!("password for {name}: "))?;
    if first.is_empty() {
        bail!("no password given");
    }
    let second = ask("again: ")?;
    if first != second {
        bail!("the two passwords differ; nothing was changed");
    }
    Ok(first)
}

/// One line without its line ending.
fn read_line(input: &mut impl BufRead) -> Result<String> {
    let mut line = String::new();
    input.read_line(&mut line).context("reading the password")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

/// Prompts on stderr and reads a line from the terminal with echo off.
fn prompt(text: &str) -> Result<String> {
    eprint!("{text}");
    std::io::stderr().flush().ok();
    let stdin = std::io::stdin();
    let _echo = EchoOff::new(stdin.as_raw_fd());
    let line = read_line(&mut stdin.lock());
    eprintln!();
    line
}

/// Turns terminal echo off until dropped.
struct EchoOff {
    fd: i32,
    saved: Option<libc::termios>,
}

impl EchoOff {
    fn new(fd: i32) -> Self {
        // SAFETY: tcgetattr fills the zeroed termios on success; the fd is
        // stdin, open for the life of the process.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return Self { fd, saved: None };
        }
        let saved = t;
        t.c_lflag &= !libc::ECHO;
        // SAFETY: t is a valid termios read from this fd.
        let ok = unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } == 0;
        Self {
            fd,
            saved: ok.then_some(saved),
        }
    }
}

impl Drop for EchoOff {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            // SAFETY: restores the termios read from this fd.
            unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, t) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(list: &[&str]) -> impl FnMut(&str) -> Result<String> {
        let mut list: Vec<String> = list.iter().rev().map(|s| s.to_string()).collect();
        move |_| Ok(list.pop().unwrap_or_default())
    }

    #[test]
    fn asked_twice_and_both_must_match() {
        assert_eq!(
            twice("a", answers(&["long password", "long password"])).unwrap(),
            "long password"
        );
        let err = twice("a", answers(&["long password", "long passw0rd"])).unwrap_err();
        assert!(err.to_string().contains("differ"), "{err}");
        let err = twice("a", answers(&["", ""])).unwrap_err();
        assert!(err.to_string().contains("no password"), "{err}");
    }

    #[test]
    fn a_line_loses_its_ending_only() {
        let mut input: &[u8] = b" pass word \r\nnext\n";
        assert_eq!(read_line(&mut input).unwrap(), " pass word ");
    }
}

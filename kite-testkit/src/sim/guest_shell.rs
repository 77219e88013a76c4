//! How a simulated guest starts its user's shell: `/bin/sh` in the guest's
//! home directory with a clean environment, on a pseudo-terminal when the
//! client asked for one (the serial console always does) or on pipes.
//! The serial login and the in-process SSH server start shells this way;
//! the OpenSSH guest does the same through sshd's `ForceCommand`.

use std::path::Path;
use std::process::Stdio;
use tokio::process::Child;

/// Who the shell runs for and where.
#[derive(Clone, Debug)]
pub(crate) struct ShellUser {
    /// The account name the shell sees in `USER` and `LOGNAME`.
    pub login: String,
    /// The machine's name, shown in the prompt.
    pub hostname: String,
    /// The guest's home directory: the shell starts there.
    pub home: std::path::PathBuf,
}

/// What a pseudo-terminal shell is started with.
pub(crate) struct Terminal<'a> {
    /// `TERM` for the shell.
    pub term: &'a str,
    /// Rows and columns.
    pub size: (u16, u16),
}

impl ShellUser {
    /// `/bin/sh -i`, or `/bin/sh -c <command>`, with the user's environment.
    fn command(&self, command: Option<&str>) -> Vec<String> {
        match command {
            Some(command) => vec!["-c".into(), command.into()],
            None => vec!["-i".into()],
        }
    }

    fn environment(&self, term: Option<&str>) -> Vec<(&'static str, String)> {
        let mut environment = vec![
            ("HOME", self.home.display().to_string()),
            ("PATH", "/usr/local/bin:/usr/bin:/bin".to_string()),
            ("USER", self.login.clone()),
            ("LOGNAME", self.login.clone()),
            ("SHELL", "/bin/sh".to_string()),
            ("PS1", format!("{}@{}:~$ ", self.login, self.hostname)),
        ];
        if let Some(term) = term {
            environment.push(("TERM", term.to_string()));
        }
        environment
    }

    /// Starts the shell on a new pseudo-terminal; the child is killed when dropped.
    pub fn on_pty(&self, terminal: &Terminal<'_>, command: Option<&str>) -> Result<(Child, pty_process::Pty), String> {
        let failed = |e: pty_process::Error| format!("the shell's pseudo-terminal: {e}");
        self.ensure_home()?;
        let (pty, pts) = pty_process::open().map_err(failed)?;
        pty.resize(pty_process::Size::new(terminal.size.0, terminal.size.1)).map_err(failed)?;
        let child = pty_process::Command::new("/bin/sh")
            .args(self.command(command))
            .env_clear()
            .envs(self.environment(Some(terminal.term)))
            .current_dir(&self.home)
            .kill_on_drop(true)
            .spawn(pts)
            .map_err(failed)?;
        Ok((child, pty))
    }

    /// Starts the shell with its standard streams on pipes; the child is killed when dropped.
    pub fn on_pipes(&self, command: Option<&str>) -> Result<Child, String> {
        self.ensure_home()?;
        tokio::process::Command::new("/bin/sh")
            .args(self.command(command))
            .env_clear()
            .envs(self.environment(None))
            .current_dir(&self.home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start /bin/sh: {e}"))
    }

    fn ensure_home(&self) -> Result<(), String> {
        let home: &Path = &self.home;
        std::fs::create_dir_all(home).map_err(|e| format!("cannot create {}: {e}", home.display()))
    }
}

/// The exit status a shell reports over SSH: its code, or 128 plus the signal that ended it.
pub(crate) fn exit_code(status: std::process::ExitStatus) -> u32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u32::try_from(code).unwrap_or(255),
        (None, Some(signal)) => 128 + u32::try_from(signal).unwrap_or(0),
        (None, None) => 255,
    }
}

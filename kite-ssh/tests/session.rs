//! Session channels through the router with the real OpenSSH client and a
//! real sshd: exec with stdout, stderr and exit status; a shell on a pty;
//! env; stdin with EOF; password, keyboard-interactive and key login.

mod common;

use common::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exec_keeps_stdout_stderr_and_the_exit_status_apart() {
    let s = setup().await;
    let ssh = Ssh::to(&s.router, "alice").key(&s.user);
    let output = tokio::task::spawn_blocking(move || ssh.run(&["echo out; echo err >&2; exit 3"])).await.unwrap();
    assert_eq!(text(&output.stdout), "out\n");
    assert_eq!(text(&output.stderr), "err\n");
    assert_eq!(output.status.code(), Some(3));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_reaches_the_command_and_its_eof_ends_it() {
    let s = setup().await;
    let ssh = Ssh::to(&s.router, "alice").key(&s.user).stdin(b"one\ntwo\n");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["wc -l"])).await.unwrap();
    assert_eq!(text(&output.stdout).trim(), "2");
    assert!(output.status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pty_is_allocated_when_asked_for() {
    let s = setup().await;
    let ssh = Ssh::to(&s.router, "alice").key(&s.user).arg("-tt");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["tty; echo TERM=$TERM"])).await.unwrap();
    let out = text(&output.stdout);
    assert!(out.contains("/dev/pts/"), "{out}");
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn env_is_passed_to_the_backend() {
    let s = setup().await;
    let ssh = Ssh::to(&s.router, "alice").key(&s.user).opt("SendEnv=KITE_TEST");
    let mut command_env = ssh;
    command_env.env.push(("KITE_TEST".into(), "hello-env".into()));
    let output = tokio::task::spawn_blocking(move || command_env.run(&["echo $KITE_TEST"])).await.unwrap();
    assert_eq!(text(&output.stdout).trim(), "hello-env");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interactive_shell_runs_what_it_is_fed() {
    let s = setup().await;
    let ssh = Ssh::to(&s.router, "alice").key(&s.user).arg("-T").stdin(b"echo from-shell\nexit 7\n");
    let output = tokio::task::spawn_blocking(move || ssh.run(&[])).await.unwrap();
    assert!(text(&output.stdout).contains("from-shell"));
    assert_eq!(output.status.code(), Some(7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn password_and_keyboard_interactive_logins_work_and_a_wrong_password_does_not() {
    let s = setup().await;
    for method in ["password", "keyboard-interactive"] {
        let ssh = Ssh::to(&s.router, "alice").password("secret", method);
        let output = tokio::task::spawn_blocking(move || ssh.run(&["echo logged-in"])).await.unwrap();
        assert_eq!(text(&output.stdout).trim(), "logged-in", "{method}: {}", text(&output.stderr));
        let ssh = Ssh::to(&s.router, "alice").password("wrong", method);
        let output = tokio::task::spawn_blocking(move || ssh.run(&["echo logged-in"])).await.unwrap();
        assert_eq!(output.status.code(), Some(255), "{method}");
        assert!(text(&output.stderr).contains("Permission denied"), "{method}: {}", text(&output.stderr));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_login_or_key_is_refused() {
    let s = setup().await;
    let stranger = UserKey::new();
    let ssh = Ssh::to(&s.router, "alice").key(&stranger);
    let output = tokio::task::spawn_blocking(move || ssh.run(&["true"])).await.unwrap();
    assert_eq!(output.status.code(), Some(255));
    let ssh = Ssh::to(&s.router, "mallory").password("secret", "password");
    let output = tokio::task::spawn_blocking(move || ssh.run(&["true"])).await.unwrap();
    assert_eq!(output.status.code(), Some(255));
    assert!(text(&output.stderr).contains("Permission denied"));
}

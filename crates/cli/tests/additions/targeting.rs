//! The §9 additions the other scenarios leave out, against the real server:
//! choosing the target per run (§9.7: `--context`, `IGGY_CLI_CONTEXT`, the
//! `IGGY_CLI_*` variables and their precedence), non-interactive use (§9.8:
//! `--no-input`, `IGGY_CLI_NO_INPUT`, `--password-stdin`), the output format
//! variable (§9.1), `--message-id` and `--input-file -` (§9.4), and
//! `message consume` ending cleanly on SIGTERM and SIGINT (§9.2).

use crate::support::{Server, User};
use std::io::BufRead;
use std::process::{Command, Stdio};

/// A base64 AES-256 key (the bytes 0..32).
const KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

#[test]
fn given_contexts_and_variables_when_choosing_target_should_follow_precedence() {
    let server = Server::start();
    let tcp = server.address("tcp").to_string();
    // Only the context names the server: no address variable, no credentials.
    let u = User::new(Some(&server))
        .without("IGGY_CLI_TCP_SERVER_ADDRESS")
        .without("IGGY_USERNAME")
        .without("IGGY_PASSWORD");
    u.ok(&[
        "context",
        "create",
        "prod",
        "--tcp-server-address",
        &tcp,
        "-u",
        "iggy",
        "-p",
        "iggy",
    ]);
    // --context and IGGY_CLI_CONTEXT pick it for one run only.
    assert!(
        u.ok(&["--context", "prod", "me"])
            .stdout
            .contains("| Transport | TCP")
    );
    let by_env = u.clone_with("IGGY_HOME", &u.home().display().to_string());
    assert_eq!(by_env.with("IGGY_CLI_CONTEXT", "prod").run(&["me"]).code, 0);
    let stored = std::fs::read_to_string(u.home().join(".active_context")).unwrap_or_default();
    assert!(stored.is_empty() || stored == "default", "{stored}");
    let active = u.ok(&["context", "list", "-l", "list"]).stdout;
    assert!(active.contains("\"default*\""), "{active}");
    let none = u.run(&["me"]);
    assert_eq!(none.code, 1);
    assert!(none.errors().contains("Missing iggy server credentials"));

    // Command line > IGGY_CLI_* variable > context.
    let dead = u.clone_with("IGGY_HOME", &u.home().display().to_string());
    let dead = dead.with("IGGY_CLI_TCP_SERVER_ADDRESS", "127.0.0.1:1");
    let env_wins = dead.run(&[
        "--context",
        "prod",
        "--tcp-reconnection-max-retries",
        "0",
        "me",
    ]);
    assert_eq!(env_wins.code, 1);
    assert!(
        env_wins
            .errors()
            .starts_with("Error: IggyClient(SdkError(CannotEstablishConnection))"),
        "{}",
        env_wins.stderr
    );
    dead.ok(&["--context", "prod", "--tcp-server-address", &tcp, "me"]);
    let ws = u
        .clone_with("IGGY_HOME", &u.home().display().to_string())
        .with("IGGY_CLI_TRANSPORT", "ws");
    let over_ws = ws.ok(&["--context", "prod", "me"]).stdout;
    assert!(over_ws.contains("| Transport | WebSocket"), "{over_ws}");
    let over_tcp = ws.ok(&["--context", "prod", "--transport", "tcp", "me"]);
    assert!(over_tcp.stdout.contains("| Transport | TCP"));

    // IGGY_CLI_TOKEN logs in with a PAT; IGGY_CLI_URL carries everything.
    let token = u.ok(&["--context", "prod", "-q", "pat", "create", "envtoken"]);
    let token = token.stdout.trim();
    let with_token = User::new(Some(&server))
        .without("IGGY_USERNAME")
        .without("IGGY_PASSWORD")
        .with("IGGY_CLI_TOKEN", token);
    with_token.ok(&["me"]);
    let url = User::new(None)
        .without("IGGY_USERNAME")
        .without("IGGY_PASSWORD")
        .with("IGGY_CLI_URL", &format!("iggy://iggy:iggy@{tcp}"));
    assert!(url.ok(&["me"]).stdout.contains("| Transport | TCP"));
}

#[test]
fn given_no_input_or_password_stdin_when_logging_in_should_never_prompt() {
    let server = Server::start();
    let nocred = User::new(Some(&server))
        .without("IGGY_USERNAME")
        .without("IGGY_PASSWORD");
    for (flag, env) in [(Some("--no-input"), None), (None, Some("1"))] {
        let user = match env {
            Some(v) => nocred.clone_with("IGGY_CLI_NO_INPUT", v),
            None => nocred.clone_with("IGGY_HOME", &nocred.home().display().to_string()),
        };
        let args: Vec<&str> = flag.into_iter().chain(["-u", "iggy", "me"]).collect();
        // A password on stdin is not read either.
        let run = user.run_with_stdin(&args, Some(b"iggy\n"));
        assert_eq!((run.code, run.stdout.as_str()), (1, ""));
        assert!(
            run.errors()
                .starts_with("Error: CommandError(password required but --no-input is set)"),
            "{}",
            run.stderr
        );
    }
    let piped = nocred.run_with_stdin(&["--password-stdin", "-u", "iggy", "me"], Some(b"iggy\n"));
    assert_eq!(piped.code, 0, "{}", piped.stderr);
    assert!(piped.stdout.starts_with("Executing me command\n"));
    // --password-stdin and -p together are a usage error.
    assert_eq!(
        nocred
            .run(&["--password-stdin", "-u", "iggy", "-p", "x", "me"])
            .code,
        2
    );
}

#[test]
fn given_producing_additions_when_sending_should_keep_ids_keys_and_files() {
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "p"]);
    u.ok(&["topic", "create", "p", "t", "1", "none"]);

    // --message-id on a single message, read back through the JSON output
    // that IGGY_CLI_OUTPUT_FORMAT selects.
    u.ok(&["message", "send", "--message-id", "42", "p", "t", "with-id"]);
    let json = u.clone_with("IGGY_CLI_OUTPUT_FORMAT", "json");
    let polled: serde_json::Value = serde_json::from_str(
        &json
            .ok(&["message", "poll", "--first", "-m", "5", "p", "t", "0"])
            .stdout,
    )
    .unwrap();
    assert_eq!(polled["messages"][0]["id"], "42");
    assert_eq!(polled["messages"][0]["payload"], "with-id");

    // --input-file - reads the binary message file format from stdin.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.bin");
    let file_arg = file.to_str().unwrap();
    u.ok(&["message", "send", "p", "t", "two", "three"]);
    u.ok(&[
        "message",
        "poll",
        "--offset",
        "1",
        "-m",
        "2",
        "--output-file",
        file_arg,
        "p",
        "t",
        "0",
    ]);
    let bytes = std::fs::read(&file).unwrap();
    let resent = u.run_with_stdin(
        &["message", "send", "--input-file", "-", "p", "t"],
        Some(&bytes),
    );
    assert_eq!(resent.code, 0, "{}", resent.stderr);
    assert!(
        resent
            .stdout
            .contains(&format!("Created 2 messages using {} bytes", bytes.len()))
    );
    let tail = u.ok(&["message", "poll", "--offset", "3", "-m", "5", "p", "t", "0"]);
    assert_eq!(
        crate::spec_groups::payload_column(&tail.stdout),
        ["two", "three"]
    );

    // IGGY_CLI_ENCRYPTION_KEY encrypts on send and decrypts on poll.
    let secret = u.clone_with("IGGY_CLI_ENCRYPTION_KEY", KEY);
    secret.ok(&["message", "send", "p", "t", "hidden"]);
    let plain = secret.ok(&["message", "poll", "--last", "p", "t", "0"]);
    assert_eq!(
        crate::spec_groups::payload_column(&plain.stdout),
        ["hidden"]
    );
    let raw = u.ok(&["message", "poll", "--last", "--raw", "p", "t", "0"]);
    assert!(!raw.stdout.contains("hidden"));
}

/// Starts `message consume -F` as consumer 4, waits for its first message,
/// sends `signal` and returns its exit code.
fn consume_until(u: &User, signal: &str) -> i32 {
    let mut command = Command::new(env!("CARGO_BIN_EXE_iggy"));
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("IGGY") || k == "NO_COLOR") {
        command.env_remove(key);
    }
    let mut child = command
        .envs(u.env.iter().map(|(k, v)| (k, v)))
        .args([
            "message",
            "consume",
            "--consumer",
            "4",
            "-F",
            "--batch",
            "1",
            "--poll-interval",
            "50ms",
            "sig",
            "t",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.next().unwrap().unwrap().ends_with("|m"));
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    child.wait().unwrap().code().unwrap_or(-1)
}

#[test]
fn given_following_consumer_when_signalled_should_commit_and_exit_zero() {
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "sig"]);
    u.ok(&["topic", "create", "sig", "t", "1", "none"]);
    for signal in ["-TERM", "-INT"] {
        u.ok(&["message", "send", "sig", "t", "m"]);
        assert_eq!(consume_until(&u, signal), 0, "{signal}");
    }
    // Both runs committed what they printed: offsets 0 and then 1.
    let stored = u.ok(&["consumer-offset", "get", "4", "sig", "t", "0"]);
    assert!(
        stored.stdout.contains("Stored offset  | 1"),
        "{}",
        stored.stdout
    );
}

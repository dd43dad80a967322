//! Acceptance checks of the CLI spec §10 against the real server and the
//! real binary, plus the §8 fixes and §9 additions. Groups run in order
//! inside one scenario because later checks rely on earlier state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod additions;
mod spec_groups;
mod support;

use spec_groups::admin::{additions, clean_up, contexts, system_commands, users_and_tokens};
use spec_groups::{
    connecting_and_credentials, messages, offsets_and_groups, payload_column,
    streams_topics_partitions,
};
use support::{Server, User};

#[test]
fn given_no_server_when_parsing_should_match_group_a() {
    let u = User::new(None);
    let v = u.ok(&["--version"]);
    assert!(
        v.stdout.starts_with("iggy-cli ") && v.stdout.ends_with('\n'),
        "{}",
        v.stdout
    );
    let banner = u.ok(&[]);
    assert!(banner.stdout.contains("Usage: iggy [OPTIONS] [COMMAND]"));
    assert!(
        banner
            .stdout
            .contains("stream           stream operations [alias: s]")
    );
    assert!(
        banner
            .stdout
            .contains("Run 'iggy --help' for full help message.")
    );
    assert!(!banner.stdout.contains("Options:"));
    assert!(banner.stderr.is_empty());
    let group = u.run(&["stream"]);
    assert_eq!((group.code, group.stdout.as_str()), (2, ""));
    assert!(group.stderr.contains("Usage: iggy stream <COMMAND>"));
    let cases: &[(&[&str], &str)] = &[
        (&["stream", "create"], "<NAME>"),
        (&["stream", "list", "-u", "iggy"], ""),
        (&["-u", "iggy", "-t", "abc", "me"], "cannot be used with"),
        (
            &["message", "poll", "0", "0", "0"],
            "<--offset <OFFSET>|--first|--last|--next>",
        ),
        (
            &["topic", "create", "s", "t", "1", "lz4"],
            "Unknown compression type: lz4",
        ),
        (
            &["user", "create", "bob", "secret", "-g", "bogus"],
            "Unknown global permission \"bogus\"",
        ),
        (
            &["user", "create", "bob", "secret", "-s", "1:read_topic"],
            "Unknown permission \"read_topic\" for stream ID: 1",
        ),
        (&["pat", "create", "tmp", "1day", "--store-token"], ""),
        (
            &["message", "send", "-p", "0", "-m", "k", "s", "t", "x"],
            "",
        ),
        (
            &["message", "send", "-H", "bad", "s", "t", "x"],
            "Invalid format",
        ),
        (&["options", "bogus"], ""),
        (
            &["partition", "create", "s", "t", "0"],
            "0 is not in 1..100001",
        ),
        (&["ping", "-c", "0"], ""),
        (&["--tcp-tls-enabled", "true", "me"], ""),
    ];
    for (args, needle) in cases {
        let run = u.run(args);
        assert_eq!(run.code, 2, "iggy {args:?}: {}", run.stderr);
        assert!(run.stderr.contains(needle), "iggy {args:?}: {}", run.stderr);
    }
    let completion = u.ok(&["--generate", "bash"]);
    assert!(completion.stdout.contains("iggy"));
    assert_eq!(u.ok(&["completion", "bash"]).stdout, completion.stdout);
}

#[test]
fn given_fresh_server_when_running_spec_groups_over_tcp_should_print_reference_output() {
    let server = Server::start();
    let u = User::new(Some(&server));
    connecting_and_credentials(&u);
    streams_topics_partitions(&u);
    messages(&u);
    offsets_and_groups(&u);
    users_and_tokens(&u);
    system_commands(&u, &server);
    contexts(&server);
    additions(&u);
    clean_up(&u);
}

#[test]
fn given_server_when_using_quic_http_and_websocket_should_reach_it() {
    let server = Server::start();
    let u = User::new(Some(&server));
    assert!(
        u.ok(&["--transport", "quic", "me"])
            .stdout
            .contains("| Transport | QUIC")
    );
    assert!(
        u.ok(&["--transport", "ws", "me"])
            .stdout
            .contains("| Transport | WebSocket")
    );
    let http_me = u.run(&["--transport", "http", "me"]);
    assert!(http_me.code == 1 && http_me.errors().contains("Problem sending get_me command"));
    u.ok(&["--transport", "http", "stream", "create", "viahttp"]);
    let g8 = u.ok(&["--transport", "http", "stream", "list", "-l", "list"]);
    assert_eq!(g8.lines().len(), 2);
    assert!(g8.lines()[1].starts_with("0|") && g8.lines()[1].ends_with("|viahttp|0 B|0|0"));
    let duplicate = u.run(&["--transport", "http", "stream", "create", "viahttp"]);
    assert!(
        duplicate
            .errors()
            .contains("HTTP response error, status: 400"),
        "{}",
        duplicate.stderr
    );
    u.ok(&[
        "--transport",
        "ws",
        "topic",
        "create",
        "viahttp",
        "t",
        "1",
        "none",
    ]);
    u.ok(&[
        "--transport",
        "ws",
        "message",
        "send",
        "-p",
        "0",
        "viahttp",
        "t",
        "over-ws",
    ]);
    assert_eq!(
        payload_column(
            &u.ok(&[
                "--transport",
                "quic",
                "message",
                "poll",
                "--first",
                "viahttp",
                "t",
                "0"
            ])
            .stdout
        ),
        ["over-ws"]
    );
    // §8 #2: `ws` has a server address for session entries instead of a crash.
    let status = u
        .ok(&[
            "--transport",
            "ws",
            "--session-store",
            "file",
            "session",
            "status",
        ])
        .stdout;
    assert!(status.contains(&format!(
        "| Server Address | {}",
        server.address("websocket")
    )));
    let ws = server.address("websocket");
    let ws_login = u.ok(&[
        "--transport",
        "ws",
        "--session-store",
        "file",
        "-u",
        "iggy",
        "-p",
        "iggy",
        "login",
    ]);
    assert!(
        ws_login
            .stdout
            .contains(&format!("Successfully logged into Iggy server {ws}"))
    );
    u.ok(&["--transport", "ws", "pat", "create", "wstoken"]);
    u.ok(&["--transport", "ws", "--session-store", "file", "logout"]);
}

#[test]
fn given_file_session_store_when_logging_in_and_out_should_follow_session_rules() {
    let server = Server::start();
    let u = User::new(Some(&server)).with("IGGY_CLI_SESSION_STORE", "file");
    let nocred = u.clone_without_credentials();
    let addr = server.address("tcp").to_string();
    assert_eq!(
        u.ok(&["-u", "iggy", "-p", "iggy", "login"]).stdout,
        format!("Executing login command\nSuccessfully logged into Iggy server {addr}\n")
    );
    assert_eq!(nocred.run(&["me"]).code, 0);
    assert_eq!(
        u.ok(&["-u", "iggy", "-p", "iggy", "login"]).stdout,
        format!("Executing login command\nAlready logged into Iggy server {addr}\n")
    );
    assert!(
        u.ok(&["session", "status"])
            .stdout
            .contains("Session Active | Yes (token presence only, freshness not verified)")
    );
    assert!(
        u.ok(&["pat", "list", "-l", "list"])
            .stdout
            .lines()
            .any(|l| l.starts_with("iggy-cli-session|"))
    );
    assert_eq!(
        nocred.ok(&["logout"]).stdout,
        format!("Executing logout command\nSuccessfully logged out from Iggy server {addr}\n")
    );
    assert!(
        u.ok(&["session", "status"])
            .stdout
            .contains("Session Active | No")
    );
    assert!(
        !u.ok(&["pat", "list", "-l", "list"])
            .stdout
            .contains("iggy-cli-session")
    );
    u.ok(&["-u", "iggy", "-p", "iggy", "login", "1s"]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(nocred.run(&["me"]).code, 1);
    // §8 #4: explicit credentials win over the stale session.
    assert_eq!(u.run(&["-u", "iggy", "-p", "iggy", "me"]).code, 0);
    assert!(
        u.ok(&["-u", "iggy", "-p", "iggy", "login"])
            .stdout
            .contains("Successfully logged into")
    );
    nocred.ok(&["logout"]);
    let i8 = u.ok(&["pat", "create", "saved", "--store-token"]);
    assert_eq!(
        i8.lines()[1],
        "Personal access token with name: saved and without token expire time created"
    );
    assert!(!i8.stdout.contains("Token:"));
    assert_eq!(nocred.run(&["-n", "saved", "me"]).code, 0);
    u.ok(&["pat", "delete", "saved"]);
    assert_eq!(nocred.run(&["-n", "saved", "me"]).code, 1);
}

#[test]
fn given_follow_when_messages_arrive_should_print_them_as_they_come() {
    use std::io::BufRead;
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "tail"]);
    u.ok(&["topic", "create", "tail", "t", "1", "none"]);
    u.ok(&["message", "send", "-p", "0", "tail", "t", "first"]);
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_iggy"));
    command
        .env_clear()
        .envs(u.env.iter().map(|(k, v)| (k, v)))
        .env("PATH", std::env::var("PATH").unwrap_or_default());
    let mut child = command
        .args([
            "message",
            "poll",
            "--first",
            "--follow",
            "--poll-interval",
            "50ms",
            "tail",
            "t",
            "0",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(
        lines
            .next()
            .unwrap()
            .unwrap()
            .starts_with("Executing poll messages")
    );
    assert!(lines.next().unwrap().unwrap().ends_with("|first"));
    u.ok(&["message", "send", "-p", "0", "tail", "t", "second"]);
    assert!(lines.next().unwrap().unwrap().ends_with("|second"));
    let _ = child.kill();
    let _ = child.wait();
}

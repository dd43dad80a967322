//! Spec §10 groups F-J and the §9 additions: users, tokens, system
//! commands, contexts, JSON output, producing and polling additions.

use super::payload_column;
use crate::support::{Server, User};

pub fn users_and_tokens(u: &User) {
    assert_eq!(
        u.ok(&[
            "user",
            "create",
            "alice",
            "secret1",
            "-g",
            "r_str,p_msg",
            "-s",
            "0:s_msg#0:r_top"
        ])
        .stdout,
        "Executing create user with username: alice\nUser with username: alice created\n"
    );
    let f2 = u.ok(&["user", "get", "alice"]).stdout;
    for needle in [
        "| Username  | alice",
        "| Status    | active",
        "Global",
        "Read Streams",
        "Stream: 0",
        "Topic: 0",
    ] {
        assert!(f2.contains(needle), "{needle} in {f2}");
    }
    assert_eq!(
        u.ok(&["user", "status", "alice", "inactive"]).last_line(),
        "User with ID: alice updated with status: inactive"
    );
    assert_eq!(
        u.ok(&["user", "name", "alice", "alice2"]).last_line(),
        "User with ID: alice updated with username: alice2"
    );
    let f5 = "Executing change password for user with ID: alice2\nPassword for user with ID: alice2 changed\n";
    assert_eq!(
        u.ok(&["user", "password", "alice2", "secret1", "secret2"])
            .stdout,
        f5
    );
    let f6 = u.run_with_stdin(
        &["-q", "user", "password", "alice2"],
        Some(b"secret2\nsecret3\n"),
    );
    assert_eq!((f6.code, f6.stdout.as_str()), (0, f5));
    assert_eq!(
        u.ok(&["user", "permissions", "alice2"]).last_line(),
        "Permissions for user with ID: alice2 updated"
    );
    assert!(!u.ok(&["user", "get", "alice2"]).stdout.contains("Global"));
    assert!(
        u.ok(&["user", "list", "-l", "list"])
            .lines()
            .iter()
            .any(|l| l.starts_with("0|") && l.ends_with("|active|iggy"))
    );
    u.ok(&["user", "delete", "alice2"]);
    assert_eq!(
        u.ok(&["user", "get", "alice2"]).last_line(),
        "User with ID: alice2 was not found"
    );
    let token = u.ok(&["-q", "pat", "create", "citoken"]).stdout;
    assert_eq!(token.lines().count(), 1);
    let by_token = u
        .clone_without_credentials()
        .run(&["-t", token.trim(), "me"]);
    assert_eq!(by_token.code, 0, "{}", by_token.stderr);
    let f11 = u.ok(&["pat", "create", "tmp", "2days"]);
    assert_eq!(
        f11.lines()[1],
        "Personal access token with name: tmp and token expire time: 2days created"
    );
    assert!(f11.lines()[2].starts_with("Token: "));
    let f12 = u.ok(&["pat", "list", "-l", "list"]).stdout;
    assert!(f12.contains("citoken|unlimited") && f12.lines().any(|l| l.starts_with("tmp|2")));
    assert_eq!(
        u.ok(&["pat", "delete", "tmp"]).stdout,
        "Executing delete personal access tokens with name: tmp\nPersonal access token with name: tmp deleted\n"
    );
}

pub fn system_commands(u: &User, server: &Server) {
    let g1: serde_json::Value =
        serde_json::from_str(&u.ok(&["-q", "stats", "-o", "json"]).stdout).unwrap();
    assert_eq!(
        (g1["streams_count"].as_u64(), g1["topics_count"].as_u64()),
        (Some(1), Some(2))
    );
    let g2 = u.ok(&["stats", "-o", "list"]).stdout;
    assert!(g2.contains("Streams Count|1") && g2.contains("Topics Count|2"));
    let g3 = u.ok(&["stats"]).stdout;
    assert!(
        g3.starts_with("Executing stats command\n")
            && g3.contains("Streams Count            | 1")
            && g3.contains("Iggy Server PID")
    );
    let out_dir = tempfile::tempdir().unwrap();
    let g4 = u
        .ok(&[
            "snapshot",
            "-o",
            &out_dir.path().display().to_string(),
            "-s",
            "test",
        ])
        .stdout;
    assert!(g4.contains("File Path") && g4.contains("File Size (bytes)"));
    let files: Vec<String> = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        files.len() == 1
            && files[0].starts_with("snapshot_")
            && files[0].ends_with(".zip")
            && files[0].len() == 28,
        "{files:?}"
    );
    let g5 = u.ok(&["cluster", "metadata", "-l", "list"]);
    assert!(g5.lines()[1].starts_with("Cluster name: "));
    let ports = format!(
        "|{}|{}|{}|{}|leader|healthy",
        server.address("tcp").port(),
        server.address("quic").port(),
        server.address("http").port(),
        server.address("websocket").port()
    );
    assert!(g5.lines()[2].ends_with(&ports), "{}", g5.stdout);
    assert!(
        u.ok(&["client", "list", "-l", "list"])
            .lines()
            .iter()
            .any(|l| l.contains("|0|") && l.ends_with("|TCP|0"))
    );
    let g7 = u.ok(&["options", "topic"]).stdout;
    assert!(g7.contains("| Key") && g7.contains("durability") && g7.contains("segment_size"));
    let g9 = u.run(&["message", "flush", "orders", "events", "0"]);
    let flushed = "Flushed messages from topic with ID: events and stream with ID: orders (partition with ID: 0) without fsync";
    assert!(
        (g9.code == 0 && g9.last_line() == flushed)
            || (g9.code == 1
                && g9
                    .errors()
                    .starts_with("Error: CommandError(Problem flushing"))
    );
}

pub fn contexts(server: &Server) {
    let u = User::new(None);
    let plain = "Executing list contexts in list mode\nprinted_name=\"default*\"\n";
    assert_eq!(u.ok(&["context", "list", "-l", "list"]).stdout, plain);
    let coloured = u
        .clone_with("NO_COLOR", "")
        .ok(&["context", "list", "-l", "list"])
        .stdout;
    assert_eq!(
        coloured,
        "Executing list contexts in list mode\n\x1b[3mprinted_name\x1b[0m\x1b[2m=\x1b[0m\"default*\"\n"
    );
    let tcp = server.address("tcp").to_string();
    assert_eq!(
        u.ok(&[
            "context",
            "create",
            "prod",
            "--transport",
            "tcp",
            "--tcp-server-address",
            &tcp,
            "-u",
            "iggy",
            "-p",
            "iggy"
        ])
        .stdout,
        "Executing create context prod\ncontext 'prod' created successfully\n"
    );
    let file = u.home().join("contexts.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("[default]\n\n[prod]\nusername = \"iggy\"\npassword = \"iggy\"\ntransport = \"tcp\"\ntcp_server_address = "), "{text}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert_eq!(
        u.ok(&["context", "use", "prod"]).last_line(),
        "active context set to 'prod'"
    );
    assert_eq!(
        std::fs::read_to_string(u.home().join(".active_context")).unwrap(),
        "prod"
    );
    assert_eq!(u.clone_without_credentials().run(&["me"]).code, 0);
    let show = u.ok(&["context", "show", "prod"]).stdout;
    assert!(
        show.contains("prod*")
            && show.contains("Transport")
            && show.contains("| Password           | ********"),
        "{show}"
    );
    for (args, needle) in [
        (&["context", "create", "default"][..], "it is reserved"),
        (
            &["context", "create", "bad name"][..],
            "only alphanumeric characters, hyphens, and underscores",
        ),
        (
            &["context", "create", "x", "--transport", "websocket"][..],
            "invalid transport 'websocket'",
        ),
    ] {
        let run = u.run(args);
        assert!(
            run.code == 1 && run.errors().contains(needle),
            "{args:?}: {}",
            run.stderr
        );
    }
    std::fs::write(u.home().join(".active_context"), "nope").unwrap();
    let h9 = u.run(&["stream", "list"]);
    assert!(
        h9.code == 1
            && h9
                .errors()
                .contains("context key 'nope' is missing from contexts.toml")
    );
    std::fs::write(u.home().join(".active_context"), "prod").unwrap();
    assert_eq!(
        u.ok(&["context", "delete", "prod"]).last_line(),
        "context 'prod' deleted successfully"
    );
    assert_eq!(u.ok(&["context", "list", "-l", "list"]).stdout, plain);
    let h11 = u.run(&["context", "use", "nope"]);
    assert!(
        h11.code == 1
            && h11
                .errors()
                .contains("context key 'nope' is missing from contexts.toml")
    );
}

pub fn additions(u: &User) {
    let streams: serde_json::Value =
        serde_json::from_str(&u.ok(&["--json", "stream", "list"]).stdout).unwrap();
    assert_eq!(streams[0]["name"], "orders");
    let missing = u.run(&["--output-format", "json", "stream", "get", "42"]);
    assert_eq!((missing.code, missing.stdout.as_str()), (3, "null\n"));
    assert_eq!(u.run(&["--strict", "stream", "get", "42"]).code, 3);
    let failed = u.run(&["--json", "stream", "create", "orders"]);
    let error: serde_json::Value = serde_json::from_str(failed.errors().trim()).unwrap();
    assert_eq!(error["error"]["code"], 1012);
    let nul = u.run_with_stdin(
        &[
            "message",
            "send",
            "-p",
            "1",
            "--input-format",
            "null",
            "orders",
            "events",
        ],
        Some(b"x\ny\0z\0"),
    );
    assert_eq!(nul.code, 0, "{}", nul.stderr);
    let polled: serde_json::Value = serde_json::from_str(
        &u.ok(&[
            "--json", "message", "poll", "--offset", "2", "-m", "5", "orders", "events", "1",
        ])
        .stdout,
    )
    .unwrap();
    let payloads: Vec<&str> = polled["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["payload"].as_str().unwrap())
        .collect();
    assert_eq!(payloads, ["x\ny", "z"]);
    let keyed = u.run_with_stdin(
        &[
            "message",
            "send",
            "--key-delimiter",
            "=",
            "orders",
            "events",
        ],
        Some(b"user-42=k1\nuser-42=k2\n"),
    );
    assert_eq!(keyed.code, 0, "{}", keyed.stderr);
    assert!(
        payload_column(
            &u.ok(&[
                "message", "poll", "--last", "-m", "2", "orders", "events", "2"
            ])
            .stdout
        )
        .ends_with(&["k1".to_owned(), "k2".to_owned()])
    );
    let since = u.ok(&[
        "message",
        "poll",
        "--timestamp",
        "-1h",
        "-m",
        "100",
        "orders",
        "events",
        "0",
    ]);
    assert!(payload_column(&since.stdout).starts_with(&["one".to_owned()]));
    let none_yet = u.ok(&[
        "message",
        "poll",
        "--timestamp",
        "4102444800000000",
        "orders",
        "events",
        "0",
    ]);
    assert!(none_yet.stdout.contains("Polled 0 messages"));
}

pub fn clean_up(u: &User) {
    assert_eq!(
        u.ok(&["topic", "purge", "orders", "events"]).stdout,
        "Executing purge topic with ID: events in stream with ID: orders\nTopic with ID: events in stream with ID: orders purged\n"
    );
    assert_eq!(
        u.ok(&["stream", "purge", "orders"]).last_line(),
        "Stream with ID: orders purged"
    );
    assert_eq!(
        u.ok(&["topic", "delete", "orders", "audit"]).last_line(),
        "Topic with ID: audit in stream with ID: orders deleted"
    );
    assert_eq!(
        u.ok(&["stream", "delete", "orders"]).last_line(),
        "Stream with ID: orders deleted"
    );
    assert_eq!(
        u.ok(&["stream", "list"]).stdout,
        "Executing list streams in table mode\nNo streams found!\n"
    );
}

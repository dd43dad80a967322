//! Acceptance checks of the CLI spec §10 against the real server and the
//! real binary, plus the §8 fixes and §9 additions. Groups run in order
//! inside one scenario because later checks rely on earlier state.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

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

fn connecting_and_credentials(u: &User) {
    let nocred = User::new(None)
        .with(
            "IGGY_CLI_TCP_SERVER_ADDRESS",
            &u.env
                .iter()
                .find(|(k, _)| k == "IGGY_CLI_TCP_SERVER_ADDRESS")
                .unwrap()
                .1,
        )
        .without("IGGY_USERNAME")
        .without("IGGY_PASSWORD");
    let b1 = nocred.run(&["me"]);
    assert_eq!((b1.code, b1.stdout.as_str()), (1, ""));
    assert!(b1.errors().starts_with("Error: CommandError(Iggy command line tool error\n\nCaused by:\n    Missing iggy server credentials"));
    let started = std::time::Instant::now();
    let b2 = nocred.ok(&["ping"]);
    assert!(started.elapsed() >= std::time::Duration::from_secs(1));
    let lines = b2.lines();
    assert_eq!(lines[0], "Executing ping command");
    assert!(lines[1].starts_with("Ping sequence id: 1 time: ") && lines[1].ends_with(" ms"));
    assert_eq!(&lines[2..4], ["", "Ping statistics for 1 ping commands"]);
    assert!(lines[4].starts_with("min/avg/max/mdev = "));
    assert_eq!(u.ok(&["-q", "ping"]).stdout, "");
    let b4 = nocred.run_with_stdin(&["-u", "iggy", "me"], Some(b"iggy\n"));
    assert_eq!(b4.code, 0, "{}", b4.stderr);
    assert!(b4.stdout.starts_with("Executing me command\n"));
    assert!(b4.stdout.contains("| Transport | TCP") && b4.stdout.contains("| User ID   | 0"));
    let b5 = nocred.run(&["-u", "iggy", "-p", "nope", "me"]);
    assert_eq!(b5.code, 1);
    assert!(
        b5.errors()
            .starts_with("Error: CommandError(Problem with server login for username: iggy")
    );
    let b6 = u.run(&[
        "--tcp-server-address",
        "127.0.0.1:1",
        "--tcp-reconnection-max-retries",
        "0",
        "me",
    ]);
    assert_eq!(b6.code, 1);
    assert!(
        b6.errors()
            .starts_with("Error: IggyClient(SdkError(CannotEstablishConnection))")
    );
    let b7 = u.run(&["--transport", "udp", "me"]);
    assert!(
        b7.code == 1
            && b7
                .errors()
                .starts_with("Error: IggyClient(InvalidTransport(\"udp\"))")
    );
    let b11 = u.run(&["--encryption-key", "notbase64", "me"]);
    assert!(b11.code == 1 && b11.errors().contains("Invalid encryption key provided"));
}

fn streams_topics_partitions(u: &User) {
    assert_eq!(
        u.ok(&["stream", "create", "orders"]).stdout,
        "Executing create stream with name: orders and ID auto incremented\nStream with name: orders and ID auto incremented created\n"
    );
    let c2 = u.run(&["stream", "create", "orders"]);
    assert_eq!(c2.code, 1);
    assert!(c2.errors().starts_with(
        "Error: CommandError(Problem creating stream (name: orders and ID auto incremented)"
    ));
    let c3 = u.ok(&["stream", "list", "-l", "list"]);
    let lines = c3.lines();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], "Executing list streams in list mode");
    assert!(
        lines[1].starts_with("0|") && lines[1].ends_with("|orders|0 B|0|0"),
        "{}",
        lines[1]
    );
    let c4 = u.ok(&["stream", "get", "0"]);
    assert_eq!(
        c4.lines()[1],
        "+----------------------+---------------------+"
    );
    assert!(
        c4.stdout
            .contains("| Stream name          | orders              |")
    );
    assert!(
        c4.stdout
            .contains("| Stream topics count  | 0                   |")
    );
    assert_eq!(
        u.ok(&["stream", "get", "42"]).stdout,
        "Executing get stream with ID: 42\nStream with ID: 42 was not found\n"
    );
    assert_eq!(
        u.ok(&["topic", "create", "orders", "events", "3", "none"])
            .stdout,
        "Executing create topic with name: events, message expiry: server_default, compression algorithm: none, max topic size: server_default in stream with ID: orders\nTopic with name: events, partitions count: 3, compression algorithm: none, message expiry: server_default, max topic size: server_default created in stream with ID: orders\n"
    );
    assert_eq!(
        u.ok(&[
            "topic",
            "create",
            "orders",
            "audit",
            "1",
            "gzip",
            "1day",
            "1hour",
            "-m",
            "2GiB",
            "--durability",
            "persisted"
        ])
        .stdout,
        "Executing create topic with name: audit, message expiry: 1day 1h, compression algorithm: gzip, max topic size: 2.15 GB in stream with ID: orders\nTopic with name: audit, partitions count: 1, compression algorithm: gzip, message expiry: 1day 1h, max topic size: 2.15 GB created in stream with ID: orders\n"
    );
    let c8 = u.ok(&["topic", "get", "orders", "events"]).stdout;
    for needle in [
        "Topic id            | 0",
        "Compression         | none",
        "Message expiry      | unlimited",
        "Max topic size      | unlimited",
        "Partitions count    | 3",
    ] {
        assert!(c8.contains(needle), "{needle} in {c8}");
    }
    let c9 = u.ok(&["topic", "list", "orders", "-l", "list"]);
    assert_eq!(c9.lines().len(), 3);
    assert!(
        c9.lines()[2].starts_with("1|")
            && c9.lines()[2].ends_with("|audit|0 B|2.15 GB|gzip|1day 1h|0|1")
    );
    assert_eq!(
        u.ok(&["partition", "create", "orders", "events", "2"])
            .stdout,
        "Executing create 2 partitions for topic with ID: events and stream with ID: orders\nCreated 2 partitions for topic with ID: events and stream with ID: orders\n"
    );
    assert!(
        u.ok(&["topic", "get", "orders", "events"])
            .stdout
            .contains("Partitions count    | 5")
    );
    assert_eq!(
        u.ok(&["partition", "delete", "orders", "events", "2"])
            .last_line(),
        "Deleted 2 partitions for topic with ID: events and stream with ID: orders"
    );
    assert_eq!(
        u.ok(&["stream", "update", "orders", "orders2"]).last_line(),
        "Stream with ID: orders updated name: orders2"
    );
    u.ok(&["stream", "update", "orders2", "orders"]);
    assert_eq!(
        u.ok(&[
            "topic", "update", "orders", "audit", "audit", "gzip", "2days"
        ])
        .last_line(),
        "Topic with ID: audit updated name: audit, updated message expiry: 2days, updated compression algorithm: gzip, updated max topic size: server_default in stream with ID: orders"
    );
    assert!(
        u.ok(&["topic", "get", "orders", "audit"])
            .stdout
            .contains("Message expiry      | 2days")
    );
}

fn payload_column(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Offset"))
        .map(|l| l.split('|').nth(5).unwrap_or_default().trim().to_owned())
        .collect()
}

fn messages(u: &User) {
    assert_eq!(
        u.ok(&[
            "message", "send", "-p", "0", "orders", "events", "one", "two"
        ])
        .stdout,
        "Executing send messages to topic with ID: events and stream with ID: orders\nSent messages to topic with ID: events and stream with ID: orders\n"
    );
    assert_eq!(
        u.run_with_stdin(
            &["message", "send", "-p", "0", "orders", "events"],
            Some(b"three\nfour\n")
        )
        .code,
        0
    );
    let d3 = u.ok(&[
        "message", "poll", "--first", "-m", "10", "orders", "events", "0",
    ]);
    let lines = d3.lines();
    assert_eq!(
        lines[1],
        "Polled messages from topic with ID: events and stream with ID: orders (from partition with ID: 0)"
    );
    assert!(lines[2].starts_with("Polled 4 messages of total size 271 B, it took "));
    assert!(lines[4].starts_with("| Offset | Timestamp"));
    assert_eq!(payload_column(&d3.stdout), ["one", "two", "three", "four"]);
    u.ok(&[
        "message",
        "send",
        "-p",
        "2",
        "-H",
        "trace:string:abc,n:uint32:7",
        "orders",
        "events",
        "hdr",
    ]);
    let d4 = u.ok(&["message", "poll", "--first", "-s", "orders", "events", "2"]);
    assert!(d4.lines()[2].starts_with("Polled 1 message of total size 100 B"));
    for needle in ["Header: trace", "Header: n", "string", "uint32", "abc"] {
        assert!(d4.stdout.contains(needle));
    }
    u.ok(&[
        "message", "send", "-m", "user-42", "orders", "events", "keyed",
    ]);
    assert!(
        payload_column(
            &u.ok(&["message", "poll", "--last", "orders", "events", "2"])
                .stdout
        )
        .contains(&"keyed".to_owned())
    );
    u.ok(&["message", "send", "orders", "events", "bal"]);
    assert!(
        payload_column(
            &u.ok(&["message", "poll", "--last", "orders", "events", "0"])
                .stdout
        )
        .contains(&"bal".to_owned())
    );
    let file = u.home().join("m.bin");
    let f = file.display().to_string();
    let d7 = u.ok(&[
        "message",
        "poll",
        "--offset",
        "0",
        "-m",
        "2",
        "--output-file",
        &f,
        "orders",
        "events",
        "0",
    ]);
    assert!(
        d7.stdout
            .contains(&format!("Storing messages to {f} binary file"))
    );
    assert!(d7.stdout.contains(&format!(
        "Stored 2 messages of total size 134 B to {f} binary file"
    )));
    assert!(!d7.stdout.contains("+--"));
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(bytes.len(), 134);
    assert_eq!(&bytes[52..56], &3u32.to_le_bytes());
    assert_eq!(&bytes[56..64], &[0u8; 8]);
    assert_eq!(&bytes[64..67], b"one");
    let d8 = u.ok(&[
        "message",
        "send",
        "--input-file",
        &f,
        "-p",
        "1",
        "orders",
        "events",
    ]);
    assert!(d8.stdout.contains(&format!("Read 134 bytes from {f} file")));
    assert!(d8.stdout.contains("Created 2 messages using 134 bytes"));
    assert!(
        d8.stdout
            .ends_with("Sent messages to topic with ID: events and stream with ID: orders\n")
    );
    assert_eq!(
        payload_column(
            &u.ok(&[
                "message", "poll", "--first", "-m", "5", "orders", "events", "1"
            ])
            .stdout
        ),
        ["one", "two"]
    );
    let d9 = u.run_with_stdin(
        &["message", "send", "-p", "0", "orders", "events"],
        Some(b""),
    );
    assert!(d9.code == 1 && d9.errors().contains("Invalid messages count"));
    let d10 = u.run(&["message", "send", "-p", "0", "orders", "events", ""]);
    assert!(d10.code == 1 && d10.errors().contains("Invalid message payload length"));
    assert_eq!(
        u.ok(&["-q", "message", "poll", "--first", "orders", "events", "0"])
            .stdout,
        ""
    );
    let poll_next = [
        "message", "poll", "--next", "-c", "7", "-a", "-m", "2", "orders", "events", "0",
    ];
    assert_eq!(payload_column(&u.ok(&poll_next).stdout), ["one", "two"]);
    assert_eq!(payload_column(&u.ok(&poll_next).stdout), ["three", "four"]);
    assert!(
        u.ok(&["consumer-offset", "get", "7", "orders", "events", "0"])
            .stdout
            .contains("Stored offset  | 3")
    );
}

fn offsets_and_groups(u: &User) {
    assert_eq!(
        u.ok(&["consumer-offset", "set", "5", "orders", "events", "0", "2"])
            .stdout,
        "Executing set consumer offset for consumer with ID: 5 for stream with ID: orders and topic with ID: events and partition with ID: 0 to 2\nConsumer offset for consumer with ID: 5 for stream with ID: orders and topic with ID: events and partition with ID: 0 set to 2\n"
    );
    assert!(
        u.ok(&["consumer-offset", "get", "5", "orders", "events", "0"])
            .stdout
            .contains("Stored offset  | 2")
    );
    assert_eq!(
        u.ok(&["consumer-offset", "get", "99", "orders", "events", "0"])
            .last_line(),
        "Consumer offset for consumer with ID: 99 for stream with ID: orders and topic with ID: events and partition with ID: 0 was not found"
    );
    assert_eq!(
        u.ok(&["consumer-group", "create", "orders", "events", "workers"])
            .stdout,
        "Executing create consumer group: ID auto incremented, name: workers for topic with ID: events and stream with ID: orders\nConsumer group: ID auto incremented, name: workers created for topic with ID: events and stream with ID: orders\n"
    );
    assert_eq!(
        u.ok(&["consumer-group", "list", "orders", "events", "-l", "list"])
            .lines()[1],
        "0|workers|3|0"
    );
    let e6 = u
        .ok(&["consumer-group", "get", "orders", "events", "workers"])
        .stdout;
    assert!(e6.contains("Consumer group id   | 0") && e6.contains("Consumer group name | workers"));
    let lag = u
        .ok(&[
            "consumer-group",
            "get",
            "orders",
            "events",
            "workers",
            "--lag",
        ])
        .stdout;
    assert!(
        lag.contains("| Partition | Stored offset | Current offset | Lag |"),
        "{lag}"
    );
    let set = u.run(&[
        "consumer-offset",
        "set",
        "workers",
        "orders",
        "events",
        "0",
        "1",
        "-k",
        "consumer-group",
    ]);
    if set.code == 1 {
        assert_eq!(set.lines().len(), 1);
        assert!(set.errors().starts_with("Error: CommandError(Problem setting consumer offset for consumer with ID: workers for stream with ID: orders and topic with ID: events and partition with ID: 0"));
    }
    let get = u.ok(&[
        "consumer-offset",
        "get",
        "workers",
        "orders",
        "events",
        "0",
        "--kind",
        "cg",
    ]);
    assert!(get.lines()[0].contains("consumer group with ID: workers"));
    assert_eq!(
        u.ok(&["consumer-group", "delete", "orders", "events", "workers"])
            .stdout,
        "Executing delete consumer group with ID: workers for topic with ID: events and stream with ID: orders\nConsumer group with ID: workers deleted for topic with ID: events and stream with ID: orders\n"
    );
}

fn users_and_tokens(u: &User) {
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

fn system_commands(u: &User, server: &Server) {
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

fn contexts(server: &Server) {
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

fn additions(u: &User) {
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

fn clean_up(u: &User) {
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

impl User {
    fn clone_without_credentials(&self) -> User {
        self.clone_with("IGGY_HOME", &self.home().display().to_string())
            .without("IGGY_USERNAME")
            .without("IGGY_PASSWORD")
    }

    fn clone_with(&self, key: &str, value: &str) -> User {
        let mut env = self.env.clone();
        env.retain(|(k, _)| k != key);
        env.push((key.to_owned(), value.to_owned()));
        User {
            home: tempfile::tempdir().unwrap(),
            env,
        }
    }
}

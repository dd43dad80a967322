//! Spec §10 groups B-E: connecting, credentials, streams, topics,
//! partitions, messages, consumer offsets and groups.

use crate::support::User;

pub mod admin;

pub fn connecting_and_credentials(u: &User) {
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

pub fn streams_topics_partitions(u: &User) {
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

pub fn payload_column(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Offset"))
        .map(|l| l.split('|').nth(5).unwrap_or_default().trim().to_owned())
        .collect()
}

pub fn messages(u: &User) {
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

pub fn offsets_and_groups(u: &User) {
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

//! §9.2, §9.3, §9.7 (`--url`), §9.9 and §8 #15 against the real server and
//! the real binary (part of the acceptance binary so they run beside its
//! scenarios): `message consume` as a regular consumer and as a
//! consumer-group member over TCP, message templates and raw output,
//! `topic get --options`, connection strings and deadlines, TCP and
//! WebSocket TLS with a CA file or insecure mode, and the `context` commands
//! repairing a broken `contexts.toml`.

mod progress_and_debug;
mod targeting;

use crate::support::{Server, User};

fn payloads(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| l.rsplit('|').next().unwrap().to_owned())
        .collect()
}

#[test]
fn given_messages_when_consuming_and_formatting_should_print_only_messages() {
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "shop"]);
    u.ok(&["topic", "create", "shop", "orders", "3", "none"]);
    for (p, words) in [
        ("0", ["a0", "b0"]),
        ("1", ["a1", "b1"]),
        ("2", ["a2", "b2"]),
    ] {
        u.ok(&[
            "message", "send", "-p", p, "shop", "orders", words[0], words[1],
        ]);
    }
    u.ok(&[
        "message",
        "send",
        "-p",
        "0",
        "-H",
        "k:string:v",
        "shop",
        "orders",
        "hdr",
    ]);

    // §9.2: every partition from the first offset, stop at the end; only
    // messages on stdout, the Executing line on stderr.
    let all = u.ok(&[
        "message", "consume", "--from", "first", "-e", "shop", "orders",
    ]);
    assert_eq!(
        payloads(&all.stdout),
        ["a0", "b0", "hdr", "a1", "b1", "a2", "b2"]
    );
    assert!(all.lines()[0].starts_with("0|"));
    assert!(
        all.errors().contains("Executing consume messages"),
        "{}",
        all.stderr
    );
    // -q keeps the messages and drops the Executing line.
    let quiet = u.ok(&[
        "-q",
        "message",
        "c",
        "--from",
        "first",
        "--partition",
        "1",
        "shop",
        "orders",
    ]);
    assert_eq!(payloads(&quiet.stdout), ["a1", "b1"]);
    assert_eq!(quiet.errors(), "");

    // A regular consumer commits by default: the second run starts after.
    let first = u.ok(&[
        "message",
        "consume",
        "--consumer",
        "9",
        "--from",
        "next",
        "--max-messages",
        "2",
        "--partition",
        "0",
        "shop",
        "orders",
    ]);
    assert_eq!(payloads(&first.stdout), ["a0", "b0"]);
    let offset = u.ok(&["consumer-offset", "get", "9", "shop", "orders", "0"]);
    assert!(
        offset.stdout.contains("Stored offset  | 1"),
        "{}",
        offset.stdout
    );
    let second = u.ok(&[
        "message",
        "consume",
        "--consumer",
        "9",
        "--partition",
        "0",
        "-e",
        "shop",
        "orders",
    ]);
    assert_eq!(payloads(&second.stdout), ["hdr"]);
    // --commit none leaves the offset alone.
    u.ok(&[
        "message",
        "consume",
        "--consumer",
        "10",
        "--commit",
        "none",
        "--from",
        "first",
        "--partition",
        "0",
        "-e",
        "shop",
        "orders",
    ]);
    assert!(
        u.ok(&["consumer-offset", "get", "10", "shop", "orders", "0"])
            .last_line()
            .ends_with("was not found")
    );

    // Consumer group over TCP: joins, reads its assignment (all three
    // partitions for a single member), commits the group's offsets, leaves.
    u.ok(&["consumer-group", "create", "shop", "orders", "workers"]);
    let group = u.ok(&[
        "message",
        "consume",
        "--consumer-group",
        "workers",
        "--from",
        "first",
        "-e",
        "shop",
        "orders",
    ]);
    let mut got = payloads(&group.stdout);
    got.sort();
    assert_eq!(got, ["a0", "a1", "a2", "b0", "b1", "b2", "hdr"]);
    let stored = u.ok(&[
        "consumer-offset",
        "get",
        "workers",
        "shop",
        "orders",
        "2",
        "--kind",
        "consumer-group",
    ]);
    assert!(
        stored.stdout.contains("Stored offset  | 1"),
        "{}",
        stored.stdout
    );
    // The group's next run has nothing left; the member left the group.
    let again = u.ok(&[
        "message",
        "consume",
        "--consumer-group",
        "workers",
        "-e",
        "shop",
        "orders",
    ]);
    assert_eq!(again.stdout, "");
    assert!(
        u.ok(&["consumer-group", "list", "shop", "orders", "-l", "list"])
            .stdout
            .contains("|workers|3|0")
    );
    // poll --consumer-group: one poll as a member, from the group's offset.
    u.ok(&["message", "send", "-p", "1", "shop", "orders", "late"]);
    let poll = u.ok(&[
        "message",
        "poll",
        "--next",
        "--consumer-group",
        "workers",
        "-a",
        "shop",
        "orders",
        "1",
    ]);
    assert_eq!(crate_payload_column(&poll.stdout), ["late"]);
    // Follow with a timeout ends by itself.
    let follow = u.ok(&[
        "message",
        "consume",
        "-F",
        "--timeout",
        "300ms",
        "--poll-interval",
        "50ms",
        "--from",
        "offset:2",
        "--partition",
        "1",
        "shop",
        "orders",
    ]);
    assert_eq!(payloads(&follow.stdout), ["late"]);
    // ndjson: one object per message.
    let nd = u.ok(&[
        "--output-format",
        "ndjson",
        "message",
        "consume",
        "--from",
        "first",
        "--partition",
        "2",
        "-e",
        "shop",
        "orders",
    ]);
    let docs: Vec<serde_json::Value> = nd
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[1]["payload"], "b2");
    assert_eq!(docs[1]["partition_id"], 2);

    // §9.3 templates: placeholders, escapes, headers, encodings; stdout
    // carries only the messages, the Executing/Polled lines go to stderr.
    let t = u.ok(&[
        "message",
        "poll",
        "--first",
        "-m",
        "3",
        "--message-format",
        "%p:%o %l %v [%h] 100%%\\t|",
        "shop",
        "orders",
        "0",
    ]);
    assert_eq!(
        t.stdout,
        "0:0 2 a0 [] 100%\t|\n0:1 2 b0 [] 100%\t|\n0:2 3 hdr [k=v] 100%\t|\n"
    );
    assert!(t.errors().contains("Polled 3 messages"));
    let times = u.ok(&[
        "-q",
        "message",
        "poll",
        "--first",
        "--message-format",
        "%t %T",
        "shop",
        "orders",
        "0",
    ]);
    let (micros, rfc) = times.stdout.trim_end().split_once(' ').unwrap();
    assert!(micros.parse::<u64>().unwrap() > 1_600_000_000_000_000);
    assert!(rfc.ends_with('Z') && rfc.contains('T'), "{rfc}");
    let hex = u.ok(&[
        "message",
        "poll",
        "--first",
        "--payload-encoding",
        "hex",
        "--message-format",
        "%v",
        "shop",
        "orders",
        "0",
    ]);
    assert_eq!(hex.stdout, "6130\n");
    let b64 = u.ok(&[
        "message",
        "consume",
        "--from",
        "first",
        "--partition",
        "0",
        "--max-messages",
        "1",
        "--payload-encoding",
        "base64",
        "--message-format",
        "%v",
        "shop",
        "orders",
    ]);
    assert_eq!(b64.stdout, "YTA=\n");
    // The table uses the encoding too; without it the reference table stays.
    let table = u.ok(&[
        "message",
        "poll",
        "--first",
        "--payload-encoding",
        "hex",
        "shop",
        "orders",
        "0",
    ]);
    assert!(table.stdout.contains("| 6130 "), "{}", table.stdout);
    let raw = u.ok(&[
        "-q", "message", "poll", "--first", "-m", "2", "--raw", "shop", "orders", "0",
    ]);
    assert_eq!(raw.stdout, "a0\nb0\n");
    let raw0 = u.ok(&[
        "message", "poll", "--first", "-m", "2", "--raw0", "shop", "orders", "0",
    ]);
    assert_eq!(raw0.stdout, "a0\0b0\0");
    assert_eq!(
        u.run(&[
            "message", "poll", "--first", "--raw", "--raw0", "s", "t", "0"
        ])
        .code,
        2
    );

    // §9.1 topic get --options: option rows below the reference rows.
    let plain = u.ok(&["topic", "get", "shop", "orders"]);
    let with = u.ok(&["topic", "get", "--options", "shop", "orders"]);
    assert!(!plain.stdout.contains("Option: "));
    let extra: Vec<&str> = with
        .lines()
        .into_iter()
        .filter(|l| l.contains("| Option: "))
        .collect();
    assert!(!extra.is_empty(), "{}", with.stdout);
    assert!(
        extra
            .iter()
            .all(|l| l.contains("(explicit)") || l.contains("(derived)")),
        "{}",
        with.stdout
    );
    assert!(
        with.stdout.find("| Partitions count").unwrap() < with.stdout.find("| Option: ").unwrap()
    );

    // §9.7 --url: transport, address and credentials from one string.
    let nocred = u
        .clone_without_credentials()
        .without("IGGY_CLI_TCP_SERVER_ADDRESS");
    let tcp = server.address("tcp");
    let me = nocred.ok(&["--url", &format!("iggy://iggy:iggy@{tcp}"), "me"]);
    assert!(me.stdout.contains("| Transport | TCP"), "{}", me.stdout);
    let ws = server.address("websocket");
    let me = nocred.ok(&["--url", &format!("iggy+ws://iggy:iggy@{ws}"), "me"]);
    assert!(
        me.stdout.contains("| Transport | WebSocket"),
        "{}",
        me.stdout
    );
    let http = server.address("http");
    let list = nocred.ok(&[
        "--url",
        &format!("iggy+http://iggy:iggy@{http}"),
        "stream",
        "list",
        "-l",
        "list",
    ]);
    assert!(list.stdout.contains("|shop|"), "{}", list.stdout);
    let bad_login = nocred.run(&["--url", &format!("iggy://iggy:nope@{tcp}"), "me"]);
    assert_eq!(bad_login.code, 1);
    let bad = nocred.run(&["--url", "tcp://nowhere", "me"]);
    assert_eq!(bad.code, 1);
    assert!(
        bad.errors().contains("InvalidConnectionString"),
        "{}",
        bad.stderr
    );
    // -u on the command line wins over the string's credentials.
    assert_eq!(
        nocred
            .run(&[
                "--url",
                &format!("iggy://iggy:nope@{tcp}"),
                "-u",
                "iggy",
                "-p",
                "iggy",
                "me"
            ])
            .code,
        0
    );

    // §9.9 --connect-timeout: a dead address fails at the deadline instead
    // of after the retry loop.
    let started = std::time::Instant::now();
    let dead = u.run(&[
        "--tcp-server-address",
        "127.0.0.1:1",
        "--connect-timeout",
        "700ms",
        "me",
    ]);
    assert_eq!(dead.code, 1);
    assert!(
        dead.errors()
            .contains("could not connect and log in within 700ms"),
        "{}",
        dead.stderr
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    u.ok(&["--connect-timeout", "10s", "me"]);
}

/// The payload column of a poll table.
fn crate_payload_column(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| Offset"))
        .map(|l| l.split('|').nth(5).unwrap().trim().to_owned())
        .collect()
}

#[test]
fn given_tls_server_when_connecting_should_trust_ca_file_or_insecure_mode() {
    let dir = tempfile::tempdir().unwrap();
    let generated =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert = dir.path().join("cert.pem");
    let key = dir.path().join("key.pem");
    std::fs::write(&cert, generated.cert.pem()).unwrap();
    std::fs::write(&key, generated.key_pair.serialize_pem()).unwrap();
    let (cert, key) = (cert.to_str().unwrap(), key.to_str().unwrap());
    let server = Server::start_with(&[
        ("IGGY_TCP_TLS_ENABLED", "true"),
        ("IGGY_TCP_TLS_SELF_SIGNED", "false"),
        ("IGGY_TCP_TLS_CERT_FILE", cert),
        ("IGGY_TCP_TLS_KEY_FILE", key),
        ("IGGY_WEBSOCKET_TLS_ENABLED", "true"),
        ("IGGY_WEBSOCKET_TLS_SELF_SIGNED", "false"),
        ("IGGY_WEBSOCKET_TLS_CERT_FILE", cert),
        ("IGGY_WEBSOCKET_TLS_KEY_FILE", key),
    ]);
    let u = User::new(Some(&server));
    let tls = ["--tcp-tls-enabled", "--tcp-tls-domain", "localhost"];
    // Without a CA the self-signed certificate is refused.
    let refused = u.run(&[&tls[..], &["--tcp-reconnection-max-retries", "0", "me"]].concat());
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    let with_ca = u.ok(&[&tls[..], &["--tcp-tls-ca-file", cert, "me"]].concat());
    assert!(with_ca.stdout.contains("| Transport | TCP"));
    let insecure = u.ok(&[&tls[..], &["--tcp-tls-insecure", "stream", "list"]].concat());
    assert!(insecure.stdout.contains("No streams found!"));
    assert!(insecure.errors().is_empty() || insecure.stderr.contains("NOT validated"));
    assert!(
        insecure.stderr.contains("NOT validated"),
        "{}",
        insecure.stderr
    );
    // The connection string carries the TLS options too.
    let tcp = server.address("tcp");
    let nocred = u.clone_without_credentials();
    nocred.ok(&[
        "--url",
        &format!("iggy://iggy:iggy@{tcp}?tls=true&tls_domain=localhost&tls_ca_file={cert}"),
        "me",
    ]);
    // WebSocket over TLS.
    let ws = [
        "--transport",
        "ws",
        "--websocket-tls-enabled",
        "--websocket-tls-domain",
        "localhost",
    ];
    let ws_me = u.ok(&[&ws[..], &["--websocket-tls-ca-file", cert, "me"]].concat());
    assert!(
        ws_me.stdout.contains("| Transport | WebSocket"),
        "{}",
        ws_me.stdout
    );
    let ws_insecure = u.ok(&[&ws[..], &["--websocket-tls-insecure", "me"]].concat());
    assert!(ws_insecure.stderr.contains("NOT validated"));
}

#[test]
fn given_broken_contexts_file_when_using_context_commands_should_repair_it() {
    let u = User::new(None);
    let home = u.home().to_path_buf();
    std::fs::write(
        home.join("contexts.toml"),
        "[default]\n\n[prod]\nusername = \"iggy\"\ntransport = \"tcp\"\n\n[bad]\ntcp_tls_enabled = \"yes\"\n",
    )
    .unwrap();
    // Every other command keeps failing (§8 #15).
    let other = u.run(&["stream", "list"]);
    assert_eq!(other.code, 1);
    assert!(other.stderr.contains("could not read context state"));
    // list and show work on what could be read, naming the broken context.
    let list = u.ok(&["context", "list", "-l", "list"]);
    assert_eq!(
        list.stdout,
        "Executing list contexts in list mode\nprinted_name=\"bad\"\nprinted_name=\"default*\"\nprinted_name=\"prod\"\n"
    );
    assert!(
        list.stderr.contains("context 'bad' cannot be read"),
        "{}",
        list.stderr
    );
    assert!(
        u.ok(&["context", "show", "prod"])
            .stdout
            .contains("| Transport | tcp")
    );
    let show_bad = u.run(&["context", "show", "bad"]);
    assert_eq!(show_bad.code, 1);
    assert!(
        show_bad.errors().contains("context delete bad"),
        "{}",
        show_bad.stderr
    );
    assert_eq!(u.run(&["context", "use", "bad"]).code, 1);
    // delete removes it; the old file is kept beside the new one.
    let deleted = u.ok(&["context", "delete", "bad"]);
    assert_eq!(deleted.last_line(), "context 'bad' deleted successfully");
    assert!(home.join("contexts.toml.bak").exists());
    assert_eq!(
        std::fs::read_to_string(home.join("contexts.toml")).unwrap(),
        "[default]\n\n[prod]\nusername = \"iggy\"\ntransport = \"tcp\"\n"
    );
    assert_eq!(u.ok(&["context", "list", "-l", "list"]).errors(), "");
    // An active context that is missing: context commands still run and
    // `context use` repairs it; other commands keep failing.
    std::fs::write(home.join(".active_context"), "gone").unwrap();
    assert!(
        u.run(&["me"])
            .stderr
            .contains("context key 'gone' is missing")
    );
    u.ok(&["context", "list"]);
    u.ok(&["context", "create", "fresh"]);
    assert_eq!(
        u.ok(&["context", "use", "prod"]).last_line(),
        "active context set to 'prod'"
    );
    // A file that is not TOML at all: create rewrites it with what it knows.
    std::fs::write(home.join("contexts.toml"), "this is = = not toml\n").unwrap();
    assert_eq!(u.run(&["context", "list"]).code, 0);
    u.ok(&["context", "create", "again"]);
    assert_eq!(
        std::fs::read_to_string(home.join("contexts.toml")).unwrap(),
        "[again]\n\n[default]\n"
    );
}

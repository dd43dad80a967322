//! §9.6 progress lines and §3.2 `-d/--debug` against the real server: the
//! line goes to stderr only (forced onto a pipe with `--progress`, by
//! default on a terminal unless `-q`), stdout stays byte for byte what it
//! is without it; the debug file is replaced by the SDK's TRACE log.

use crate::support::{Run, Server, User};
use std::path::Path;
use std::process::{Command, Stdio};

fn cat<'a>(parts: &[&[&'a str]]) -> Vec<&'a str> {
    parts.concat()
}

fn send(u: &User, options: &[&str], stdin: &[u8]) -> Run {
    let mut args = vec!["message", "send"];
    args.extend_from_slice(options);
    args.extend_from_slice(&["prog", "t"]);
    u.run_with_stdin(&args, Some(stdin))
}

#[test]
fn given_long_operations_when_progress_is_forced_should_draw_on_stderr_only() {
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "prog"]);
    u.ok(&["topic", "create", "prog", "t", "2", "none"]);

    // Batched send: no line on a pipe by default; `--progress` draws one
    // with messages and bytes; stdout is the same either way.
    let plain = send(&u, &["--batch-size", "2"], b"m1\nm2\nm3\nm4\nm5\n");
    let forced = send(
        &u,
        &["--batch-size", "2", "--progress"],
        b"m1\nm2\nm3\nm4\nm5\n",
    );
    assert_eq!((plain.code, forced.code), (0, 0), "{}", forced.stderr);
    assert_eq!(plain.stdout, forced.stdout);
    assert_eq!(plain.errors(), "");
    let line = forced.errors();
    assert!(
        line.contains("5/5 messages") && line.contains(" sent, "),
        "{line}"
    );
    // Forced even under -q; disabled by --no-progress; not both at once.
    let quiet = send(
        &u,
        &["--batch-size", "2", "--progress", "-p", "0"],
        b"q1\nq2\nq3\n",
    );
    assert!(quiet.errors().contains("3/3 messages"), "{}", quiet.stderr);
    let both = send(&u, &["--progress", "--no-progress"], b"x\n");
    assert_eq!(both.code, 2);

    // consume: the line counts messages and, at the end, no lag left.
    let consume = ["message", "consume", "--from", "first", "-e", "prog", "t"];
    let plain = u.ok(&consume);
    let forced = u.ok(&cat(&[&consume, &["--progress"]]));
    assert_eq!(plain.stdout.lines().count(), 13);
    assert_eq!(plain.stdout, forced.stdout);
    assert!(!plain.errors().contains("messages read"));
    let line = forced.errors();
    assert!(line.contains("13 messages read, lag 0"), "{line}");
    // ndjson stays one JSON object per stdout line.
    let ndjson = u.ok(&cat(&[
        &["--output-format", "ndjson"],
        &consume,
        &["--progress"],
    ]));
    for row in ndjson.stdout.lines() {
        serde_json::from_str::<serde_json::Value>(row).expect("one JSON object per line");
    }

    // snapshot: waiting for the server, then bytes written.
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().to_str().unwrap();
    let snapshot = ["snapshot", "-o", out_dir, "-s", "test"];
    let plain = u.ok(&snapshot);
    assert_eq!(plain.errors(), "");
    let forced = u.ok(&cat(&[&snapshot, &["--progress"]]));
    let size = forced
        .lines()
        .iter()
        .find(|l| l.starts_with("| File Size (bytes)"))
        .and_then(|l| l.split('|').nth(2))
        .map(|cell| cell.trim().to_owned())
        .unwrap();
    assert!(
        forced
            .errors()
            .contains(&format!("snapshot: {size} of {size} bytes written")),
        "{}",
        forced.stderr
    );
    assert!(!forced.stdout.contains("bytes written"));
}

/// Runs `iggy ARGS > stdout_file` under `script`, so stderr is a terminal;
/// returns what the terminal showed.
fn on_terminal(u: &User, args: &[&str], stdout_file: &Path) -> String {
    let iggy = env!("CARGO_BIN_EXE_iggy");
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let shell = format!(
        "'{iggy}' {} > '{}'",
        quoted.join(" "),
        stdout_file.display()
    );
    let mut command = Command::new("script");
    for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("IGGY") || k == "NO_COLOR") {
        command.env_remove(key);
    }
    let output = command
        .args(["-qec", &shell, "/dev/null"])
        .envs(u.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("util-linux `script` gives the run a terminal");
    assert!(output.status.success(), "{shell}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn given_terminal_stderr_when_consuming_should_draw_unless_quiet() {
    let server = Server::start();
    let u = User::new(Some(&server));
    u.ok(&["stream", "create", "prog"]);
    u.ok(&["topic", "create", "prog", "t", "1", "none"]);
    u.ok(&["message", "send", "prog", "t", "a", "b", "c"]);
    let dir = tempfile::tempdir().unwrap();
    let consume = ["message", "consume", "--from", "first", "-e", "prog", "t"];
    let shown = on_terminal(&u, &consume, &dir.path().join("shown.out"));
    assert!(shown.contains("messages read"), "{shown}");
    let quiet = on_terminal(
        &u,
        &cat(&[&["-q"], &consume]),
        &dir.path().join("quiet.out"),
    );
    assert!(!quiet.contains("messages read"), "{quiet}");
    let no_progress = on_terminal(
        &u,
        &cat(&[&consume, &["--no-progress"]]),
        &dir.path().join("off.out"),
    );
    assert!(!no_progress.contains("messages read"), "{no_progress}");
    // The messages on stdout are the same as on a pipe.
    let piped = u.ok(&consume).stdout;
    for name in ["shown.out", "quiet.out", "off.out"] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join(name)).unwrap(),
            piped
        );
    }
}

#[test]
fn given_debug_file_when_running_should_replace_it_with_the_sdk_trace_log() {
    let server = Server::start();
    let u = User::new(Some(&server));
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("debug.log");
    let log_arg = log.to_str().unwrap();
    std::fs::write(&log, "stale content\n").unwrap();

    let traced = u.ok(&["-d", log_arg, "stream", "list"]);
    assert_eq!(traced.stdout, u.ok(&["stream", "list"]).stdout);
    assert_eq!(traced.errors(), "");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("stale content"));
    // The SDK's own events at TRACE level, with their targets.
    assert!(
        text.lines().any(|l| l.contains(" TRACE ")
            && l.contains("iggy::tcp::tcp_client:")
            && l.contains("Sent a TCP request with code")),
        "{text}"
    );
    // The CLI's events: its output lines and the exit code.
    assert!(text.contains("iggy_cli: Executing list streams in table mode"));
    assert!(text.contains("iggy_cli: exit code 0"));
    // Every event starts with an RFC 3339 UTC timestamp.
    let first = text.lines().next().unwrap();
    assert!(
        first.len() > 27 && first.as_bytes()[10] == b'T' && first[..27].ends_with('Z'),
        "{first}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&log).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // -q hides stdout, not the log; a failure is logged with its error.
    u.ok(&["stream", "create", "dup"]);
    let failed = u.run(&["-q", "-d", log_arg, "stream", "create", "dup"]);
    assert_eq!((failed.code, failed.stdout.as_str()), (1, ""));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("iggy_cli: Executing create stream with name: dup"));
    assert!(text.contains("ERROR") && text.contains("Error: CommandError(Problem creating stream"));

    // A file that cannot be created is a warning; the command still runs.
    let missing = dir.path().join("no/such/dir/debug.log");
    let run = u.ok(&["-d", missing.to_str().unwrap(), "stream", "list"]);
    assert!(run.stdout.starts_with("Executing list streams"));
    assert!(
        run.stderr.contains("cannot write the debug log"),
        "{}",
        run.stderr
    );
}

//! MCP clients for the tests: `McpStdio` speaks newline-delimited JSON-RPC
//! to an `iggy-mcp` child over its stdin/stdout; `McpHttp` speaks
//! Streamable HTTP (POST, session header, JSON or SSE replies) over a plain
//! TCP socket, so nothing but std sits between the test and the binary.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{ROOT_PASSWORD, ROOT_USERNAME, TestServer, clear_iggy_env, mcp_binary};

pub const PROTOCOL_VERSION: &str = "2025-06-18";
const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// The text and error flag of a `tools/call` result.
#[derive(Debug)]
pub struct ToolReply {
    pub is_error: bool,
    pub text: String,
}

impl ToolReply {
    /// The JSON of a successful reply; panics with the text otherwise.
    pub fn json(&self) -> Value {
        assert!(!self.is_error, "tool failed: {}", self.text);
        serde_json::from_str(&self.text).unwrap_or_else(|e| panic!("{e}: {}", self.text))
    }
}

fn tool_reply(response: &Value) -> ToolReply {
    let result = response
        .get("result")
        .unwrap_or_else(|| panic!("tools/call answered without a result: {response}"));
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content: {response}"))
        .to_owned();
    ToolReply {
        is_error: result["isError"].as_bool().unwrap_or(false),
        text,
    }
}

fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": { "name": "mcp-tests", "version": "0" }
    })
}

/// An `iggy-mcp` command aimed at `server` over TCP as root, with extra
/// `IGGY_MCP_*` variables.
pub fn mcp_command(server: &TestServer, env: &[(&str, &str)]) -> (Command, LogFile) {
    let dir = tempfile::tempdir().unwrap();
    let log = LogFile {
        path: dir.path().join("iggy-mcp.log"),
        _dir: dir,
    };
    let mut command = Command::new(mcp_binary());
    clear_iggy_env(&mut command);
    command
        .env("IGGY_MCP_IGGY_ADDRESS", server.address("tcp").to_string())
        .env("IGGY_MCP_IGGY_USERNAME", ROOT_USERNAME)
        .env("IGGY_MCP_IGGY_PASSWORD", ROOT_PASSWORD)
        .env("RUST_LOG", "info")
        .envs(env.iter().copied())
        .stderr(std::fs::File::create(&log.path).unwrap());
    (command, log)
}

/// Where a child's stderr goes; removed with the client.
pub struct LogFile {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl LogFile {
    fn read(&self) -> String {
        std::fs::read_to_string(&self.path).unwrap_or_default()
    }
}

/// `iggy-mcp` over stdio; killed on drop.
pub struct McpStdio {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
    log: LogFile,
}

impl McpStdio {
    pub fn start(server: &TestServer, env: &[(&str, &str)]) -> McpStdio {
        let (mut command, log) = mcp_command(server, env);
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        McpStdio {
            child,
            stdin,
            lines,
            next_id: 1,
            log,
        }
    }

    /// What `iggy-mcp` wrote to stderr.
    pub fn log(&self) -> String {
        self.log.read()
    }

    pub fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and returns the response with its id, skipping any
    /// notification in between.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => panic!("no reply to {method}:\n{}", self.log()),
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("iggy-mcp closed stdout during {method}:\n{}", self.log())
                }
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout carried a non-JSON line ({e}): {line}"));
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    pub fn notify(&mut self, method: &str) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method }));
    }

    /// The handshake: `initialize`, then `notifications/initialized`.
    pub fn initialize(&mut self) -> Value {
        let response = self.request("initialize", initialize_params());
        self.notify("notifications/initialized");
        response
    }

    pub fn list_tools(&mut self) -> Vec<Value> {
        let response = self.request("tools/list", json!({}));
        response["result"]["tools"].as_array().unwrap().clone()
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> ToolReply {
        let response = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        tool_reply(&response)
    }

    /// Closes stdin and waits for a clean exit.
    pub fn close(mut self) -> std::process::ExitStatus {
        drop(std::mem::replace(&mut self.stdin, spare_stdin()));
        self.wait_for_exit()
    }

    /// Waits for the process to end by itself.
    pub fn wait_for_exit(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "iggy-mcp did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A stdin handle of a finished process, to take the real one's place.
fn spare_stdin() -> ChildStdin {
    let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let _ = child.wait();
    stdin
}

impl Drop for McpStdio {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `iggy-mcp` over Streamable HTTP; killed on drop.
pub struct McpHttp {
    child: Child,
    pub address: SocketAddr,
    pub path: String,
    token: String,
    session: Option<String>,
    next_id: u64,
    log: LogFile,
}

/// One HTTP response: status, headers (lower-cased names) and body.
#[derive(Debug)]
pub struct HttpReply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl HttpReply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// The JSON-RPC message of the body, plain JSON or the last SSE `data:`.
    pub fn message(&self) -> Value {
        let data = self
            .body
            .lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|data| !data.is_empty());
        let text = data.unwrap_or(&self.body);
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
}

impl McpHttp {
    pub fn start(server: &TestServer, token: &str, env: &[(&str, &str)]) -> McpHttp {
        let mut all_env = vec![
            ("IGGY_MCP_TRANSPORT", "http"),
            ("IGGY_MCP_HTTP_ADDRESS", "127.0.0.1:0"),
            ("IGGY_MCP_HTTP_TOKEN", token),
        ];
        all_env.extend_from_slice(env);
        let (mut command, log) = mcp_command(server, &all_env);
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let mut mcp = McpHttp {
            child,
            address: "127.0.0.1:1".parse().unwrap(),
            path: String::new(),
            token: token.to_owned(),
            session: None,
            next_id: 1,
            log,
        };
        (mcp.address, mcp.path) = mcp.wait_for_listener();
        mcp
    }

    pub fn log(&self) -> String {
        self.log.read()
    }

    /// Reads `listening on http://ADDR/PATH` from the log.
    fn wait_for_listener(&mut self) -> (SocketAddr, String) {
        let deadline = Instant::now() + REPLY_TIMEOUT;
        loop {
            let log = self.log();
            let url = log
                .lines()
                .find_map(|line| line.split("listening on http://").nth(1))
                .and_then(|rest| rest.split_whitespace().next());
            if let Some(url) = url {
                let (address, path) = url.split_at(url.find('/').unwrap());
                return (address.parse().unwrap(), path.to_owned());
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("iggy-mcp exited with {status}:\n{log}");
            }
            assert!(Instant::now() < deadline, "iggy-mcp did not listen:\n{log}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A POST of `body` with the given Authorization value (or none).
    pub fn post(&self, authorization: Option<&str>, body: &Value) -> HttpReply {
        let mut headers = vec![
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "Accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
            (
                "MCP-Protocol-Version".to_owned(),
                PROTOCOL_VERSION.to_owned(),
            ),
        ];
        if let Some(value) = authorization {
            headers.push(("Authorization".to_owned(), value.to_owned()));
        }
        if let Some(session) = &self.session {
            headers.push(("Mcp-Session-Id".to_owned(), session.clone()));
        }
        http_exchange(
            self.address,
            "POST",
            &self.path,
            &headers,
            &body.to_string(),
        )
    }

    fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let reply = self.post(Some(&self.bearer()), &body);
        assert_eq!(reply.status, 200, "{method}: {reply:?}\n{}", self.log());
        let message = reply.message();
        assert_eq!(message["id"], json!(id), "{message}");
        message
    }

    pub fn initialize(&mut self) -> Value {
        let body = json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()
        });
        let reply = self.post(Some(&self.bearer()), &body);
        assert_eq!(reply.status, 200, "initialize: {reply:?}\n{}", self.log());
        self.session = reply.header("mcp-session-id").map(str::to_owned);
        let notification = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        let accepted = self.post(Some(&self.bearer()), &notification);
        assert_eq!(accepted.status, 202, "{accepted:?}");
        reply.message()
    }

    pub fn call(&mut self, tool: &str, arguments: Value) -> ToolReply {
        let response = self.request(
            "tools/call",
            json!({ "name": tool, "arguments": arguments }),
        );
        tool_reply(&response)
    }
}

impl Drop for McpHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`).
pub fn http_exchange(
    address: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: &str,
) -> HttpReply {
    let mut stream = TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> HttpReply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete HTTP head");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(name, value)| name == "transfer-encoding" && value.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    HttpReply {
        status: status.parse().unwrap(),
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    loop {
        let (size_line, rest) = body.split_once("\r\n").expect("a chunk size line");
        let size = usize::from_str_radix(size_line.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
}

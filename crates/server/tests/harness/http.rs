//! A minimal raw HTTP/1.1 client (plain or over TLS) for header and status
//! checks the SDK hides: one request per connection, read to the end.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

pub struct RawResponse {
    pub status: u16,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// The sorted `name` fields of a JSON array body (a stream list).
    pub fn sorted_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// The clients `GET /clients` on `addr` lists with transport HTTP (a node
/// lists its own sessions).
pub fn http_clients(addr: SocketAddr, token: &str) -> Vec<serde_json::Value> {
    let response = request(addr, "GET", "/clients", Some(token), None);
    assert_eq!(response.status, 200, "{}", response.text());
    response
        .json()
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["transport"] == "HTTP")
        .cloned()
        .collect()
}

/// The `client_id`s of `http_clients`.
pub fn http_client_ids(addr: SocketAddr, token: &str) -> Vec<u64> {
    http_clients(addr, token)
        .iter()
        .map(|c| c["client_id"].as_u64().unwrap())
        .collect()
}

/// Sends one request; `token` becomes the bearer.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> RawResponse {
    request_with(addr, method, path, &[], token, body)
}

/// `request` with extra headers.
pub fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    token: Option<&str>,
    body: Option<&[u8]>,
) -> RawResponse {
    let head = head(addr, method, path, extra, token, body);
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    exchange(&mut stream, &head, body)
}

/// `request` over TLS configured by `tls`; the server's certificate must
/// name `addr`'s IP.
pub fn request_tls(
    tls: &Arc<rustls::ClientConfig>,
    addr: SocketAddr,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&[u8]>,
) -> RawResponse {
    let head = head(addr, method, path, &[], token, body);
    let socket = TcpStream::connect(addr).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let session = rustls::ClientConnection::new(tls.clone(), name).unwrap();
    exchange(&mut rustls::StreamOwned::new(session, socket), &head, body)
}

fn head(
    addr: SocketAddr,
    method: &str,
    path: &str,
    extra: &[(&str, &str)],
    token: Option<&str>,
    body: Option<&[u8]>,
) -> String {
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    head
}

/// Writes one request and reads its answer to the end of the connection.
fn exchange(stream: &mut (impl Read + Write), head: &str, body: Option<&[u8]>) -> RawResponse {
    stream.write_all(head.as_bytes()).unwrap();
    if let Some(body) = body {
        // The server may answer (413) and close before reading it all.
        let _ = stream.write_all(body);
    }
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse(&raw)
}

fn parse(raw: &[u8]) -> RawResponse {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete response head");
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    if headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"))
    {
        body = dechunk(&body);
    }
    RawResponse {
        status,
        headers,
        body,
    }
}

fn dechunk(mut data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let Some(end) = data.windows(2).position(|w| w == b"\r\n") else {
            return out;
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&data[..end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&data[end + 2..end + 2 + size]);
        data = &data[end + 2 + size + 2..];
    }
}

/// Logs in as root and returns the access token.
pub fn root_token(addr: SocketAddr) -> String {
    let body = format!(
        r#"{{"username":"{}","password":"{}"}}"#,
        super::ROOT_USERNAME,
        super::ROOT_PASSWORD
    );
    let response = request(addr, "POST", "/users/login", None, Some(body.as_bytes()));
    assert_eq!(response.status, 200, "{}", response.text());
    response.json()["access_token"]["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

//! The released Python SDK (`apache-iggy` 0.9.0) drives the server through
//! `tests/python/sdk_smoke.py`. The test installs the package with pip when
//! it is missing; a machine without Python, or without access to PyPI,
//! reports that it skipped (and fails under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::path::Path;
use std::process::Command;

use harness::{ServerOptions, TestServer, Workdir};

const PACKAGE: &str = "apache-iggy==0.9.0";

fn python_has_sdk() -> bool {
    Command::new("python3")
        .args(["-c", "import apache_iggy"])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn the_python_sdk_works_end_to_end() {
    if Command::new("python3").arg("--version").output().is_err() {
        harness::skip("python3 is not installed");
        return;
    }
    if !python_has_sdk() {
        let installed = Command::new("python3")
            .args(["-m", "pip", "install", "--quiet", PACKAGE])
            .status()
            .is_ok_and(|s| s.success());
        if !installed || !python_has_sdk() {
            harness::skip(&format!(
                "cannot install {PACKAGE} with pip (no network to PyPI?)"
            ));
            return;
        }
    }
    let workdir = Workdir::new();
    let server = TestServer::start(&workdir, &ServerOptions::default());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/sdk_smoke.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(server.tcp().to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("OK"),
        "the Python SDK scenario failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

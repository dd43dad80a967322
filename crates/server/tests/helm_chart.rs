//! The Helm chart at dist/helm/iggy, without a cluster or the helm binary:
//! `scripts/render_helm_chart.py` renders its templates with a Go
//! text/template implementation carrying the sprig functions (missing keys
//! are errors), every document is parsed as YAML, and the kinds, ports,
//! protocols, probes and wiring are checked here. yamllint checks the
//! chart's own YAML, the rendered manifests and docker-compose.yml.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod harness;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const PASSWORD_VALUES: &str = "auth: {rootPassword: s3cret}\n";
const MONITORED_VALUES: &str = "auth: {rootPassword: s3cret}\n\
     persistence: {enabled: false}\n\
     metrics: {serviceMonitor: {enabled: true, tokenSecret: {name: iggy-metrics}}}\n";

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chart_dir() -> PathBuf {
    repository_root().join("dist/helm/iggy")
}

/// False (after a skip message, or a failure under CI) when the renderer
/// or yamllint is missing.
fn tools_present() -> bool {
    let renderer = Command::new("python3")
        .args(["-c", "import go_template, yaml"])
        .output()
        .is_ok_and(|o| o.status.success());
    let yamllint = Command::new("yamllint").arg("--version").output().is_ok();
    if renderer && yamllint {
        return true;
    }
    harness::skip("py-go-template or yamllint is missing (scripts/install-lint-tools.sh)");
    false
}

/// Renders `chart` with `values` over its values.yaml; `Err` carries the
/// renderer's message.
fn render(chart: &Path, values: &str, out_dir: Option<&Path>) -> Result<Vec<Value>, String> {
    let scratch = tempfile::tempdir().unwrap();
    let values_file = scratch.path().join("values.yaml");
    std::fs::write(&values_file, values).unwrap();
    let mut command = Command::new("python3");
    command
        .arg(repository_root().join("scripts/render_helm_chart.py"))
        .arg(chart)
        .arg("--values")
        .arg(&values_file)
        .args(["--release", "prod", "--namespace", "streaming"]);
    if let Some(dir) = out_dir {
        command.arg("--out-dir").arg(dir);
    }
    let output = command.output().unwrap();
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let rendered: Vec<Value> = serde_json::from_slice(&output.stdout).unwrap();
    Ok(rendered
        .into_iter()
        .map(|r| r["document"].clone())
        .collect())
}

fn kinds(documents: &[Value]) -> Vec<String> {
    let mut kinds: Vec<String> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap().to_owned())
        .collect();
    kinds.sort();
    kinds
}

fn find<'a>(documents: &'a [Value], kind: &str, name: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}

fn ports(list: &Value, port_key: &str) -> Vec<(String, u64, String)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                p[port_key].as_u64().unwrap(),
                p["protocol"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn env_value<'a>(container: &'a Value, name: &str) -> &'a Value {
    container["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no env {name}"))
}

fn expected_ports() -> Vec<(String, u64, String)> {
    [
        ("tcp", 8090, "TCP"),
        ("quic", 8080, "UDP"),
        ("http", 3000, "TCP"),
        ("websocket", 8092, "TCP"),
    ]
    .iter()
    .map(|(n, p, t)| ((*n).to_owned(), *p, (*t).to_owned()))
    .collect()
}

#[test]
fn given_root_password_when_rendering_should_produce_the_server_with_its_services() {
    if !tools_present() {
        return;
    }
    let docs = render(&chart_dir(), PASSWORD_VALUES, None).unwrap();
    assert_eq!(
        kinds(&docs),
        ["Secret", "Service", "Service", "StatefulSet"]
    );
    let service = find(&docs, "Service", "prod-iggy");
    assert_eq!(ports(&service["spec"]["ports"], "port"), expected_ports());
    let set = find(&docs, "StatefulSet", "prod-iggy");
    assert_eq!(set["spec"]["replicas"], 1);
    assert_eq!(set["spec"]["serviceName"], "prod-iggy-headless");
    find(&docs, "Service", "prod-iggy-headless");
    let container = &set["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        ports(&container["ports"], "containerPort"),
        expected_ports()
    );
    for probe in ["startupProbe", "readinessProbe", "livenessProbe"] {
        assert_eq!(container[probe]["httpGet"]["path"], "/ping", "{probe}");
        assert_eq!(container[probe]["httpGet"]["port"], "http", "{probe}");
    }
    assert_eq!(
        env_value(container, "IGGY_NODE_ADVERTISED_ADDRESS")["value"],
        "prod-iggy.streaming.svc.cluster.local",
        "the client Service's DNS name"
    );
    for (variable, port) in [
        ("IGGY_TCP_ADDRESS", 8090),
        ("IGGY_QUIC_ADDRESS", 8080),
        ("IGGY_HTTP_ADDRESS", 3000),
        ("IGGY_WEBSOCKET_ADDRESS", 8092),
    ] {
        assert_eq!(
            env_value(container, variable)["value"],
            format!("0.0.0.0:{port}")
        );
    }
    let secret = find(&docs, "Secret", "prod-iggy-root");
    assert_eq!(secret["data"]["password"], "czNjcmV0", "base64 of s3cret");
    let password = &env_value(container, "IGGY_ROOT_PASSWORD")["valueFrom"]["secretKeyRef"];
    assert_eq!(password["name"], "prod-iggy-root");
    let claims = &set["spec"]["volumeClaimTemplates"][0];
    assert_eq!(claims["metadata"]["name"], "data");
    assert_eq!(claims["spec"]["resources"]["requests"]["storage"], "20Gi");
    let mount = &container["volumeMounts"][0];
    assert_eq!(mount["mountPath"], "/var/lib/iggy/data");
    let security = &set["spec"]["template"]["spec"]["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
}

#[test]
fn given_service_monitor_without_persistence_when_rendering_should_scrape_with_the_bearer() {
    if !tools_present() {
        return;
    }
    let docs = render(&chart_dir(), MONITORED_VALUES, None).unwrap();
    assert_eq!(
        kinds(&docs),
        [
            "Secret",
            "Service",
            "Service",
            "ServiceMonitor",
            "StatefulSet"
        ]
    );
    let monitor = find(&docs, "ServiceMonitor", "prod-iggy");
    let endpoint = &monitor["spec"]["endpoints"][0];
    assert_eq!(endpoint["port"], "http");
    assert_eq!(endpoint["path"], "/metrics");
    assert_eq!(endpoint["authorization"]["type"], "Bearer");
    assert_eq!(
        endpoint["authorization"]["credentials"]["name"],
        "iggy-metrics"
    );
    assert_eq!(endpoint["authorization"]["credentials"]["key"], "token");
    let service = find(&docs, "Service", "prod-iggy");
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        service["spec"]["selector"]
    );
    let set = find(&docs, "StatefulSet", "prod-iggy");
    assert!(set["spec"].get("volumeClaimTemplates").is_none());
    let volume = &set["spec"]["template"]["spec"]["volumes"][0];
    assert_eq!(volume["name"], "data");
    assert!(volume["emptyDir"].is_object());
}

#[test]
fn given_no_root_password_when_rendering_should_refuse() {
    if !tools_present() {
        return;
    }
    let error = render(&chart_dir(), "{}\n", None).unwrap_err();
    assert!(error.contains("auth.rootPassword"), "{error}");
}

#[test]
fn given_template_referencing_a_missing_value_when_rendering_should_fail() {
    if !tools_present() {
        return;
    }
    let copy = tempfile::tempdir().unwrap();
    let chart = copy.path().join("iggy");
    std::fs::create_dir_all(chart.join("templates")).unwrap();
    for entry in std::fs::read_dir(chart_dir().join("templates")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            chart.join("templates").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::fs::copy(chart_dir().join("Chart.yaml"), chart.join("Chart.yaml")).unwrap();
    let values = std::fs::read_to_string(chart_dir().join("values.yaml")).unwrap();
    let without = values.replace("  websocket: 8092\n", "");
    assert_ne!(without, values, "values.yaml names ports.websocket");
    std::fs::write(chart.join("values.yaml"), without).unwrap();
    let error = render(&chart, PASSWORD_VALUES, None).unwrap_err();
    assert!(error.contains("websocket"), "{error}");
}

#[test]
fn given_chart_and_compose_file_when_linted_with_yamllint_should_pass() {
    if !tools_present() {
        return;
    }
    let rendered = tempfile::tempdir().unwrap();
    for (name, values) in [
        ("default", PASSWORD_VALUES),
        ("monitored", MONITORED_VALUES),
    ] {
        render(&chart_dir(), values, Some(&rendered.path().join(name))).unwrap();
    }
    let root = repository_root();
    let output = Command::new("yamllint")
        .arg("--strict")
        .arg("-c")
        .arg(root.join("dist/yamllint.yaml"))
        .arg(chart_dir().join("Chart.yaml"))
        .arg(chart_dir().join("values.yaml"))
        .arg(root.join("docker-compose.yml"))
        .arg(rendered.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "yamllint:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

//! Report tests: figures from synthetic samples, and each output format.

use super::*;
use crate::args::parse_for_test;
use crate::stats::Sample;

fn plan_of(line: &str) -> Plan {
    Plan::from_cli(&parse_for_test(line).expect("parses")).expect("valid plan")
}

fn sample(finished_at_us: u64, latency_us: u64) -> Sample {
    Sample {
        finished_at_us,
        latency_us,
        messages: 100,
        payload_bytes: 100_000,
    }
}

/// Two producers and two consumers, measured from 1 s, each busy for 2 s.
fn outcome(plan: &Plan) -> PhaseOutcome {
    let reports = plan
        .actors
        .iter()
        .map(|actor| ActorReport {
            actor: actor.clone(),
            stream_name: format!("bench-{}", actor.stream_index + 1),
            samples: vec![sample(1_500_000, 1_000), sample(3_000_000, 3_000)],
            finished_us: 3_000_000,
        })
        .collect();
    PhaseOutcome {
        reports,
        measure_from_us: 1_000_000,
    }
}

#[test]
fn given_samples_when_building_should_compute_per_actor_and_role_figures() {
    let plan = plan_of("pinned-producer-and-consumer --producers 2 --warmup-time 1s");
    let report = BenchReport::build(&plan, &outcome(&plan));
    assert_eq!(report.actors.len(), 4);
    let first = &report.actors[0].figures;
    assert_eq!(first.messages, 200);
    assert_eq!(first.window_s, 2.0);
    assert_eq!(first.mb_per_sec, 0.1);
    assert_eq!(first.messages_per_sec, 100.0);
    let latency = first.latency.expect("samples exist");
    assert_eq!((latency.p50_us, latency.max_us), (1_000, 3_000));
    assert_eq!(report.totals.len(), 2);
    assert_eq!(report.totals[0].role, RoleKind::Producer);
    assert_eq!(report.totals[0].actors, 2);
    assert_eq!(report.totals[0].figures.mb_per_sec, 0.2);
    assert_eq!(report.totals[1].role, RoleKind::Consumer);
}

#[test]
fn given_report_when_rendering_json_should_parse_back_with_every_section() {
    let plan = plan_of("pinned-producer --producers 2");
    let report = BenchReport::build(&plan, &outcome(&plan));
    let text = render_json(&report).expect("serialises");
    let value: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!(value["benchmark"], "pinned-producer");
    assert_eq!(value["params"]["transport"], "tcp");
    assert_eq!(value["params"]["batches_per_actor"], 1000);
    assert_eq!(value["actors"][0]["role"], "producer");
    assert_eq!(value["actors"][0]["partition"], 0);
    assert_eq!(value["actors"][0]["latency"]["p9999_us"], 3000);
    assert_eq!(value["totals"][0]["messages"], 400);
    assert!(value.get("series").is_none());
}

#[test]
fn given_actor_without_samples_when_rendering_json_should_give_null_latency() {
    let plan = plan_of("balanced-consumer-group --consumers 1");
    let mut outcome = outcome(&plan);
    outcome.reports[0].samples.clear();
    outcome.reports[0].finished_us = 0;
    let report = BenchReport::build(&plan, &outcome);
    let value: serde_json::Value =
        serde_json::from_str(&render_json(&report).expect("serialises")).expect("valid JSON");
    assert!(value["actors"][0]["latency"].is_null());
    assert!(value["actors"][0]["partition"].is_null());
    assert_eq!(value["actors"][0]["mb_per_sec"], 0.0);
}

#[test]
fn given_report_when_rendering_csv_should_write_header_and_one_row_per_second() {
    let plan = plan_of("pinned-producer --producers 2");
    let report = BenchReport::build(&plan, &outcome(&plan));
    let csv = render_csv(&report);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], CSV_HEADER);
    assert_eq!(lines[0], "elapsed_s,role,mb_per_s,msgs_per_s,p50_us,p99_us");
    // Samples end 0.5 s and 2 s after measuring began: seconds 1, 2 (empty), 3.
    assert_eq!(lines[1], "1,producer,0.200,200,1000,1000");
    assert_eq!(lines[2], "2,producer,0.000,0,,");
    assert_eq!(lines[3], "3,producer,0.200,200,3000,3000");
    assert_eq!(lines.len(), 4);
}

#[test]
fn given_report_when_rendering_table_should_list_actors_then_totals_in_aligned_columns() {
    let plan = plan_of("end-to-end-producing-consumer --producers 2");
    let report = BenchReport::build(&plan, &outcome(&plan));
    let table = render_table(&report);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("end-to-end-producing-consumer over tcp 127.0.0.1:8090"));
    assert!(lines[2].starts_with("actor"));
    assert!(lines[2].ends_with("max ms"));
    assert!(lines[3].starts_with("1 "));
    assert!(lines[3].contains("end-to-end"));
    assert!(lines[3].ends_with("3.000"));
    assert!(lines[0].ends_with("of 1000 B per actor"));
    assert!(lines[5].starts_with("total"));
    // Every data row is as wide as the header: the columns line up.
    assert!(lines[3..6].iter().all(|line| line.len() == lines[2].len()));
    assert!(lines[7].starts_with("MB/s counts payload bytes"));
}

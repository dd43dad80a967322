//! Plan tests: defaults, placement of actors, batch arithmetic and every rejected combination.

use super::*;
use crate::args::parse_for_test;

fn plan_of(line: &str) -> Result<Plan, PlanError> {
    let cli = parse_for_test(line).expect("the command line parses");
    Plan::from_cli(&cli)
}

fn placements(plan: &Plan) -> Vec<(u32, usize, Role)> {
    plan.actors
        .iter()
        .map(|actor| (actor.id.0, actor.stream_index, actor.role))
        .collect()
}

#[test]
fn given_pinned_producer_defaults_when_planning_should_give_each_producer_its_own_stream() {
    let plan = plan_of("pinned-producer").expect("valid");
    assert_eq!(plan.actors.len(), DEFAULT_ACTORS as usize);
    assert_eq!(plan.streams.len(), DEFAULT_ACTORS as usize);
    assert!(plan.streams.iter().all(|stream| stream.partitions == 1));
    assert_eq!(plan.streams[0].name, "bench-1");
    assert_eq!(plan.workload.batches_per_actor, DEFAULT_MESSAGE_BATCHES);
    for (index, actor) in plan.actors.iter().enumerate() {
        assert_eq!(actor.stream_index, index);
        assert_eq!(actor.role, Role::Producer(Placement::Partition(0)));
    }
    assert!(plan.seeders.is_empty());
    assert!(!plan.consumer_group);
}

#[test]
fn given_one_stream_when_planning_pinned_should_pin_actors_to_partitions() {
    let plan = plan_of("pinned-producer --producers 3 --streams 1").expect("valid");
    assert_eq!(plan.streams.len(), 1);
    assert_eq!(plan.streams[0].partitions, 3);
    let partitions: Vec<Role> = plan.actors.iter().map(|actor| actor.role).collect();
    assert_eq!(
        partitions,
        vec![
            Role::Producer(Placement::Partition(0)),
            Role::Producer(Placement::Partition(1)),
            Role::Producer(Placement::Partition(2)),
        ]
    );
}

#[test]
fn given_too_few_slots_when_planning_pinned_should_fail() {
    let error = plan_of("pinned-producer --producers 4 --streams 2 --partitions 1").unwrap_err();
    assert_eq!(
        error,
        PlanError::TooFewSlots {
            actors: 4,
            streams: 2,
            partitions: 1,
            slots: 2
        }
    );
}

#[test]
fn given_more_streams_than_actors_when_planning_should_fail() {
    let error = plan_of("balanced-producer --producers 2 --streams 3").unwrap_err();
    assert_eq!(
        error,
        PlanError::IdleStreams {
            streams: 3,
            actors: 2
        }
    );
}

#[test]
fn given_pinned_consumer_when_planning_should_seed_exactly_what_each_consumer_reads() {
    let plan = plan_of("pinned-consumer --consumers 2 --message-batches 10 --messages-per-batch 5")
        .expect("valid");
    assert_eq!(
        placements(&plan),
        vec![
            (
                1,
                0,
                Role::Consumer(Placement::Partition(0), ConsumeUntil::Messages(50))
            ),
            (
                2,
                1,
                Role::Consumer(Placement::Partition(0), ConsumeUntil::Messages(50))
            ),
        ]
    );
    assert_eq!(plan.seeders.len(), 2);
    assert_eq!(
        plan.seeders[1].role,
        Role::Producer(Placement::Partition(0))
    );
    assert_eq!(plan.seeders[1].stream_index, 1);
}

#[test]
fn given_reuse_streams_when_planning_consumers_should_not_seed() {
    let plan = plan_of("pinned-consumer --reuse-streams").expect("valid");
    assert!(plan.seeders.is_empty());
    assert!(plan.reuse_streams);
}

#[test]
fn given_producer_and_consumer_when_planning_should_pair_consumer_n_with_producer_n() {
    let plan = plan_of("pinned-producer-and-consumer --producers 3 --consumers 2").expect("valid");
    let consumers: Vec<_> = placements(&plan).into_iter().skip(3).collect();
    assert_eq!(
        consumers,
        vec![
            (
                4,
                0,
                Role::Consumer(
                    Placement::Partition(0),
                    ConsumeUntil::ProducerDone(ActorId(1))
                )
            ),
            (
                5,
                1,
                Role::Consumer(
                    Placement::Partition(0),
                    ConsumeUntil::ProducerDone(ActorId(2))
                )
            ),
        ]
    );
    assert!(plan.seeders.is_empty());
}

#[test]
fn given_more_consumers_than_producers_when_planning_pairs_should_fail() {
    let error = plan_of("pinned-producer-and-consumer --producers 1 --consumers 2").unwrap_err();
    assert_eq!(
        error,
        PlanError::ConsumersWithoutProducer {
            consumers: 2,
            producers: 1
        }
    );
}

#[test]
fn given_balanced_producer_defaults_when_planning_should_share_one_stream() {
    let plan = plan_of("balanced-producer --producers 6").expect("valid");
    assert_eq!(plan.streams.len(), 1);
    assert_eq!(plan.streams[0].partitions, 6);
    assert!(
        plan.actors
            .iter()
            .all(|actor| actor.role == Role::Producer(Placement::Balanced))
    );
}

#[test]
fn given_consumer_group_on_two_streams_when_planning_should_split_the_target_by_members() {
    let plan = plan_of(
        "balanced-consumer-group --consumers 3 --streams 2 --message-batches 2 \
         --messages-per-batch 10",
    )
    .expect("valid");
    assert!(plan.consumer_group);
    assert_eq!(plan.streams[0].partitions, 2);
    let targets: Vec<_> = placements(&plan);
    assert_eq!(
        targets,
        vec![
            (
                1,
                0,
                Role::Consumer(Placement::Balanced, ConsumeUntil::GroupDone(40))
            ),
            (
                2,
                1,
                Role::Consumer(Placement::Balanced, ConsumeUntil::GroupDone(20))
            ),
            (
                3,
                0,
                Role::Consumer(Placement::Balanced, ConsumeUntil::GroupDone(40))
            ),
        ]
    );
    assert!(
        plan.seeders
            .iter()
            .all(|seeder| seeder.role == Role::Producer(Placement::Balanced))
    );
}

#[test]
fn given_group_larger_than_partitions_when_planning_should_fail() {
    let error = plan_of("balanced-consumer-group --consumers 4 --partitions 2").unwrap_err();
    assert_eq!(
        error,
        PlanError::TooFewGroupPartitions {
            consumers: 4,
            partitions: 2
        }
    );
}

#[test]
fn given_end_to_end_when_planning_should_pin_one_actor_per_stream() {
    let plan = plan_of("end-to-end-producing-consumer --producers 2").expect("valid");
    assert_eq!(
        placements(&plan),
        vec![(1, 0, Role::EndToEnd(0)), (2, 1, Role::EndToEnd(0))]
    );
    let plan = plan_of("end-to-end-producing-consumer --consumers 3").expect("valid");
    assert_eq!(plan.actors.len(), 3);
    let error = plan_of("end-to-end-producing-consumer --producers 2 --consumers 3").unwrap_err();
    assert!(matches!(error, PlanError::EndToEndCountsDisagree { .. }));
}

#[test]
fn given_total_data_when_planning_should_round_batches_up_per_actor() {
    // 1 GB over 4 producers, 1000 x 1000 B batches: 250 batches each.
    let plan = plan_of("pinned-producer --total-data 1GB").expect("valid");
    assert_eq!(plan.workload.batches_per_actor, 250);
    // 1 MB over 3 producers with 1000 x 1000 B batches rounds up to 1.
    let plan = plan_of("pinned-producer --producers 3 --total-data 1MB").expect("valid");
    assert_eq!(plan.workload.batches_per_actor, 1);
    // A range counts its mean: 1500 B x 100 messages x 2 consumers = 300 kB a round.
    let plan = plan_of(
        "pinned-consumer --consumers 2 --message-size 1000..2000 --messages-per-batch 100 \
         --total-data 3MB",
    )
    .expect("valid");
    assert_eq!(plan.workload.batches_per_actor, 10);
}

#[test]
fn given_batches_and_total_data_when_planning_should_fail() {
    let error = plan_of("pinned-producer --message-batches 5 --total-data 1GB").unwrap_err();
    assert_eq!(error, PlanError::BatchesAndTotalData);
}

#[test]
fn given_bad_sizes_or_zeros_when_planning_should_fail() {
    assert!(matches!(
        plan_of("pinned-producer --message-size 2000..1000").unwrap_err(),
        PlanError::BadSizeRange { .. }
    ));
    assert!(matches!(
        plan_of("pinned-producer --message-size 0").unwrap_err(),
        PlanError::BadSizeRange { .. }
    ));
    assert!(matches!(
        plan_of("pinned-producer --message-size 100MB").unwrap_err(),
        PlanError::MessageTooLarge { .. }
    ));
    assert_eq!(
        plan_of("pinned-producer --producers 0").unwrap_err(),
        PlanError::Zero { flag: "producers" }
    );
    assert_eq!(
        plan_of("pinned-producer --messages-per-batch 0").unwrap_err(),
        PlanError::Zero {
            flag: "messages-per-batch"
        }
    );
}

#[test]
fn given_a_flag_the_benchmark_ignores_when_planning_should_fail() {
    assert_eq!(
        plan_of("pinned-producer --consumers 2").unwrap_err(),
        PlanError::UnusedFlag {
            benchmark: "pinned-producer",
            flag: "consumers"
        }
    );
    assert!(plan_of("balanced-consumer-group --producers 2").is_err());
}

#[test]
fn given_transports_when_planning_should_pick_default_addresses() {
    assert_eq!(
        plan_of("pinned-producer")
            .expect("valid")
            .connection
            .address,
        "127.0.0.1:8090"
    );
    assert_eq!(
        plan_of("pinned-producer --transport http")
            .expect("valid")
            .connection
            .address,
        "http://127.0.0.1:3000"
    );
    assert_eq!(
        plan_of("pinned-producer --transport http --server-address 10.0.0.1:3000")
            .expect("valid")
            .connection
            .address,
        "http://10.0.0.1:3000"
    );
}

#[test]
fn given_tls_flags_when_planning_should_accept_them_only_on_tcp_and_websocket() {
    assert_eq!(
        plan_of("pinned-producer").expect("valid").connection.tls,
        None
    );
    let tls = plan_of("pinned-producer --tls --tls-ca-file ca.pem --tls-domain example.com")
        .expect("valid")
        .connection
        .tls
        .expect("TLS is on");
    assert_eq!(tls.domain, "example.com");
    assert_eq!(tls.ca_file.as_deref(), Some("ca.pem"));
    assert!(tls.verify);
    let tls = plan_of("pinned-producer --transport websocket --tls --tls-no-verify")
        .expect("valid")
        .connection
        .tls
        .expect("TLS is on");
    assert!(!tls.verify);
    assert_eq!(
        plan_of("pinned-producer --transport quic --tls").unwrap_err(),
        PlanError::TlsTransport
    );
    assert_eq!(
        plan_of("pinned-producer --transport http --tls").unwrap_err(),
        PlanError::TlsTransport
    );
    assert_eq!(
        plan_of("pinned-producer --tls-no-verify").unwrap_err(),
        PlanError::TlsFlagWithoutTls {
            flag: "tls-no-verify"
        }
    );
}

#[test]
fn given_producer_and_consumer_when_computing_expected_bytes_should_count_both_sides() {
    let plan = plan_of(
        "pinned-producer-and-consumer --producers 2 --message-batches 3 \
         --messages-per-batch 10 --message-size 100",
    )
    .expect("valid");
    // 4 actors x 3 batches x 10 messages x 100 B.
    assert_eq!(plan.expected_bytes(plan.actors.len()), 12_000.0);
}

#[test]
fn given_plan_when_describing_for_dry_run_should_list_layout_and_every_actor() {
    let plan = plan_of(
        "pinned-producer-and-consumer --producers 2 --consumers 1 --message-batches 10 \
         --messages-per-batch 100 --message-size 1000",
    )
    .expect("valid");
    let text = plan.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "pinned-producer-and-consumer: 3 actors on 2 streams x 1 partitions (topic `bench-topic`)"
    );
    assert_eq!(
        lines[1],
        "  10 batches x 100 messages of 1000 B per actor, ~3.00 MB measured"
    );
    assert_eq!(lines[2], "  actor 1   bench-1      producer  partition 0");
    assert_eq!(
        lines[4],
        "  actor 3   bench-1      consumer  partition 0, until all of actor 1"
    );
    assert_eq!(lines.len(), 5);
}

#[test]
fn given_too_many_actors_when_planning_should_fail() {
    assert_eq!(
        plan_of("pinned-producer-and-consumer --producers 1000 --consumers 1000").unwrap_err(),
        PlanError::TooManyActors {
            actors: 2000,
            limit: MAX_ACTORS
        }
    );
}

use super::*;

fn entry(key: &str, value: OptionValue) -> OptionEntry {
    OptionEntry::new(key, value)
}

fn text(value: &str) -> OptionValue {
    OptionValue::String(value.to_owned())
}

fn create(entries: &[OptionEntry]) -> Result<TopicOptions, u32> {
    TopicOptions::resolve_create(entries, 1).map_err(|e| e.code())
}

#[test]
fn given_no_options_when_resolving_should_use_documented_defaults() {
    let options = TopicOptions::resolve_create(&[], 3).expect("defaults are valid");
    assert_eq!(options.segment_size_bytes, 1 << 30);
    assert_eq!(options.messages_required_to_save, 1024);
    assert_eq!(options.size_of_messages_required_to_save_bytes, 1 << 20);
    assert_eq!(options.durability, Durability::Replicated);
    assert_eq!(options.consumer_offset_durability, Durability::Replicated);
    assert_eq!(options.message_expiry, MessageExpiry::Never);
    assert_eq!(options.max_topic_size, MaxTopicSize::Unlimited);
    assert_eq!(options.compression, CompressionAlgorithm::None);
    assert!(!options.preallocate_segments);
}

#[test]
fn given_sdk_default_durability_keys_when_resolving_should_accept_any_case() {
    let options = create(&[
        entry(KEY_OFFSET_DURABILITY, text("replicated")),
        entry(KEY_DURABILITY, text("Persisted")),
    ])
    .expect("SDK defaults are accepted");
    assert_eq!(options.durability, Durability::Persisted);
    assert_eq!(options.consumer_offset_durability, Durability::Replicated);
}

#[test]
fn given_zero_values_when_resolving_should_mean_server_default() {
    let options = create(&[
        entry(KEY_MESSAGE_EXPIRY, OptionValue::U64(0)),
        entry(KEY_MAX_TOPIC_SIZE, OptionValue::U64(0)),
        entry(KEY_SEGMENT_SIZE, OptionValue::U64(0)),
    ])
    .expect("zeros are defaults");
    assert_eq!(options, TopicOptions::default());
    let never = create(&[entry(KEY_MESSAGE_EXPIRY, OptionValue::U64(u64::MAX))]).expect("never");
    assert_eq!(never.message_expiry, MessageExpiry::Never);
}

#[test]
fn given_human_strings_when_resolving_should_parse_units() {
    let options = create(&[
        entry(KEY_MESSAGE_EXPIRY, text("7 days")),
        entry(KEY_MAX_TOPIC_SIZE, text("2 GiB")),
        entry(KEY_SEGMENT_SIZE, text("134217728")),
        entry(KEY_SIZE_REQUIRED_TO_SAVE, text("64 KiB")),
        entry(KEY_PREALLOCATE, text("true")),
        entry(KEY_COMPRESSION, text("gzip")),
    ])
    .expect("valid strings");
    assert_eq!(
        options.message_expiry,
        MessageExpiry::AfterMicros(7 * 86_400 * 1_000_000)
    );
    assert_eq!(options.max_topic_size, MaxTopicSize::Bytes(2 << 30));
    assert_eq!(options.segment_size_bytes, 128 << 20);
    assert_eq!(options.size_of_messages_required_to_save_bytes, 64 << 10);
    assert!(options.preallocate_segments);
    assert_eq!(options.compression, CompressionAlgorithm::Gzip);
}

#[test]
fn given_segment_size_outside_catalog_when_resolving_should_return_invalid_value() {
    for bad in [(1 << 20) - 512, (1 << 30) + 512, (1 << 20) + 1] {
        assert_eq!(
            create(&[entry(KEY_SEGMENT_SIZE, OptionValue::U64(bad))]),
            Err(4042),
            "{bad}"
        );
    }
    assert!(create(&[entry(KEY_SEGMENT_SIZE, OptionValue::U64((1 << 20) + 512))]).is_ok());
}

#[test]
fn given_threshold_bounds_when_resolving_should_enforce_ranges() {
    let messages = |n: u64| create(&[entry(KEY_MESSAGES_REQUIRED_TO_SAVE, OptionValue::U64(n))]);
    assert_eq!(messages(0), Err(4042));
    assert!(messages(1).is_ok());
    assert!(messages(16_777_216).is_ok());
    assert_eq!(messages(16_777_217), Err(4042));
    let size = |n: u64| create(&[entry(KEY_SIZE_REQUIRED_TO_SAVE, OptionValue::U64(n))]);
    assert!(size(1 << 30).is_ok());
    assert_eq!(size((1 << 30) + 1), Err(4042));
    assert_eq!(size(0), Err(4042));
}

#[test]
fn given_max_size_below_segment_when_resolving_should_return_invalid_topic_size() {
    let result = create(&[
        entry(KEY_SEGMENT_SIZE, OptionValue::U64(2 << 20)),
        entry(KEY_MAX_TOPIC_SIZE, OptionValue::U64(1 << 20)),
    ]);
    assert_eq!(result, Err(1019));
}

#[test]
fn given_large_preallocation_when_resolving_should_refuse_above_64_gib() {
    let entries = [entry(KEY_PREALLOCATE, OptionValue::Bool(true))];
    assert!(TopicOptions::resolve_create(&entries, 64).is_ok());
    let refused = TopicOptions::resolve_create(&entries, 65).map_err(|e| e.code());
    assert_eq!(refused, Err(4042));
}

#[test]
fn given_unknown_or_bad_keys_when_resolving_should_map_to_4041_and_4042() {
    assert_eq!(
        create(&[entry("enforce_fsync", OptionValue::Bool(true))]),
        Err(4041)
    );
    assert_eq!(create(&[entry(KEY_COMPRESSION, text("lz4"))]), Err(4042));
    assert_eq!(
        create(&[entry(KEY_DURABILITY, OptionValue::Bool(true))]),
        Err(4042)
    );
    assert_eq!(
        create(&[entry(KEY_MESSAGE_EXPIRY, OptionValue::F64(1.0))]),
        Err(4042)
    );
    assert_eq!(
        create(&[entry(KEY_MESSAGE_EXPIRY, OptionValue::I32(-1))]),
        Err(4042)
    );
    let duplicate = [
        entry(KEY_DURABILITY, text("replicated")),
        entry(KEY_DURABILITY, text("persisted")),
    ];
    assert_eq!(create(&duplicate), Err(4042));
}

#[test]
fn given_update_when_resolving_should_change_only_updatable_keys() {
    let current = TopicOptions::default();
    let updated = current
        .resolve_update(&[entry(KEY_MAX_TOPIC_SIZE, OptionValue::U64(5 << 30))], 1)
        .expect("updatable");
    assert_eq!(updated.max_topic_size, MaxTopicSize::Bytes(5 << 30));
    assert_eq!(updated.segment_size_bytes, current.segment_size_bytes);
    let refused = current.resolve_update(&[entry(KEY_SEGMENT_SIZE, OptionValue::U64(0))], 1);
    assert_eq!(refused.map_err(|e| e.code()), Err(4041));
    let too_small = current.resolve_update(&[entry(KEY_MAX_TOPIC_SIZE, OptionValue::U64(1))], 1);
    assert_eq!(too_small.map_err(|e| e.code()), Err(1019));
}

#[test]
fn given_catalog_when_listing_keys_should_be_sorted_and_all_reportable() {
    let mut sorted = TOPIC_OPTION_KEYS;
    sorted.sort_unstable();
    assert_eq!(sorted, TOPIC_OPTION_KEYS);
    let options = TopicOptions::default();
    for key in TOPIC_OPTION_KEYS {
        assert!(options.value_of(key).is_some(), "{key}");
    }
    assert_eq!(
        options.value_of(KEY_MESSAGE_EXPIRY),
        Some(OptionValue::U64(u64::MAX))
    );
}

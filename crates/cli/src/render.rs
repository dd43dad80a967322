//! Value formats shared by the commands (spec §5.7): timestamps in UTC or
//! local time, human sizes, expiry and max-size words, plurals.

use iggy::prelude::{IggyExpiry, IggyTimestamp, MaxTopicSize};

pub const TIME_FORMAT: &str = "%Y-%m-%d %H:%M:%S";
pub const TIME_FORMAT_MICROS: &str = "%Y-%m-%d %H:%M:%S%.6f";

pub fn utc(ts: IggyTimestamp) -> String {
    ts.to_utc_string(TIME_FORMAT)
}

pub fn local(ts: IggyTimestamp) -> String {
    ts.to_local_string(TIME_FORMAT)
}

/// Message expiry as tables show it (`unlimited` for never).
pub fn expiry_cell(expiry: &IggyExpiry) -> String {
    match expiry {
        IggyExpiry::NeverExpire => "unlimited".to_owned(),
        IggyExpiry::ServerDefault => "server_default".to_owned(),
        IggyExpiry::ExpireDuration(d) => d.to_string(),
    }
}

pub fn max_size_cell(size: &MaxTopicSize) -> String {
    match size {
        MaxTopicSize::Unlimited => "unlimited".to_owned(),
        MaxTopicSize::ServerDefault => "server_default".to_owned(),
        MaxTopicSize::Custom(s) => s.as_human_string(),
    }
}

/// `max topic size` in the create/update echo lines.
pub fn max_size_echo(size: &MaxTopicSize) -> String {
    max_size_cell(size)
}

/// "s" when more than one.
pub fn plural(n: u32) -> &'static str {
    if n > 1 { "s" } else { "" }
}

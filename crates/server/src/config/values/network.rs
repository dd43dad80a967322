//! Network-shaped values: listener socket addresses (`"127.0.0.1:8090"`,
//! `"[::1]:0"`; port 0 asks the OS for a free port), advertised host names
//! (an IP literal or an RFC 1123 host name, no port) and client CIDRs.

use std::fmt;
use std::net::IpAddr;

use super::ParseValueError;

const CIDR_EXPECTED: &str = "an IP network such as \"10.0.0.0/8\" or \"fd00::/8\"";
/// RFC 1123 limits a host name to 253 characters and a label to 63.
const HOST_NAME_LEN_MAX: usize = 253;
const HOST_LABEL_LEN_MAX: usize = 63;
const IPV4_PREFIX_MAX: u8 = 32;
const IPV6_PREFIX_MAX: u8 = 128;

/// Serde adapter for `SocketAddr` fields, with a message that says what a
/// listener address must look like.
pub mod socket_address {
    use std::net::SocketAddr;

    use serde::{Deserialize, Deserializer, Serializer};

    use super::ParseValueError;

    pub const EXPECTED: &str = "HOST:PORT with an IP literal host, such as \"127.0.0.1:8090\", \
         \"0.0.0.0:3000\" or \"[::1]:0\" (port 0 picks a free port)";

    pub fn parse(text: &str) -> Result<SocketAddr, ParseValueError> {
        text.trim()
            .parse()
            .map_err(|_| ParseValueError::new(text, "not a socket address", EXPECTED))
    }

    pub fn serialize<S: Serializer>(
        address: &SocketAddr,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_str(address)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<SocketAddr, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse(&text).map_err(ParseValueError::into_serde)
    }
}

/// True for an IP literal or an RFC 1123 host name (letters, digits and
/// hyphens in dot-separated labels, no leading or trailing hyphen).
pub fn is_valid_host(host: &str) -> bool {
    if host.parse::<IpAddr>().is_ok() {
        return true;
    }
    let name = host.strip_suffix('.').unwrap_or(host);
    !name.is_empty()
        && name.len() <= HOST_NAME_LEN_MAX
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= HOST_LABEL_LEN_MAX
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// An IP network: an address and a prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cidr {
    pub network: IpAddr,
    pub prefix_len: u8,
}

impl Cidr {
    pub fn parse(text: &str) -> Result<Self, ParseValueError> {
        let error = |reason: &str| ParseValueError::new(text, reason, CIDR_EXPECTED);
        let (address, prefix) = text
            .trim()
            .split_once('/')
            .ok_or_else(|| error("missing /prefix"))?;
        let network: IpAddr = address.parse().map_err(|_| error("not an IP address"))?;
        let prefix_len: u8 = prefix
            .parse()
            .map_err(|_| error("malformed prefix length"))?;
        let prefix_max = match network {
            IpAddr::V4(_) => IPV4_PREFIX_MAX,
            IpAddr::V6(_) => IPV6_PREFIX_MAX,
        };
        if prefix_len > prefix_max {
            return Err(error("prefix length too large"));
        }
        Ok(Self {
            network,
            prefix_len,
        })
    }

    /// The address with the host bits cleared, as a 128-bit integer, plus
    /// the family; used to compare networks.
    fn masked_bits(self, prefix_len: u8) -> (bool, u128) {
        let (is_v4, bits, width) = match self.network {
            IpAddr::V4(v4) => (true, u128::from(u32::from(v4)), IPV4_PREFIX_MAX),
            IpAddr::V6(v6) => (false, u128::from(v6), IPV6_PREFIX_MAX),
        };
        let host_bits = u32::from(width - prefix_len);
        let masked = bits.checked_shr(host_bits).unwrap_or(0);
        (is_v4, masked)
    }

    /// Two networks overlap when they share a family and one contains the
    /// other.
    pub fn overlaps(self, other: Self) -> bool {
        let shorter = self.prefix_len.min(other.prefix_len);
        let (family, bits) = self.masked_bits(shorter);
        let (other_family, other_bits) = other.masked_bits(shorter);
        family == other_family && bits == other_bits
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.network, self.prefix_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn given_listener_addresses_when_parsing_should_accept_ip_and_port_zero() {
        for text in [
            "127.0.0.1:8090",
            "0.0.0.0:3000",
            "[::1]:0",
            " 10.1.2.3:65535 ",
        ] {
            assert!(socket_address::parse(text).is_ok(), "{text}");
        }
        for text in ["127.0.0.1", "localhost:80", "1.2.3.4:70000", ""] {
            assert!(socket_address::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn given_hosts_when_checking_should_accept_ips_and_rfc1123_names() {
        for host in [
            "localhost",
            "iggy-1.example.com",
            "10.0.0.1",
            "::1",
            "node.local.",
        ] {
            assert!(is_valid_host(host), "{host}");
        }
        for host in [
            "",
            "-bad.example",
            "bad-.example",
            "a..b",
            "host:8090",
            "under_score",
        ] {
            assert!(!is_valid_host(host), "{host}");
        }
    }

    #[test]
    fn given_cidrs_when_comparing_should_detect_containment_per_family() {
        let cidr = |text: &str| Cidr::parse(text).expect(text);
        assert!(cidr("10.0.0.0/8").overlaps(cidr("10.1.0.0/16")));
        assert!(cidr("0.0.0.0/0").overlaps(cidr("192.168.1.7/32")));
        assert!(!cidr("10.0.0.0/8").overlaps(cidr("11.0.0.0/8")));
        assert!(!cidr("0.0.0.0/0").overlaps(cidr("::/0")));
        assert!(cidr("fd00::/8").overlaps(cidr("fd12::/16")));
        assert!(Cidr::parse("10.0.0.0/33").is_err());
        assert!(Cidr::parse("10.0.0.0").is_err());
    }
}
